package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/components/netpolagent"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/process"
)

// Layout locates one bench cluster on the host: its name and state dir.
type Layout struct {
	Name     string
	StateDir string
}

func (l Layout) paths() config.Paths { return config.Paths{State: l.StateDir} }

// NodeName is the name of node i (from 0), as kubernix names it.
func (l Layout) NodeName(i int) string { return l.Name + "-node-" + strconv.Itoa(i) }

// AdminKubeconfig is the cluster's admin kubeconfig in its state dir.
func (l Layout) AdminKubeconfig() string { return l.paths().Kubeconfig("admin") }

// controlPlane lists the control-plane components with a pidfile.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// nodeComponents lists a node's components with a pidfile; the sandbox only
// exists with the container executor, the NetworkPolicy agent only while
// network_policy is on.
var nodeComponents = []string{"sandbox", "containerd", "kubelet", "kube-proxy", netpolagent.Name}

// procGroup is the processes of one component kind in one scope
// ("supervisor", "control-plane" or a node's name): a recorded
// component's process, or a node's shims or pod processes.
type procGroup struct {
	Scope, Component string
	PIDs             []int
}

// clusterProcesses finds the processes of the cluster l of nodes: the
// supervisor, the control plane and, for each of the nodes, its sandbox
// holder, containerd, shims, kubelet, kube-proxy, NetworkPolicy agent and
// pod processes. Recorded components are found by their pidfiles
// (checked against run.json's start time), shims by their `-address
// <node's containerd socket>` argument, pod processes in the node's
// cgroups (those not found before). missing lists, as "scope/component",
// the components expected to run that had no live process: the sandbox
// is expected only when executor is "container", the agent only when
// netpol is true. The error is one of listing processes or cgroups.
func clusterProcesses(l Layout, nodes int, executor string, netpol bool) (groups []procGroup, missing []string, err error) {
	p := l.paths()
	known := map[int]bool{}
	add := func(scope, comp string, pids []int) {
		for _, pid := range pids {
			known[pid] = true
		}
		groups = append(groups, procGroup{Scope: scope, Component: comp, PIDs: pids})
	}
	recorded := func(scope, comp, as string, expected bool) {
		if pid, ok := process.Running(p.Run(scope, comp)); ok {
			add(scope, as, []int{pid})
		} else if expected {
			missing = append(missing, scope+"/"+comp)
		}
	}
	recorded("supervisor", "kubernix", "supervisor", true)
	for _, c := range controlPlane {
		recorded(config.ControlPlaneScope, c, c, true)
	}
	for i := range nodes {
		nd := l.NodeName(i)
		for _, c := range nodeComponents {
			recorded(nd, c, c, nodeComponentExpected(c, executor, netpol))
		}
		shims, err := process.WithArgs("-address", p.Node(nd).ContainerdSocket())
		if err != nil {
			return nil, nil, err
		}
		add(nd, "shims", shims)
	}
	// Pod processes last, so that nothing counted above is counted again.
	for i := range nodes {
		nd := l.NodeName(i)
		pids, err := cgroup.PIDs("/kubernix/" + nd)
		if err != nil {
			return nil, nil, err
		}
		var pods []int
		for _, pid := range pids {
			if !known[pid] {
				pods = append(pods, pid)
			}
		}
		add(nd, "pods", pods)
	}
	return groups, missing, nil
}

// SampleMemory reads the VmRSS and PSS of the cluster's processes
// (clusterProcesses), summed per group; the components expected but not
// running are in Memory.Missing.
func SampleMemory(l Layout, nodes int, executor string, netpol bool) (*Memory, error) {
	groups, missing, err := clusterProcesses(l, nodes, executor, netpol)
	if err != nil {
		return nil, err
	}
	m := &Memory{Missing: missing}
	for _, g := range groups {
		pr := ProcRSS{Scope: g.Scope, Component: g.Component, PIDs: g.PIDs}
		for _, pid := range g.PIDs {
			rss, err := vmRSS(pid)
			if err != nil {
				continue // exited in between
			}
			pr.RSSBytes += rss
			if pss, err := pssOf(pid); err == nil {
				pr.PSSBytes += pss
			}
		}
		m.Processes = append(m.Processes, pr)
		m.TotalBytes += pr.RSSBytes
		m.TotalPSSBytes += pr.PSSBytes
	}
	return m, nil
}

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// Linux, which procfs's ProcStat.CPUTime assumes too.
const userHZ = 100

