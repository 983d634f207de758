package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/prometheus/procfs"
)

// rootlessUser is an unprivileged user the test creates, with the host
// prepared for it as a laptop comes prepared for rootless containers.
type rootlessUser struct {
	t        tb
	binDir   string
	name     string
	uid, gid int
	home     string
	// path is the user's PATH; "" for the bin dir, then /usr/local/bin,
	// /usr/bin, /bin, /usr/sbin and /sbin.
	path string
}

// newRootlessUser skips unless the test can prepare the host (root, the
// built binaries, rootlesskit, slirp4netns and newuidmap installed), and
// creates the user name with a home directory. The user is removed at the
// end (t.Cleanup), also on failure.
func newRootlessUser(t *testing.T, name string) *rootlessUser {
	t.Helper()
	return addRootlessUser(t, requireRootless(t), name)
}

// requireRootless skips t unless it can prepare the host for a rootless
// user (see newRootlessUser), and returns the bin dir.
func requireRootless(t *testing.T) string {
	t.Helper()
	binDir := requireIntegration(t, "create a user and prepare the host")
	for _, b := range []string{"rootlesskit", "slirp4netns", "newuidmap", "newgidmap", "useradd", "userdel"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("integration test: %s is not installed (Debian: apt-get install rootlesskit slirp4netns uidmap)", b)
		}
	}
	return binDir
}

// addRootlessUser creates the user name with a home directory, for t
// (a test, or the setup of the shared rootless cluster), with the
// binaries of binDir. The user is removed when t ends (t.Cleanup), also
// on failure.
func addRootlessUser(t tb, binDir, name string) *rootlessUser {
	t.Helper()
	hostFiles.Lock()
	// A user left by an interrupted run goes first.
	if _, err := user.Lookup(name); err == nil {
		if out, err := exec.Command("userdel", "-r", "-f", name).CombinedOutput(); err != nil {
			hostFiles.Unlock()
			t.Fatalf("userdel %s: %v: %s", name, err, out)
		}
	}
	out, err := exec.Command("useradd", "-m", "-s", "/bin/sh", name).CombinedOutput()
	hostFiles.Unlock()
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	ru := &rootlessUser{t: t, binDir: binDir, name: name, uid: uid, gid: gid, home: u.HomeDir}
	t.Cleanup(func() {
		ru.killAll()
		hostFiles.Lock()
		defer hostFiles.Unlock()
		if out, err := exec.Command("userdel", "-r", "-f", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
		for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
			if err := removeSubIDs(f, name); err != nil {
				t.Logf("clean %s: %v", f, err)
			}
		}
	})
	// useradd may have given the user subordinate IDs already (Debian's
	// SUB_UID_COUNT); the test decides.
	hostFiles.Lock()
	defer hostFiles.Unlock()
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		if err := removeSubIDs(f, name); err != nil {
			t.Fatal(err)
		}
	}
	return ru
}

func run(t tb, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
}

// hostFiles serializes the tests' changes to the host's user database:
// useradd and userdel lock /etc/passwd and fail at once while another
// holds it, and /etc/subuid and /etc/subgid are read and rewritten whole.
var hostFiles sync.Mutex

// rootlessUps serializes the rootless tests' `kubernix up`s: each picks
// the first free apiserver and registry ports on the host's 127.0.0.1
// (6443, 5000 and up), which it binds only later, so two ups at once
// could pick the same.
var rootlessUps sync.Mutex

// rootlessParallel lets rootless test t run beside the package's other
// parallel tests (t.Parallel), after every sequential one, hostAlone ones
// included (kindRootless). A rootless
// cluster lives in rootlesskit's namespaces: all it holds on the host is
// its user, cgroups and ports on 127.0.0.1. Only a test whose user and
// CIDR are its own, that expects no particular apiserver or registry port
// (another rootless cluster may hold the default) and publishes no port
// another test publishes may call it.
func rootlessParallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	slots.acquire(t, weightDefault, kindRootless)
}

