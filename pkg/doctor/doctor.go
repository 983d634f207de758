// Package doctor checks that this machine can run a kubernix cluster: the
// upstream binaries and their versions, and the host's kernel features,
// cgroups, sysctls and capabilities. `kubernix doctor` prints the report and
// `kubernix up` refuses to start when a required check fails.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/netpol"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/release"
	"github.com/kubernix/kubernix/pkg/rootless"
	"github.com/kubernix/kubernix/pkg/sysctl"
)

// Status is the outcome of one check.
type Status string

// Check outcomes. Only StatusFail makes the report fail.
const (
	StatusOK   Status = "ok"
	StatusInfo Status = "info"
	StatusWarn Status = "warn"
	StatusFail Status = "FAIL"
)

// Result is one checked item.
type Result struct {
	Group  string // "binaries" or "host"
	Name   string
	Status Status
	// Detail is what was found: a path and version, a value.
	Detail string
	// Fix says how to repair a failure or what kubernix does about a warning.
	Fix string
}

// Report is the list of results, in check order.
type Report []Result

// Failed reports whether a required check failed.
func (r Report) Failed() bool {
	for _, res := range r {
		if res.Status == StatusFail {
			return true
		}
	}
	return false
}

// Failures returns the failed results.
func (r Report) Failures() Report {
	var out Report
	for _, res := range r {
		if res.Status == StatusFail {
			out = append(out, res)
		}
	}
	return out
}

// Print writes the report as aligned lines, grouped.
func (r Report) Print(w io.Writer) {
	group := ""
	for _, res := range r {
		if res.Group != group {
			group = res.Group
			fmt.Fprintf(w, "%s:\n", strings.ToUpper(group))
		}
		fmt.Fprintf(w, "  %-4s  %-24s %s\n", res.Status, res.Name, res.Detail)
		if res.Fix != "" && res.Status != StatusOK {
			fmt.Fprintf(w, "        %-24s -> %s\n", "", res.Fix)
		}
	}
}

// Facts are the host properties `up` renders configs from; Check fills them.
type Facts struct {
	// Mode is how a cluster runs for the process that checked.
	Mode    Mode
	Cgroups cgroup.Layout
	// HasSysResource: CAP_SYS_RESOURCE is effective. Without it containerd
	// needs restrict_oom_score_adj.
	HasSysResource bool
	// CrunWorks: crun runs containers the way containerd 2.x asks.
	CrunWorks bool
	// Paths of the binaries found, by name.
	Paths map[string]string
	// CNIDir holds the CNI plugins.
	CNIDir string
	// CgroupParent is the cgroup subtree delegated to the user (rootless
	// mode, host side), under which the nodes' cgroups are made.
	CgroupParent string
	// Snapshotter is containerd's snapshotter: "overlayfs", or "native"
	// where overlay cannot be mounted in the user namespace.
	Snapshotter string
	// Release is the Kubernetes release the binaries in Paths were
	// checked (or, by Locate, looked up) for: Options.Release.
	Release release.Release
}

// Options tune Check.
type Options struct {
	// Release is the Kubernetes release the binaries must be built for
	// (bins.Required); a zero Release fails the binary checks.
	Release release.Release
	// CNIDir, when not empty, is the only place the CNI plugins are looked for.
	CNIDir string
	// CgroupParent, when not empty, is the cgroup subtree rootless mode
	// must be able to use, instead of the one it would detect.
	CgroupParent string
	// SkipNetworkPolicy leaves out the check of what the NetworkPolicy
	// agents need (the cluster's network_policy is false).
	SkipNetworkPolicy bool
}

