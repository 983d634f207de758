package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-iptables/iptables"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/containerd"
	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/process"
)

// stopOrder lists, per node, the components in the order down stops them.
var nodeStopOrder = []string{"kubelet", "kube-proxy", "containerd", "sandbox"}

// controlPlaneStopOrder lists the control plane in the order down stops it:
// reverse phase order, the apiserver before etcd.
var controlPlaneStopOrder = []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}

// Cleanup removes everything a cluster may have left on the host, working
// from the plan (itself from the state dir) alone, as after a SIGKILLed
// supervisor: it stops the recorded processes in reverse phase order
// (removing pods through CRI first), kills orphaned shims and containers,
// unmounts what is mounted under the state dir, removes the network, the
// iptables chains the kubelet and kube-proxy made in the host's namespace,
// the nodes' cgroups, the kubeconfig context, and restores the sysctls the
// kubelets changed. The state dir itself (PKI, etcd data) is kept.
// Idempotent; errors are joined and everything is attempted.
func Cleanup(ctx context.Context, plan *Plan, log *slog.Logger) error {
	// The host-wide resources are named after the cluster: never touch
	// those of a live cluster of the same name in another state dir.
	if err := CheckName(plan); err != nil {
		return err
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, nd := range plan.Nodes {
		for _, name := range nodeStopOrder {
			if name == "containerd" {
				removePods(ctx, plan.Paths.Node(nd.Name).ContainerdSocket(), log)
			}
			add(stopRecorded(ctx, plan.Paths.Run(nd.Name, name), log))
		}
	}
	for _, name := range controlPlaneStopOrder {
		add(stopRecorded(ctx, plan.Paths.Run(config.ControlPlaneScope, name), log))
	}
	if plan.Rootless {
		// rootlesskit ends when the supervisor in it does; one left
		// behind (or our own ancestor, inside) is stopped last.
		if runDir := plan.Paths.Run(RootlesskitScope, RootlesskitName); !recordsAncestor(runDir) {
			add(stopRecorded(ctx, runDir, log))
			// It removes its state dir when it exits, unless killed.
			if st, ok := ReadRootless(plan.Paths); ok && plan.outside() && st.RootlesskitStateDir != "" {
				add(os.RemoveAll(st.RootlesskitStateDir))
			}
		}
	}
	add(os.RemoveAll(plan.Paths.ImageCache()))
	for _, nd := range plan.Nodes {
		add(killOrphans(plan, nd.Name))
		if err := os.Remove(FailedFile(plan.Paths, nd.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			add(err)
		}
	}
	// Outside a rootless cluster's namespaces, its mounts, links and
	// iptables rules are not there to remove: they went with the
	// namespaces when the last process in them was stopped above.
	if !plan.outside() {
		add(unmountUnder(plan.Paths.State))
		add(network.Teardown(plan.Cfg.Name))
		if plan.Executor == config.ExecutorProcess {
			add(removeKubeProxyTables(ctx))
			add(removeKubeChains())
		}
	}
	for _, nd := range plan.Nodes {
		add(host.RemoveCgroup(plan.CgroupRoot(nd)))
	}
	if !plan.Rootless {
		// The parent of a rootless cluster's cgroups is the user's
		// delegated subtree: it stays.
		removeEmptyCgroup(plan.CgroupParent())
		add(restoreSysctls(plan.Paths))
	}
	add(releaseName(plan))
	add(removeUserKubeconfig(plan, log))
	return errors.Join(errs...)
}

// recordsAncestor reports whether runDir records a live process that is
// an ancestor of this one (rootlesskit, seen from the supervisor it runs).
func recordsAncestor(runDir string) bool {
	pid, ok := process.Running(runDir)
	if !ok {
		return false
	}
	for p := os.Getppid(); p > 1; {
		if p == pid {
			return true
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 {
			return false
		}
		if p, err = strconv.Atoi(f[1]); err != nil {
			return false
		}
	}
	return false
}

// stopRecorded stops the live process recorded in runDir, if any.
func stopRecorded(ctx context.Context, runDir string, log *slog.Logger) error {
	p, err := process.Adopt(runDir)
	if err != nil {
		if errors.Is(err, process.ErrNotRunning) || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	log.Debug("stopping leftover process", "run", runDir, "pid", p.PID())
	return p.Stop(ctx, 10*time.Second)
}

// removePods removes every pod and container through a live containerd.
func removePods(ctx context.Context, socket string, log *slog.Logger) {
	if !host.Exists(socket) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cri, err := containerd.Dial(ctx, socket)
	if err != nil {
		return
	}
	defer cri.Close()
	if _, err := cri.Version(ctx); err != nil {
		return
	}
	if err := cri.RemoveAll(ctx); err != nil {
		log.Warn("removing pods through CRI", "socket", socket, "err", err)
	}
}

// orphans lists PIDs of a node's shims (by their -address argument, our
// containerd socket) and of processes in the node's cgroups.
func orphans(plan *Plan, nodeName string) ([]int, error) {
	socket := plan.Paths.Node(nodeName).ContainerdSocket()
	var pids []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		for i := 0; i+1 < len(args); i++ {
			if string(args[i]) == "-address" && string(args[i+1]) == socket {
				pids = append(pids, pid)
			}
		}
	}
	dirs, err := host.CgroupExists(plan.CgroupRoot(plan.nodeByName(nodeName)))
	if err != nil {
		return pids, err
	}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() || de.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	sort.Ints(pids)
	return compactInts(pids), nil
}

func compactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// killOrphans SIGKILLs a node's orphaned shims and container processes, by
// PID, and waits (up to 5 s) until they are gone.
func killOrphans(plan *Plan, nodeName string) error {
	pids, err := orphans(plan, nodeName)
	if err != nil || len(pids) == 0 {
		return err
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		left, _ := orphans(plan, nodeName)
		if len(left) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	left, _ := orphans(plan, nodeName)
	return fmt.Errorf("node %s: processes still alive after SIGKILL: %v", nodeName, left)
}

func (p *Plan) nodeByName(name string) *node.Node {
	for _, nd := range p.Nodes {
		if nd.Name == name {
			return nd
		}
	}
	return nil
}

// mountsUnder lists mount points at or under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if mp == strings.TrimSuffix(dir, "/") || strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unmountUnder detaches every mount at or under dir, deepest first.
func unmountUnder(dir string) error {
	var errs []error
	for range 3 { // stacked mounts need more than one pass
		mps, err := mountsUnder(dir)
		if err != nil || len(mps) == 0 {
			return err
		}
		errs = errs[:0]
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			}
		}
	}
	return errors.Join(errs...)
}

// kubeProxyTable is the nftables table of kube-proxy's nftables mode, in
// the ip and ip6 families (k8s.io/kubernetes pkg/proxy/nftables).
const kubeProxyTable = "kube-proxy"

// removeKubeProxyTables deletes the tables that the kube-proxy of a
// process-executor node made in the host's namespace. A table that is not
// there is no error.
func removeKubeProxyTables(ctx context.Context) error {
	var errs []error
	for _, family := range []knftables.Family{knftables.IPv4Family, knftables.IPv6Family} {
		nft, err := knftables.New(family, kubeProxyTable)
		if err != nil {
			errs = append(errs, fmt.Errorf("nftables %s: %w", family, err))
			continue
		}
		tx := nft.NewTransaction()
		tx.Delete(&knftables.Table{})
		if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete nftables table %s %s: %w", family, kubeProxyTable, err))
		}
	}
	return errors.Join(errs...)
}

// kubeChainTables are the tables where the kubelet and kube-proxy create
// KUBE-* chains.
var kubeChainTables = []string{"filter", "nat", "mangle"}

// removeKubeChains removes the KUBE-* chains (and the rules jumping to
// them) that the kubelet and kube-proxy of a process-executor node created
// in the host's namespace, IPv4 and IPv6, before kube-proxy ran in
// nftables mode and the kubelet made no iptables chains (a cluster of an
// older kubernix, or a kubelet started by hand). `kube-proxy --cleanup`
// leaves the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY,
// KUBE-IPTABLES-HINT), so kubernix removes them all itself: per protocol
// one iptables-save and one iptables-restore --noflush, as kube-proxy
// itself writes its rules (one iptables call per rule took seconds).
func removeKubeChains() error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		save, err1 := exec.LookPath(family + "-save")
		restore, err2 := exec.LookPath(family + "-restore")
		if err1 != nil || err2 != nil {
			continue // no such family here: nothing to clean
		}
		dump, err := exec.Command(save).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", save, err))
			continue
		}
		script := kubeChainsRestore(string(dump), "KUBE-")
		if script == "" {
			continue
		}
		cmd := exec.Command(restore, "--noflush")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s --noflush: %w: %s", restore, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// kubeChainsRestore turns an iptables-save dump into an iptables-restore