// addSubIDs grants the user 65536 subordinate uids and gids from a range
// no other line of /etc/subuid or /etc/subgid uses (from 200000 up), as
// `usermod --add-subuids` would.
func (u *rootlessUser) addSubIDs() {
	u.t.Helper()
	hostFiles.Lock()
	defer hostFiles.Unlock()
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		start, err := freeSubIDRange(f, 200000, 65536)
		if err != nil {
			u.t.Fatal(err)
		}
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			u.t.Fatal(err)
		}
		_, err = fmt.Fprintf(fh, "%s:%d:65536\n", u.name, start)
		fh.Close()
		if err != nil {
			u.t.Fatal(err)
		}
	}
}

// freeSubIDRange returns the first start ≥ from where count IDs overlap no
// range in file.
func freeSubIDRange(file string, from, count int) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	start := from
	for again := true; again; {
		again = false
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Split(strings.TrimSpace(line), ":")
			if len(f) != 3 {
				continue
			}
			s, err1 := strconv.Atoi(f[1])
			n, err2 := strconv.Atoi(f[2])
			if err1 == nil && err2 == nil && start < s+n && s < start+count {
				start, again = s+n, true
			}
		}
	}
	return start, nil
}

// removeSubIDs drops the user's lines from file.
func removeSubIDs(file, name string) error {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(line, name+":") {
			keep = append(keep, line)
		}
	}
	return os.WriteFile(file, []byte(strings.Join(keep, "")), 0o644)
}

// tun counts the tests that need /dev/net/tun open to every user: the
// first makes it so (mode 0666) and the last one to end restores its mode.
var tun struct {
	mu    sync.Mutex
	users int
	mode  os.FileMode
	set   bool // the first one changed the mode
}

// openTun lets every user open /dev/net/tun (mode 0666) while the test
// runs (see tun).
func (u *rootlessUser) openTun() {
	u.t.Helper()
	tun.mu.Lock()
	defer tun.mu.Unlock()
	if tun.users == 0 {
		st, err := os.Stat("/dev/net/tun")
		if err != nil {
			u.t.Skipf("integration test: no /dev/net/tun: %v", err)
		}
		tun.mode, tun.set = st.Mode().Perm(), false
		if tun.mode&0o006 != 0o006 {
			if err := os.Chmod("/dev/net/tun", 0o666); err != nil {
				u.t.Fatal(err)
			}
			tun.set = true
		}
	}
	tun.users++
	u.t.Cleanup(func() {
		tun.mu.Lock()
		defer tun.mu.Unlock()
		tun.users--
		if tun.users == 0 && tun.set {
			if err := os.Chmod("/dev/net/tun", tun.mode); err != nil {
				u.t.Errorf("restore mode of /dev/net/tun: %v", err)
			}
		}
	})
}

// cgroupParent is the subtree delegated to the user.
func (u *rootlessUser) cgroupParent() string { return "kubernix-" + strconv.Itoa(u.uid) }

// cgroupMounts lists the mount points of every cgroup hierarchy.
func cgroupMounts(t tb) []string {
	t.Helper()
	mounts, err := cgroup.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	return mounts
}

// delegateCgroups gives the user the cgroup kubernix-<uid> in every
// hierarchy (v1 controllers and the cgroup2 mount), as systemd's
// Delegate=yes would on a unified host: created, with the cpuset's CPUs
// and memory nodes of the root, and chowned to the user. On a cgroup2-only
// host the user's own session cgroup would serve, but the test's user has
// no session. They are removed at the end.
func (u *rootlessUser) delegateCgroups() {
	u.t.Helper()
	var made []string
	u.t.Cleanup(func() {
		u.killAll() // a failed down leaves processes in them
		for _, d := range made {
			removeCgroupTree(u.t, d)
		}
	})
	for _, m := range cgroupMounts(u.t) {
		dir := filepath.Join(m, u.cgroupParent())
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			u.t.Fatal(err)
		}
		made = append(made, dir)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(m, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					u.t.Fatal(err)
				}
			}
		}
		err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, u.uid, u.gid)
		})
		if err != nil {
			u.t.Fatal(err)
		}
	}
}