// Check runs every check for the mode of the calling process (DetectMode):
// as root, the host's kernel features, cgroups and capabilities; as an
// ordinary user, the prerequisites of rootless mode (user namespaces,
// subordinate IDs, /dev/net/tun, rootlesskit, slirp4netns, newuidmap,
// cgroup delegation); inside rootlesskit's namespace, what the components
// can do there. It never changes the host.
func Check(ctx context.Context, finder *bins.Finder, opts Options) (Report, Facts) {
	var r Report
	facts := Facts{Mode: DetectMode(), Paths: map[string]string{}, Snapshotter: SnapshotterOverlayfs, Release: opts.Release}
	r = append(r, checkBundle(finder)...)
	if opts.Release.Kubernetes == "" {
		r = append(r, Result{Group: "binaries", Name: "release", Status: StatusFail,
			Detail: "no Kubernetes release to check the binaries against", Fix: "a kubernix bug: report it"})
	}
	r = append(r, checkBinaries(ctx, finder, bins.Required(opts.Release), facts.Paths)...)
	r = append(r, checkCNI(&facts, opts.CNIDir))
	if facts.Mode == ModeRootless {
		for _, b := range bins.Rootless() {
			r = append(r, checkBinary(ctx, finder, b, facts.Paths))
		}
		r = append(r, checkRootless(ctx, &facts, opts)...)
		return r, facts
	}
	busybox, _ := finder.Find("busybox")
	r = append(r, checkHost(ctx, &facts, busybox)...)
	if !opts.SkipNetworkPolicy {
		r = append(r, checkNetworkPolicy(ctx, facts.Paths["nft"]))
	}
	return r, facts
}

func checkBinary(ctx context.Context, finder *bins.Finder, b bins.Binary, paths map[string]string) Result {
	res := Result{Group: "binaries", Name: b.Name}
	path, err := finder.Find(b.Name)
	if err != nil {
		res.Status, res.Detail, res.Fix = StatusFail, "not found in "+finder.Where(), b.Hint
		if b.Optional {
			res.Status, res.Detail = StatusInfo, "not found (optional)"
		}
		return res
	}
	var version string
	if len(b.VersionArgs) > 0 {
		version, err = bins.CachedVersion(ctx, bins.VersionCache, path, b.VersionArgs...)
	}
	switch {
	case err != nil:
		res.Status, res.Detail, res.Fix = StatusFail, fmt.Sprintf("%s: %v", path, err), b.Hint
	case b.Want != "" && !strings.Contains(version, b.Want):
		res.Status, res.Detail, res.Fix = StatusFail, fmt.Sprintf("%s: %q, want %s", path, version, b.Want), b.Hint
	default:
		res.Status, res.Detail = StatusOK, path
		if version != "" {
			res.Detail = fmt.Sprintf("%s  (%s)", path, version)
		}
		paths[b.Name] = path
	}
	if b.Optional && res.Status == StatusFail {
		res.Status = StatusWarn
	}
	return res
}

