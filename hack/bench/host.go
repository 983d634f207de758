package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/network"
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

// controlPlane lists the control-plane components with a pidfile.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// nodeComponents lists a node's components with a pidfile; the sandbox only
// exists with the container executor.
var nodeComponents = []string{"sandbox", "containerd", "kubelet", "kube-proxy"}

// SampleMemory reads the VmRSS of the supervisor, the control plane and, for
// each of the nodes, its sandbox holder, containerd, shims (summed), kubelet,
// kube-proxy and pod processes (summed). Processes are found by their
// pidfiles (checked against run.json's start time), shims by their
// `-address <node's containerd socket>` argument, pod processes in the
// node's cgroups. A component expected to run but not found is listed in
// Missing; the sandbox is expected only when the executor is "container".
func SampleMemory(l Layout, nodes int, executor string) (*Memory, error) {
	m := &Memory{}
	p := l.paths()
	known := map[int]bool{}
	add := func(scope, comp string, pids []int) {
		pr := ProcRSS{Scope: scope, Component: comp, PIDs: pids}
		for _, pid := range pids {
			known[pid] = true
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
	recorded := func(scope, comp, as string, expected bool) {
		if pid, ok := process.Running(p.Run(scope, comp)); ok {
			add(scope, as, []int{pid})
		} else if expected {
			m.Missing = append(m.Missing, scope+"/"+comp)
		}
	}
	recorded("supervisor", "kubernix", "supervisor", true)
	for _, c := range controlPlane {
		recorded(config.ControlPlaneScope, c, c, true)
	}
	procs, err := allProcs()
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		nd := l.NodeName(i)
		for _, c := range nodeComponents {
			recorded(nd, c, c, c != "sandbox" || executor == "container")
		}
		add(nd, "shims", shimPIDs(procs, p.Node(nd).ContainerdSocket()))
	}
	// Pod processes last, so that nothing counted above is counted again.
	for i := range nodes {
		nd := l.NodeName(i)
		pids, err := cgroupPIDs("/kubernix/" + nd)
		if err != nil {
			return nil, err
		}
		var pods []int
		for _, pid := range pids {
			if !known[pid] {
				pods = append(pods, pid)
			}
		}
		add(nd, "pods", pods)
	}
	return m, nil
}

// vmRSS returns the VmRSS of pid in bytes.
func vmRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

// pssOf returns the proportional set size of pid in bytes, from
// /proc/<pid>/smaps_rollup.
func pssOf(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, err
	}
	return parseKB(b, "Pss:")
}

// parseVmRSS extracts VmRSS (in bytes) from the text of /proc/<pid>/status.
// A process without the field (a kernel thread, a zombie) has 0.
func parseVmRSS(status []byte) (uint64, error) { return parseKB(status, "VmRSS:") }

// parseKB extracts the first "<field> <n> kB" line of a /proc file, in
// bytes; 0 if there is none.
func parseKB(text []byte, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", strings.TrimSuffix(field, ":"), sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, sc.Err()
}

// proc is a process and its argv.
type proc struct {
	pid  int
	argv []string
}

// allProcs lists every process with its argv.
func allProcs() ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, proc{pid: pid, argv: strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")})
	}
	return out, nil
}

// shimPIDs returns the processes whose argv holds `-address socket`.
func shimPIDs(procs []proc, socket string) []int {
	var out []int
	for _, p := range procs {
		for i := 0; i+1 < len(p.argv); i++ {
			if p.argv[i] == "-address" && p.argv[i+1] == socket {
				out = append(out, p.pid)
				break
			}
		}
	}
	return out
}

// cgroupPIDs lists, deduplicated and sorted, the processes in the cgroup
// path (e.g. "/kubernix/<node>") and below, in every hierarchy.
func cgroupPIDs(path string) ([]int, error) {
	dirs, err := host.CgroupExists(path)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() || de.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out, nil
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
	procs, err := allProcs()
	if err != nil {
		errs = append(errs, err)
	}
	nodesDir := filepath.Join(l.StateDir, "nodes") + "/"
	for _, p := range procs {
		for i := 0; i+1 < len(p.argv); i++ {
			if p.argv[i] == "-address" && strings.HasPrefix(p.argv[i+1], nodesDir) {
				out = append(out, fmt.Sprintf("shim pid %d (%s)", p.pid, p.argv[i+1]))
				break
			}
		}
	}
	mps, err := mountsUnder(l.StateDir)
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
	mounts, err := host.CgroupMounts()
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

// mountsUnder lists the mount points at or under dir.
func mountsUnder(dir string) ([]string, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		out = append(out, m.Mountpoint)
	}
	return out, nil
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

// MachineInfo describes this host: cores, MemTotal and kernel release.
func MachineInfo() (Machine, error) {
	m := Machine{Cores: runtime.NumCPU()}
	var errs []error
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	} else {
		errs = append(errs, err)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotalBytes, err = parseMemTotal(b)
		errs = append(errs, err)
	} else {
		errs = append(errs, err)
	}
	return m, errors.Join(errs...)
}

// parseMemTotal extracts MemTotal (in bytes) from /proc/meminfo.
func parseMemTotal(meminfo []byte) (uint64, error) {
	for _, line := range strings.Split(string(meminfo), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				return kb << 10, err
			}
			return 0, fmt.Errorf("unexpected MemTotal line %q", line)
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
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

// procStat holds the fields of /proc/<pid>/stat the bench needs.
type procStat struct {
	state byte // field 3
	ppid  int  // field 4
	start uint64
}

// readProcStat reads /proc/<pid>/stat; the error wraps fs.ErrNotExist
// when there is no such process.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

// parseProcStat parses a /proc/<pid>/stat line. The command name (field 2)
// may hold spaces and parentheses, so fields count from the last ')'.
func parseProcStat(line string) (procStat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc stat %q: no ')'", line)
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3
	if len(f) < 22-2 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc stat %q: too few fields", line)
	}
	ppid, err := strconv.Atoi(f[4-3])
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat ppid: %w", err)
	}
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat start time: %w", err)
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// childrenOf lists the live children of pid.
func childrenOf(pid int) []procID {
	entries, _ := os.ReadDir("/proc")
	var out []procID
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(child); err == nil && st.ppid == pid {
			out = append(out, procID{PID: child, Start: st.start})
		}
	}
	return out
}

// alive reports whether p still runs (and is not a zombie).
func (p procID) alive() bool {
	st, err := readProcStat(p.PID)
	return err == nil && st.start == p.Start && st.state != 'Z' && st.state != 'X'
}

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
	deadline := time.Now().Add(grace)
	for len(live) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		live = slices.DeleteFunc(live, func(p procID) bool { return !p.alive() })
	}
	for _, p := range live {
		if p.alive() {
			_ = unix.Kill(p.PID, unix.SIGKILL)
		}
	}
	return live
}