// SampleCPU reads the CPU time the cluster's processes (clusterProcesses)
// used since they started: user and system time, with that of the
// children each reaped (the supervisor's nft, iptables and nsenter runs,
// a shim's runc), in seconds, summed per group, from /proc/<pid>/stat
// (parsed by prometheus/procfs). A process that exited in between counts
// 0. The error is clusterProcesses's.
func SampleCPU(l Layout, nodes int, executor string, netpol bool) ([]ProcCPU, error) {
	groups, _, err := clusterProcesses(l, nodes, executor, netpol)
	if err != nil {
		return nil, err
	}
	var out []ProcCPU
	for _, g := range groups {
		pc := ProcCPU{Scope: g.Scope, Component: g.Component, PIDs: g.PIDs}
		for _, pid := range g.PIDs {
			p, err := procfs.NewProc(pid)
			if err != nil {
				continue
			}
			st, err := p.Stat()
			if err != nil {
				continue
			}
			pc.Seconds += st.CPUTime() + float64(st.CUTime+st.CSTime)/userHZ
		}
		out = append(out, pc)
	}
	return out, nil
}

// MachineBusySeconds is the time all the cores of this machine have spent
// busy since it booted, in seconds: user, nice, system, irq, softirq and
// steal of /proc/stat's cpu line (parsed by prometheus/procfs); idle and
// iowait are not busy.
func MachineBusySeconds() (float64, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, err
	}
	c := st.CPUTotal
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal, nil
}

// nodeComponentExpected reports whether node component c runs with
// executor and network policy netpol: the sandbox only with the container
// executor, the agent only with network policy.
func nodeComponentExpected(c, executor string, netpol bool) bool {
	switch c {
	case "sandbox":
		return executor == "container"
	case netpolagent.Name:
		return netpol
	}
	return true
}

// vmRSS returns the VmRSS of pid in bytes (from /proc/<pid>/status,
// parsed by prometheus/procfs); 0 for a process without one (a kernel
// thread, a zombie).
func vmRSS(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	return st.VmRSS, err
}

// pssOf returns the proportional set size of pid in bytes, from
// /proc/<pid>/smaps_rollup (parsed by prometheus/procfs).
func pssOf(pid int) (uint64, error) {
	r, err := smapsRollup(pid)
	return r.Pss, err
}

// smapsRollup reads /proc/<pid>/smaps_rollup: one snapshot of the
// process's resident (Rss) and proportional (Pss) sizes, in bytes.
func smapsRollup(pid int) (procfs.ProcSMapsRollup, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcSMapsRollup{}, err
	}
	return p.ProcSMapsRollup()
}