func checkCNI(facts *Facts, cniDir string) Result {
	res := Result{Group: "binaries", Name: "CNI plugins", Fix: "apt-get install containernetworking-plugins"}
	dirs := bins.CNIDirs
	if cniDir != "" {
		dirs = []string{cniDir}
	}
	for _, dir := range dirs {
		missing := []string{}
		for _, p := range bins.CNIPlugins {
			if !fileinfo.Exists(filepath.Join(dir, p)) {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			facts.CNIDir = dir
			res.Status, res.Detail = StatusOK, fmt.Sprintf("%s  (%s)", dir, strings.Join(bins.CNIPlugins, ", "))
			return res
		}
	}
	res.Status = StatusFail
	res.Detail = fmt.Sprintf("%s not all found in %s", strings.Join(bins.CNIPlugins, ", "), strings.Join(dirs, ", "))
	return res
}

// group collects the results of one group of checks.
type group struct {
	name string // Result.Group
	r    Report
}

// add appends a result to the group.
func (g *group) add(name string, status Status, detail, fix string) {
	g.r = append(g.r, Result{Group: g.name, Name: name, Status: status, Detail: detail, Fix: fix})
}

// checkHost checks, as root of the host or of rootlesskit's user namespace,
// the kernel features, cgroups, sysctls and capabilities the components need.
func checkHost(ctx context.Context, facts *Facts, busybox string) Report {
	g := &group{name: "host"}
	checkOverlayFS(g)
	if facts.Mode == ModeRootlessChild {
		if err := rootless.CanMountOverlay(); err == nil {
			g.add("overlayfs in userns", StatusOK, "can mount: containerd uses the overlayfs snapshotter", "")
		} else {
			facts.Snapshotter = SnapshotterNative
			g.add("overlayfs in userns", StatusInfo, err.Error(), "containerd uses the native snapshotter (slower, copies layers); fuse-overlayfs is not supported")
		}
	}
	if err := CanUnshareNet(); err == nil {
		g.add("network namespaces", StatusOK, "can create", "")
	} else {
		g.add("network namespaces", StatusFail, err.Error(), "run as root (or rootless, see `kubernix doctor` as a user)")
	}
	checkCgroups(g, facts)
	checkForwarding(g, facts)
	checkInotify(g)
	checkSysResource(g, facts)
	return append(g.r, checkCrun(ctx, facts, busybox))
}

// checkNetworkPolicy checks that the kernel takes the nftables table the
// nodes' NetworkPolicy agents write (netpol.Probe), with nft at path.
func checkNetworkPolicy(ctx context.Context, nft string) Result {
	res := Result{Group: "host", Name: "network policy"}
	if nft == "" {
		res.Status, res.Detail, res.Fix = StatusFail, "nft not found", "apt-get install nftables, or --network-policy=false"
		return res
	}
	if err := netpol.Probe(ctx, nft); err != nil {
		res.Status, res.Detail = StatusFail, err.Error()
		res.Fix = "a kernel with nf_tables inet tables, sets, ct, fib and reject (kube-proxy's nftables mode needs the same), or --network-policy=false: NetworkPolicies are then not enforced"
		return res
	}
	res.Status, res.Detail = StatusOK, "nftables takes the agents' table: NetworkPolicies are enforced"
	return res
}

// MinInotifyInstances is the fs.inotify.max_user_instances below which
// doctor warns: kind's advice for several clusters on one host (its
// "Known Issues" page). Each node's kubelet (cAdvisor) and containerd
// take some; the kernel's default, 128, runs out after a few clusters,
// and a kubelet that gets none exits with "inotify_init: too many open
// files".
const MinInotifyInstances = 512

// checkInotify warns when fs.inotify.max_user_instances is low.
func checkInotify(g *group) {
	v, err := sysctl.Get("fs.inotify.max_user_instances")
	status, detail, fix := inotifyResult(v, err)
	g.add("inotify instances", status, detail, fix)
}

// inotifyResult rates the value v of fs.inotify.max_user_instances, read
// with err.
func inotifyResult(v string, err error) (Status, string, string) {
	if err != nil {
		return StatusWarn, err.Error(), ""
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return StatusWarn, fmt.Sprintf("fs.inotify.max_user_instances=%q: %v", v, err), ""
	}
	detail := "fs.inotify.max_user_instances=" + v
	if n < MinInotifyInstances {
		return StatusWarn, detail + ": a few clusters at once exhaust it (kubelet: inotify_init: too many open files)",
			fmt.Sprintf("sysctl -w fs.inotify.max_user_instances=%d (and a file in /etc/sysctl.d to keep it)", MinInotifyInstances)
	}
	return StatusOK, detail, ""
}

// checkOverlayFS checks that the kernel has overlayfs.
func checkOverlayFS(g *group) {
	if ok, err := HasFilesystem("overlay"); ok {
		g.add("overlayfs", StatusOK, "supported", "")
	} else {
		g.add("overlayfs", StatusFail, fmt.Sprintf("not in /proc/filesystems (%v)", err), "enable CONFIG_OVERLAY_FS in the kernel")
	}
}

// checkCgroups detects the cgroup hierarchy into facts.Cgroups and warns
// about enabled controllers that are not mounted (only root of the host can
// mount them).
func checkCgroups(g *group, facts *Facts) {
	cg, err := cgroup.Detect()
	facts.Cgroups = cg
	switch {
	case err != nil:
		g.add("cgroups", StatusFail, err.Error(), "mount cgroups at /sys/fs/cgroup")
		return
	case cg.Mode == cgroup.Unknown:
		g.add("cgroups", StatusFail, "no cgroup hierarchy at /sys/fs/cgroup", "mount cgroup2 at /sys/fs/cgroup")
		return
	}
	detail := string(cg.Mode)
	if cg.Mode != cgroup.V2 {
		detail += " (v1 controllers: " + strings.Join(cg.Mounted, ",") + "; the kubelet runs with failCgroupV1: false)"
	}
	g.add("cgroups", StatusOK, detail, "")
	if len(cg.Unmounted) > 0 {
		fix := "container stats read 0 until they are mounted; `kubernix up` as root mounts them under /sys/fs/cgroup"
		if facts.Mode != ModeRoot {
			fix = "container stats read 0 until root mounts them (mount -t cgroup -o <controller> cgroup /sys/fs/cgroup/<controller>)"
		}
		g.add("cgroup controllers", StatusWarn, "enabled but not mounted: "+strings.Join(cg.Unmounted, ","), fix)
	}
}

// checkForwarding checks IP forwarding and bridge netfilter, which pod
// traffic and Service routing need, and as root says what the iptables
// filter FORWARD policy means for the host.
func checkForwarding(g *group, facts *Facts) {
	v, err := sysctl.Get("net.ipv4.ip_forward")
	if err != nil {
		g.add("ip_forward", StatusFail, err.Error(), "")
	} else if v != "1" {
		g.add("ip_forward", StatusInfo, "net.ipv4.ip_forward="+v, "`kubernix up` sets it to 1")
	} else {
		g.add("ip_forward", StatusOK, "net.ipv4.ip_forward=1", "")
	}
	if facts.Mode == ModeRoot && err == nil {
		policy, err := network.ForwardPolicy()
		status, detail, fix := forwardPolicyResult(v, policy, err)
		g.add("FORWARD policy", status, detail, fix)
	}
	if fileinfo.Exists("/proc/sys/net/bridge/bridge-nf-call-iptables") {
		g.add("br_netfilter", StatusOK, "bridge-nf-call-iptables available", "")
	} else {
		g.add("br_netfilter", StatusFail, "/proc/sys/net/bridge/bridge-nf-call-iptables missing", "modprobe br_netfilter")
	}
}

// forwardPolicyResult is the FORWARD policy check's outcome, given
// net.ipv4.ip_forward and the policy (or why it could not be read).
func forwardPolicyResult(ipForward, policy string, err error) (Status, string, string) {
	switch {
	case err != nil:
		return StatusWarn, err.Error(), "`kubernix up` needs iptables"
	case policy == network.PolicyDrop:
		return StatusOK, "iptables filter FORWARD policy DROP: only what rules accept is forwarded", ""
	case ipForward == "1":
		return StatusInfo, "iptables filter FORWARD policy ACCEPT with net.ipv4.ip_forward=1: this host forwards between all its interfaces",
			"kubernix leaves that as it found it; `iptables -P FORWARD DROP` if nothing else needs it"
	default:
		return StatusInfo, "iptables filter FORWARD policy " + policy,
			"`kubernix up` sets it to DROP as it turns forwarding on, and the last `kubernix down` back to " + policy + " if nobody changed it meanwhile"
	}
}

// checkSysResource sets facts.HasSysResource when CAP_SYS_RESOURCE is
// effective in the host's user namespace.
func checkSysResource(g *group, facts *Facts) {
	if ok, err := HasCapability(unix.CAP_SYS_RESOURCE); facts.Mode == ModeRootlessChild {
		// Capabilities in a user namespace do not reach the host's
		// oom_score_adj: it can only be raised.
		g.add("CAP_SYS_RESOURCE", StatusInfo, "in a user namespace: oom_score_adj cannot be lowered", "containerd runs with restrict_oom_score_adj = true")
	} else if err != nil {
		g.add("CAP_SYS_RESOURCE", StatusWarn, err.Error(), "")
	} else if ok {
		facts.HasSysResource = true
		g.add("CAP_SYS_RESOURCE", StatusOK, "effective: containerd may set oom_score_adj", "")
	} else {
		g.add("CAP_SYS_RESOURCE", StatusInfo, "missing: oom_score_adj cannot be lowered", "containerd runs with restrict_oom_score_adj = true")
	}
}

// checkCrun runs a container with crun; busybox is a static busybox (Debian's
// busybox-static) to run in it, "" if none was found.
func checkCrun(ctx context.Context, facts *Facts, busybox string) Result {
	res := Result{Group: "host", Name: "crun"}
	crun, ok := facts.Paths["crun"]
	switch {
	case !ok:
		res.Status, res.Detail = StatusInfo, "not installed: containerd uses runc"
	case busybox == "":
		res.Status, res.Detail, res.Fix = StatusWarn, "cannot check: no busybox found", "apt-get install busybox-static"
	default:
		if err := checkRuntimeCached(ctx, crun, busybox); err != nil {
			res.Status, res.Detail = StatusInfo, "does not work with containerd here, runc is used: "+err.Error()
		} else {
			facts.CrunWorks = true
			res.Status, res.Detail = StatusOK, "works with runtime-spec "+RuntimeSpecVersion+": containerd uses crun"
		}
	}
	return res
}

// runtimeCheckCache remembers, per boot, the outcome of running a container
// with an OCI runtime binary: the check starts a real container and takes
// seconds, and its answer only changes with the binary or a reboot.
const runtimeCheckCache = "/run/kubernix/runtime-check"

// checkRuntimeCached runs CheckOCIRuntime, or returns its recorded
// outcome for the same runtime binary (path, size, mtime) and runtime-spec
// version. Only root writes the record (in /run, gone at reboot).
func checkRuntimeCached(ctx context.Context, runtime, busybox string) error {
	st, err := os.Stat(runtime)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s %d %d %s", runtime, st.Size(), st.ModTime().UnixNano(), RuntimeSpecVersion)
	file := filepath.Join(runtimeCheckCache, strings.ReplaceAll(strings.Trim(runtime, "/"), "/", "_"))
	if b, err := os.ReadFile(file); err == nil {
		if k, outcome, ok := strings.Cut(string(b), "\n"); ok && k == key {
			if outcome == "ok" {
				return nil
			}
			return errors.New(outcome)
		}
	}
	checkErr := CheckOCIRuntime(ctx, runtime, busybox, "true")
	if os.Geteuid() == 0 && ctx.Err() == nil {
		outcome := "ok"
		if checkErr != nil {
			outcome = checkErr.Error()
		}
		if os.MkdirAll(runtimeCheckCache, 0o755) == nil {
			_ = os.WriteFile(file, []byte(key+"\n"+outcome), 0o644)
		}
	}
	return checkErr
}

// checkBinaries checks bs concurrently (each runs its binary for the
// version) and returns the results in bs's order.
func checkBinaries(ctx context.Context, finder *bins.Finder, bs []bins.Binary, paths map[string]string) Report {
	out := make(Report, len(bs))
	found := make([]map[string]string, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i] = map[string]string{}
			out[i] = checkBinary(ctx, finder, b, found[i])
		}()
	}
	wg.Wait()
	for _, f := range found {
		for k, v := range f {
			paths[k] = v
		}
	}
	return out
}