// removeCgroupTree removes dir and the cgroups below it, deepest first.
func removeCgroupTree(t tb, dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			t.Logf("remove cgroup %s: %v", d, err)
		}
	}
}

// childCgroups lists the cgroups below the user's delegated subtree.
func (u *rootlessUser) childCgroups() []string {
	var out []string
	for _, m := range cgroupMounts(u.t) {
		entries, _ := os.ReadDir(filepath.Join(m, u.cgroupParent()))
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(m, u.cgroupParent(), e.Name()))
			}
		}
	}
	return out
}

// environ is the user's login environment: no KUBECONFIG, so kubectl
// and kubernix use ~/.kube/config.
func (u *rootlessUser) environ() []string {
	path := u.path
	if path == "" {
		path = u.binDir + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	}
	return []string{"HOME=" + u.home, "USER=" + u.name, "LOGNAME=" + u.name, "SHELL=/bin/sh", "PATH=" + path}
}

// command runs argv as the user, in the user's home.
func (u *rootlessUser) command(ctx context.Context, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = u.environ()
	cmd.Dir = u.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}}
	return cmd
}

// kubernix runs kubernix as the user and returns its combined output and
// exit code.
func (u *rootlessUser) kubernix(ctx context.Context, args ...string) (string, int) {
	u.t.Helper()
	if len(args) > 0 && args[0] == "up" {
		rootlessUps.Lock()
		defer rootlessUps.Unlock()
	}
	out, err := u.command(ctx, append([]string{filepath.Join(u.binDir, "kubernix")}, args...)...).CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

// kubectl runs kubectl as the user with the given context.
func (u *rootlessUser) kubectl(ctx context.Context, kctx string, args ...string) (string, error) {
	u.t.Helper()
	cmd := u.command(ctx, append([]string{filepath.Join(u.binDir, "kubectl"), "--context", kctx}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (u *rootlessUser) mustKubectl(ctx context.Context, kctx string, args ...string) string {
	u.t.Helper()
	out, err := u.kubectl(ctx, kctx, args...)
	if err != nil {
		u.t.Fatal(err)
	}
	return out
}

// processes lists the live (not zombie) processes whose real uid is the
// user's, or one of the user's subordinate uids (containers' non-root
// users), or whose command line mentions the user's home.
func (u *rootlessUser) processes() []string {
	var out []string
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		if p.PID == os.Getpid() {
			continue
		}
		st, err1 := p.Stat()
		status, err2 := p.NewStatus()
		if err1 != nil || err2 != nil || st.State == "Z" || st.State == "X" {
			continue
		}
		uid := int(status.UIDs[0])
		cmdline, _ := p.CmdLine()
		argv := strings.Join(cmdline, " ")
		if uid == u.uid || strings.Contains(argv, u.home) {
			out = append(out, fmt.Sprintf("pid %d (uid %d): %s", p.PID, uid, argv))
		}
	}
	return out
}

// killAll SIGKILLs every process of the user, by PID, so userdel works
// after a failed test.
func (u *rootlessUser) killAll() {
	for _, p := range u.processes() {
		var pid int
		if _, err := fmt.Sscanf(p, "pid %d", &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
}

// TestRootlessMissingPrerequisite checks that `kubernix up` as a user
// whose host lacks a rootless prerequisite (here: no /etc/subuid range)
// fails before anything starts, naming what is missing.
func TestRootlessMissingPrerequisite(t *testing.T) {
	u := newRootlessUser(t, "kxrootless2")
	u.openTun()
	u.delegateCgroups()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := u.kubernix(ctx, "up", "--detach", "--name", "e2e-rlx", "--cidr", "10.207.0.0/16")
	if code == 0 || !strings.Contains(out, "/etc/subuid") || !strings.Contains(out, "usermod --add-subuids") {
		t.Fatalf("up without subordinate IDs: exit %d, output:\n%s\nwant a non-zero exit naming /etc/subuid and how to fix it", code, out)
	}
	t.Logf("up refused as it should:\n%s", out)
	state := filepath.Join(u.home, ".local", "share", "kubernix", "e2e-rlx")
	for _, f := range []string{"kubernix.toml", "rootless.json", "run"} {
		if _, err := os.Stat(filepath.Join(state, f)); err == nil {
			t.Errorf("refused up wrote %s", filepath.Join(state, f))
		}
	}
	if left := u.processes(); len(left) > 0 {
		t.Errorf("refused up left processes:\n%s", strings.Join(left, "\n"))
	}
	out, code = u.kubernix(ctx, "doctor")
	if code == 0 || !strings.Contains(out, "FAIL  /etc/subuid") {
		t.Errorf("doctor as the user: exit %d, output:\n%s\nwant a failed /etc/subuid check", code, out)
	}
}

// rootlessCluster is a cluster an ordinary user runs in the default
// state dir.
type rootlessCluster struct {
	u                 *rootlessUser
	name, kctx, state string
	// cidr is the cluster's range; "" until the test picks it.
	cidr string
	// namespace is the one kubectl acts in (kubectl); "" for the context's.
	namespace string
	// dir is where the test writes manifests the user's kubectl reads.
	dir string
}

// newRootlessCluster creates the user userName with the host prepared for
// rootless clusters (subordinate IDs, /dev/net/tun, delegated cgroups),
// and names the user's cluster name (keep it short: the default state
// dir is long, and socket paths are limited). The cluster is brought down
// when the test ends.
func newRootlessCluster(t *testing.T, userName, name string) *rootlessCluster {
	u := newRootlessUser(t, userName)
	u.addSubIDs()
	u.openTun()
	u.delegateCgroups()
	t.Cleanup(func() {
		if out, code := u.kubernix(context.Background(), "down", "--name", name); code != 0 {
			t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})
	return &rootlessCluster{u: u, name: name, kctx: "kubernix-" + name,
		state: filepath.Join(u.home, ".local", "share", "kubernix", name), dir: u.home}
}

// TestRootless checks a cluster an ordinary user runs, on the shared
// rootless cluster (sharedRootlessCluster: the host prepared as a laptop
// comes prepared for rootless containers, an ordinary user with
// subordinate IDs, /dev/net/tun usable, a delegated cgroup subtree; `kubernix
// up --detach` as that user): its components run as the user, kubectl on
// the host through the merged context, a pod reached with kubectl exec,
// hostPID and hostNetwork pods, NetworkPolicies enforced as in
// TestNetworkPolicy (issue #26), status as the user. That `kubernix down`
// leaves nothing behind (no process, no cgroup below the delegated
// subtree, no kubeconfig context, no network) TestMain checks when it
// brings the shared cluster down (sharedRL.close).
func TestRootless(t *testing.T) {
	rc := sharedRootlessCluster(t)
	u, name, kctx, state := rc.u, rc.name, rc.kctx, rc.state
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	t.Run("runs as the user", func(t *testing.T) {
		for _, comp := range []string{"control-plane/kube-apiserver", "control-plane/etcd", name + "-node-0/kubelet", name + "-node-0/containerd", "supervisor/kubernix"} {
			b, err := os.ReadFile(filepath.Join(state, "run", comp, "pid"))
			if err != nil {
				t.Errorf("%s: %v", comp, err)
				continue
			}
			st, err := os.Stat(filepath.Join("/proc", strings.TrimSpace(string(b))))
			if err != nil {
				t.Errorf("%s (pid %s) not running: %v", comp, strings.TrimSpace(string(b)), err)
				continue
			}
			if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != u.uid {
				t.Errorf("%s runs as uid %d, want the user's %d", comp, uid, u.uid)
			}
		}
	})

	t.Run("kubectl on the host through the merged context", func(t *testing.T) {
		server := u.mustKubectl(ctx, kctx, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
		if !strings.HasPrefix(server, "https://127.0.0.1:") {
			t.Errorf("context %s points at %q, want https://127.0.0.1:<port>", kctx, server)
		}
		out := u.mustKubectl(ctx, kctx, "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}")
		if strings.TrimSpace(out) != name+"-node-0 True" {
			t.Fatalf("nodes = %q, want one Ready node %s-node-0", out, name)
		}
	})

	t.Run("pod reached with kubectl exec", func(t *testing.T) {
		manifest := filepath.Join(rc.dir, "pod.yaml")
		err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: agnhost}
spec:
  containers:
    - name: agnhost
      image: `+agnhost+`
      imagePullPolicy: Never
      args: ["pause"]
      resources:
        limits: {cpu: 100m, memory: 64Mi}
`), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		rc.mustKubectl(ctx, "apply", "-f", manifest)
		rc.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/agnhost", "--timeout=120s")
		out := rc.mustKubectl(ctx, "exec", "agnhost", "--", "cat", "/etc/hostname")
		if strings.TrimSpace(out) != "agnhost" {
			t.Errorf("exec cat /etc/hostname = %q, want agnhost", out)
		}
		// The memory limit reached the pod's cgroup below the delegated subtree.
		uid := strings.TrimSpace(rc.mustKubectl(ctx, "get", "pod", "agnhost", "-o", "jsonpath={.metadata.uid}"))
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/memory", u.cgroupParent(), name+"-node-0", "kubepods", "pod*", "memory.limit_in_bytes"))
		found := false
		for _, m := range matches {
			if b, err := os.ReadFile(m); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(64<<20) && (strings.Contains(m, uid) || strings.Contains(m, strings.ReplaceAll(uid, "-", "_"))) {
				found = true
			}
		}
		if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil && !found { // cgroup v1 memory hierarchy
			t.Errorf("no cgroup of pod %s with a 64Mi memory limit under the delegated subtree (%v)", uid, matches)
		}
	})

	// Without the runtime wrapper, runc fails both: a new proc for a pid
	// namespace the user namespace does not own, and setns into the
	// host's pid and uts namespaces, are refused.
	t.Run("hostPID and hostNetwork pods", func(t *testing.T) {
		manifest := filepath.Join(rc.dir, "host.yaml")
		err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: hostpid}
spec:
  hostPID: true
  containers: [{name: c, image: `+agnhost+`, imagePullPolicy: Never, args: ["pause"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  containers: [{name: c, image: `+agnhost+`, imagePullPolicy: Never, args: ["pause"]}]
`), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		rc.mustKubectl(ctx, "apply", "-f", manifest)
		rc.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/hostpid", "pod/hostnet", "--timeout=120s")
		// hostPID: the supervisor (a process of rootlesskit's pid
		// namespace, the host's) is visible.
		sup, err := os.ReadFile(filepath.Join(state, "run", "supervisor", "kubernix", "pid"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.kubectl(ctx, "exec", "hostpid", "--", "test", "-d", "/proc/"+strings.TrimSpace(string(sup))); err != nil {
			t.Errorf("hostPID pod does not see the supervisor's pid %s: %v", strings.TrimSpace(string(sup)), err)
		}
		out := rc.mustKubectl(ctx, "exec", "hostnet", "--", "cat", "/proc/net/dev")
		if !strings.Contains(out, "tap0") {
			t.Errorf("hostNetwork pod does not see the namespace's tap0:\n%s", out)
		}
	})

	// Issue #26: the node's netpol-agent enforces policies rootless too,
	// the checks of TestNetworkPolicy on the one node.
	t.Run("NetworkPolicies enforced", func(t *testing.T) {
		node := name + "-node-0"
		c := netpolCluster{
			kubectl:     func(ctx context.Context, args ...string) (string, error) { return u.kubectl(ctx, kctx, args...) },
			manifestDir: rc.dir, namespace: rc.namespace, nodes: [2]string{node, node},
		}
		checkNetworkPolicies(ctx, t, c)
	})

	t.Run("status as the user", func(t *testing.T) {
		if out, code := u.kubernix(ctx, "status", "--name", name); code != 0 {
			t.Errorf("status exited %d:\n%s", code, out)
		}
	})
}