// Leftovers lists what of the cluster is still on the host: live processes
// recorded under <state>/run, processes (shims) whose argv names a socket
// under <state>/nodes, mounts under the state dir, the cluster's network
// links, routes and iptables chains (kx-<hash> bridge, veths, ...), and
// nodes' cgroups. Empty after a clean down.
func Leftovers(l Layout) ([]string, error) {
	var out []string
	var errs []error
	runDirs, _ := filepath.Glob(filepath.Join(l.StateDir, "run", "*", "*"))
	for _, d := range runDirs {
		if pid, ok := process.Running(d); ok {
			rel, _ := filepath.Rel(l.StateDir, d)
			out = append(out, fmt.Sprintf("live pidfile %s (pid %d)", rel, pid))
		}
	}
	nodesDir := filepath.Join(l.StateDir, "nodes") + "/"
	shims, err := process.WithArgFunc("-address", func(v string) bool { return strings.HasPrefix(v, nodesDir) })
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range shims {
		out = append(out, fmt.Sprintf("shim pid %d (-address under %s)", pid, nodesDir))
	}
	mps, err := node.MountsUnder(l.StateDir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, mp := range mps {
		out = append(out, "mount "+mp)
	}
	netLeft, err := network.Leftovers(l.Name)
	if err != nil {
		errs = append(errs, err)
	}
	out = append(out, netLeft...)
	mounts, err := cgroup.Mounts()
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range mounts {
		cgs, _ := filepath.Glob(filepath.Join(m, "kubernix", l.Name+"-node-*"))
		for _, cg := range cgs {
			out = append(out, "cgroup "+cg)
		}
	}
	sort.Strings(out)
	return out, errors.Join(errs...)
}

// SupervisorRunning reports the pid of the cluster's live supervisor.
func SupervisorRunning(l Layout) (int, bool) {
	return process.Running(l.paths().Run("supervisor", "kubernix"))
}

// Executor tells from the state dir how the nodes ran: "container" when
// node 0 has a sandbox run dir, else "process".
func Executor(l Layout) string {
	if _, err := os.Stat(l.paths().Run(l.NodeName(0), "sandbox")); err == nil {
		return "container"
	}
	return "process"
}

// HasPKI reports whether the state dir already holds a PKI.
func HasPKI(l Layout) bool {
	entries, err := os.ReadDir(l.paths().PKI())
	return err == nil && len(entries) > 0
}

// MachineInfo describes this host: cores, MemTotal (from /proc/meminfo,
// parsed by prometheus/procfs) and kernel release.
func MachineInfo() (Machine, error) {
	m := Machine{Cores: runtime.NumCPU()}
	var errs []error
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	} else {
		errs = append(errs, err)
	}
	total, err := memTotal()
	m.MemTotalBytes = total
	return m, errors.Join(append(errs, err)...)
}

// memTotal returns MemTotal of /proc/meminfo in bytes.
func memTotal() (uint64, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return 0, fmt.Errorf("read /proc/meminfo: %w", err)
	}
	if mi.MemTotalBytes == nil {
		return 0, errors.New("no MemTotal in /proc/meminfo")
	}
	return *mi.MemTotalBytes, nil
}

// loadAvg returns /proc/loadavg, trimmed, or "".
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// procID is a process, told from a later one with the same PID by its
// start time.
type procID struct {
	PID   int
	Start uint64 // /proc/<pid>/stat field 22, clock ticks after boot
}

// childrenOf lists the live children of pid.
func childrenOf(pid int) []procID {
	pids, _ := process.Children(pid)
	var out []procID
	for _, child := range pids {
		if start, err := process.StartTime(child); err == nil {
			out = append(out, procID{PID: child, Start: start})
		}
	}
	return out
}

// alive reports whether p still runs (and is not a zombie).
func (p procID) alive() bool { return process.Alive(p.PID, p.Start) }

// stopProcesses sends SIGTERM to each live process of ps, by PID, and waits
// up to grace for them to exit; then it SIGKILLs what is left. A kubernix
// supervisor that gets SIGTERM while booting cancels the boot and cleans up
// after itself; a supervising one brings its cluster down. It returns the
// processes it had to kill.
func stopProcesses(ps []procID, grace time.Duration) []procID {
	var live []procID
	for _, p := range ps {
		if p.alive() && unix.Kill(p.PID, unix.SIGTERM) == nil {
			live = append(live, p)
		}
	}
	if len(live) > 0 {
		_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, grace, false, func(context.Context) (bool, error) {
			live = slices.DeleteFunc(live, func(p procID) bool { return !p.alive() })
			return len(live) == 0, nil
		})
	}
	for _, p := range live {
		if p.alive() {
			_ = unix.Kill(p.PID, unix.SIGKILL)
		}
	}
	return live
}