// --noflush script that deletes, in each table, the rules of other chains
// that jump (-j) or go (-g) to a chain named with prefix, then flushes and
// deletes those chains. It returns "" when no table has such a chain.
func kubeChainsRestore(dump, prefix string) string {
	type table struct {
		name    string
		ours    []string
		deletes []string
	}
	var tables []*table
	var cur *table
	jumpsToOurs := func(spec string) bool {
		f := strings.Fields(spec)
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "-j" || f[i] == "-g") && strings.HasPrefix(f[i+1], prefix) {
				return true
			}
		}
		return false
	}
	for _, line := range strings.Split(dump, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			cur = &table{name: strings.TrimPrefix(line, "*")}
			tables = append(tables, cur)
		case cur == nil:
		case strings.HasPrefix(line, ":"+prefix):
			cur.ours = append(cur.ours, strings.Fields(line[1:])[0])
		case strings.HasPrefix(line, "-A "):
			chain, spec, _ := strings.Cut(strings.TrimPrefix(line, "-A "), " ")
			if !strings.HasPrefix(chain, prefix) && jumpsToOurs(spec) {
				cur.deletes = append(cur.deletes, "-D "+chain+" "+spec)
			}
		}
	}
	var b strings.Builder
	for _, t := range tables {
		if len(t.ours) == 0 {
			continue
		}
		fmt.Fprintf(&b, "*%s\n", t.name)
		for _, d := range t.deletes {
			b.WriteString(d + "\n")
		}
		for _, ch := range t.ours {
			fmt.Fprintf(&b, "-F %s\n", ch)
		}
		for _, ch := range t.ours {
			fmt.Fprintf(&b, "-X %s\n", ch)
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}

// kubeChains lists the KUBE-* chains in the host's namespace.
func kubeChains() []string {
	var out []string
	for _, proto := range []iptables.Protocol{iptables.ProtocolIPv4, iptables.ProtocolIPv6} {
		ipt, err := iptables.NewWithProtocol(proto)
		if err != nil {
			continue
		}
		for _, table := range kubeChainTables {
			chains, _ := ipt.ListChains(table)
			for _, ch := range chains {
				if strings.HasPrefix(ch, "KUBE-") {
					out = append(out, fmt.Sprintf("iptables chain %s/%s (%v)", table, ch, proto))
				}
			}
		}
	}
	return out
}

func removeEmptyCgroup(path string) {
	mounts, _ := host.CgroupMounts()
	for _, m := range mounts {
		_ = unix.Rmdir(filepath.Join(m, strings.Trim(path, "/")))
	}
}

// Leftovers lists what of the cluster exists on the host: live recorded
// processes, orphaned shims and containers, mounts under the state dir,
// network links, routes and chains, KUBE-* chains in the host's namespace
// (process executor), and the nodes' cgroups. Empty after a clean down.
func Leftovers(plan *Plan) ([]string, error) {
	var out []string
	scopes := map[string][]string{config.ControlPlaneScope: controlPlaneStopOrder, SupervisorScope: {SupervisorName}}
	for _, nd := range plan.Nodes {
		scopes[nd.Name] = nodeStopOrder
	}
	if plan.Rootless {
		scopes[SupervisorScope] = []string{SupervisorName, RootlesskitName}
	}
	for scope, names := range scopes {
		for _, name := range names {
			runDir := plan.Paths.Run(scope, name)
			if pid, ok := process.Running(runDir); ok && pid != os.Getpid() && !recordsAncestor(runDir) {
				out = append(out, fmt.Sprintf("process %s/%s (pid %d)", scope, name, pid))
			}
		}
	}
	for _, nd := range plan.Nodes {
		pids, _ := orphans(plan, nd.Name)
		for _, pid := range pids {
			out = append(out, fmt.Sprintf("orphaned process of node %s (pid %d)", nd.Name, pid))
		}
		cgs, _ := host.CgroupExists(plan.CgroupRoot(nd))
		for _, cg := range cgs {
			out = append(out, "cgroup "+cg)
		}
	}
	if plan.outside() {
		// Mounts, links and rules of a rootless cluster exist only in its
		// namespaces, which live as long as a process listed above does.
		sort.Strings(out)
		return out, nil
	}
	mps, err := mountsUnder(plan.Paths.State)
	if err != nil {
		return out, err
	}
	for _, mp := range mps {
		out = append(out, "mount "+mp)
	}
	netLeft, err := network.Leftovers(plan.Cfg.Name)
	if err != nil {
		return out, err
	}
	out = append(out, netLeft...)
	if plan.Executor == config.ExecutorProcess {
		out = append(out, kubeChains()...)
	}
	sort.Strings(out)
	return out, nil
}
