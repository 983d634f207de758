package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/process"
)

// stateDirCIDR is the range of this file's clusters.
const stateDirCIDR = "10.251.0.0/16"

// nobody is the uid (and gid) of the other local user these tests act as.
const nobody = 65534

// TestStateDirOwnerRefused (issue 23, item 3): root refuses, for up, a
// state dir that another user owns or can write, or that lies below a
// directory another user owns or can write (not sticky): exit 2, the path
// named, and nothing changed: the state dir as it was (entries, owner,
// mode), no name claim, none of the cluster's processes, mounts, links,
// chains or routes.
func TestStateDirOwnerRefused(t *testing.T) {
	tests := []struct {
		name string
		// prepare changes the test's state dir and returns the one up
		// gets and the path the message must name.
		prepare func(t *testing.T, dir string) (stateDir, want string)
	}{
		{"owned by another user, empty", func(t *testing.T, dir string) (string, string) {
			chown(t, dir, nobody)
			return dir, dir + " is owned by uid 65534"
		}},
		{"writable by others", func(t *testing.T, dir string) (string, string) {
			chmod(t, dir, 0o777)
			return dir, dir + " is writable by its group or others (mode 0777)"
		}},
		{"writable by its group", func(t *testing.T, dir string) (string, string) {
			chmod(t, dir, 0o770)
			return dir, dir + " is writable by its group or others (mode 0770)"
		}},
		{"below a directory another user owns", func(t *testing.T, dir string) (string, string) {
			state := mkdir(t, filepath.Join(dir, "state"))
			chmod(t, dir, 0o755)
			chown(t, dir, nobody)
			return state, dir + ", on the way to " + state + ", is owned by uid 65534"
		}},
		{"below a directory others can write", func(t *testing.T, dir string) (string, string) {
			state := mkdir(t, filepath.Join(dir, "state"))
			chmod(t, dir, 0o777)
			return state, dir + ", on the way to " + state + ", is writable by its group or others (mode 0777) and not sticky"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "sd-e2e-own", stateDirCIDR)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var want string
			e.stateDir, want = tt.prepare(t, e.stateDir)
			before := statLine(t, e.stateDir)
			e.upRefused(ctx, t, []string{"--detach"}, want, "--state-dir")
			if after := statLine(t, e.stateDir); after != before {
				t.Errorf("refused up changed the state dir: %s, then %s", before, after)
			}
			if _, err := os.Stat("/run/kubernix/names/" + e.name); err == nil {
				t.Errorf("refused up claimed the name: /run/kubernix/names/%s exists", e.name)
			}
		})
	}
}

// TestForgedStateDirRefused (issue 23, item 3): a state dir that another
// user made, holding records that name what is not theirs (rootless.json
// naming a directory of root's as rootlesskit's state dir, a run record
// naming a process of root's, a node's mount-points.json naming a
// directory of root's), is refused by down, delete and status: exit 2,
// the state dir named, nothing removed, nothing signalled.
func TestForgedStateDirRefused(t *testing.T) {
	e := newEnv(t, "sd-e2e-forged", stateDirCIDR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	victims := t.TempDir()
	kitDir := mkdir(t, filepath.Join(victims, "kit"))
	writeFile(t, filepath.Join(kitDir, "precious"), "root's\n")
	mountPoint := mkdir(t, filepath.Join(victims, "empty"))
	sleep, start := startSleep(t)

	s := e.stateDir
	writeFile(t, filepath.Join(s, ".kubernix-state"), "")
	writeFile(t, filepath.Join(s, "kubernix.toml"), "name = 'sd-e2e-forged'\nnodes = 1\n")
	b, _ := json.Marshal(map[string]any{"uid": nobody, "rootlesskit_state_dir": kitDir, "host_apiserver": "127.0.0.1:6443"})
	writeFile(t, filepath.Join(s, "rootless.json"), string(b))
	for _, scope := range []string{"control-plane/etcd", "supervisor/rootlesskit"} {
		dir, name := filepath.Split(scope)
		if err := process.Record(filepath.Join(s, "run", scope), name, filepath.Clean(dir), sleep, []string{"sleep"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	b, _ = json.Marshal([]string{mountPoint})
	writeFile(t, filepath.Join(s, "nodes", "sd-e2e-forged-node-0", "mount-points.json"), string(b))
	chownTree(t, s, nobody)
	before := treeList(t, s)

	for _, verb := range []string{"down", "delete", "status"} {
		out, code := e.kubernix(ctx, verb)
		if code != 2 || !strings.Contains(out, s+" is owned by uid 65534") {
			t.Errorf("%s of a state dir uid 65534 made: exit %d, want 2 naming it:\n%s", verb, code, out)
		}
		if startTime(sleep) != start {
			t.Fatalf("%s signalled pid %d, which the forged run records name", verb, sleep)
		}
		for _, p := range []string{filepath.Join(kitDir, "precious"), mountPoint} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("%s removed %s, which the forged records name: %v", verb, p, err)
			}
		}
		if after := treeList(t, s); !slices.Equal(after, before) {
			t.Fatalf("%s changed the forged state dir:\n%s\nthen:\n%s", verb, strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
	}
}

// TestLockHolderNotSignalled (issue 23, item 3): down signals the holder
// of a state dir's lock only when the lock file's record of it checks out
// (its PID with the start time it recorded). Another user who holds the
// lock, through a lock file of theirs or one they opened while it was
// readable (0644, as an older kubernix made it), with a record naming a
// live process of root's that did not take it, gets no signal sent
// there: down is refused (exit 2) for a lock file another user owns, and
// waits in vain (exit 1) for one that is root's, making it 0600.
func TestLockHolderNotSignalled(t *testing.T) {
	hostAlone(t) // its leak check sees every new network namespace
	tests := []struct {
		name string
		// owner owns the lock file; record is its content, from the
		// victim's PID and start time.
		owner    int
		record   func(pid int, start string) string
		wantCode int
		want     string
	}{
		{"another user's lock file", nobody, func(pid int, _ string) string { return fmt.Sprintf("%d up\n", pid) },
			2, ".lock is owned by uid 65534"},
		{"root's readable lock file, another start time", 0, func(pid int, start string) string { return fmt.Sprintf("%d up %s1\n", pid, start) },
			1, "is in use by another process, which holds its lock"},
		{"root's readable lock file, an older kubernix's record", 0, func(pid int, _ string) string { return fmt.Sprintf("%d up\n", pid) },
			1, "is in use by another process, which holds its lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "sd-e2e-lock", stateDirCIDR)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// A stopped cluster's state dir, which others may enter.
			chmod(t, e.stateDir, 0o755)
			writeFile(t, filepath.Join(e.stateDir, ".kubernix-state"), "")
			writeFile(t, filepath.Join(e.stateDir, "kubernix.toml"), "name = 'sd-e2e-lock'\nnodes = 1\n")
			sleep, start := startSleep(t)
			lockFile := filepath.Join(e.stateDir, ".lock")
			writeFile(t, lockFile, tt.record(sleep, start))
			chmod(t, lockFile, 0o644)
			chown(t, lockFile, tt.owner)
			holdLockAs(t, lockFile, nobody)

			out, code := e.kubernix(ctx, "down", "--timeout", "3s")
			if code != tt.wantCode || !strings.Contains(out, tt.want) {
				t.Errorf("down: exit %d, want %d with %q:\n%s", code, tt.wantCode, tt.want, out)
			}
			if startTime(sleep) != start {
				t.Fatalf("down signalled pid %d, which the lock file names but did not take the lock", sleep)
			}
			if st, err := os.Stat(lockFile); tt.owner == 0 && (err != nil || st.Mode().Perm() != 0o600) {
				t.Errorf("root's lock file has mode %v after down (%v), want 0600", st.Mode().Perm(), err)
			}
		})
	}
}

// stateModeExceptions are the entries below a state dir, and the trees
// below them, whose modes the components set, not kubernix: behind
// kubernix's directories, which are 0700 (config.StateDirMode), nobody
// else reaches them. Each key is a path relative to the state dir, with
// "*" for any one name; its value says why.
var stateModeExceptions = map[string]string{
	"etcd":                          "etcd's data directory (etcd makes its directories 0700 and its files 0600)",
	"registry":                      "the local registry's storage, which the registry writes",
	"image-cache":                   "the image importers' content stores, laid out by containerd's content store library",
	"nodes/*/containerd":            "containerd's root, state and opt dirs: image layers keep the modes their tar headers give (an image's /tmp is 1777)",
	"nodes/*/containerd.sock":       "containerd's socket, which it makes 0660 for its [grpc] gid",
	"nodes/*/containerd.sock.ttrpc": "containerd's ttrpc socket, likewise",
	"nodes/*/kubelet":               "the kubelet's root dir: pods' volumes get the modes pods ask for (an emptyDir is 0777)",
	"nodes/*/pod-logs":              "the pods' logs, which containerd and the kubelet write",
	"nodes/*/cni/data":              "the CNI plugins' state (host-local's IP reservations)",
	"nodes/*/kube-proxy-path/nft":   "a symbolic link, whose mode means nothing",
	"nodes/*/netpol-agent-path/nft": "a symbolic link, likewise",
}

// TestStateDirModes (issue 23, item 5): after up, what kubernix wrote in
// the state dir is its owner's alone. Precisely, walking the state dir
// (symbolic links not followed), outside stateModeExceptions:
//   - every directory, the state dir included, is 0700;
//   - every regular file is 0600 (0700 for a script kubernix renders),
//     except public keys and certificates (*.crt, *.pub: 0644);
//   - there is nothing else (no socket, FIFO or link).
//
// kubernix.toml, cluster.toml, the node's containerd.toml and the
// hosts.toml of a registry mirror must be among what is checked.
func TestStateDirModes(t *testing.T) {
	e := newEnv(t, "sd-e2e-modes", stateDirCIDR, "--registry-mirrors", "registry.k8s.io")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if out, code := e.kubernix(context.Background(), "down"); code != 0 {
			t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})
	e.mustKubernix(ctx, "up", "--detach")
	var checked []string
	err := filepath.WalkDir(e.stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.stateDir, path)
		if exception(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		want := fs.FileMode(0o600)
		switch {
		case mode.IsDir():
			want = fs.ModeDir | 0o700
		case strings.HasSuffix(rel, ".crt") || strings.HasSuffix(rel, ".pub"):
			want = 0o644
		case strings.HasPrefix(rel, "bin/"):
			want = 0o700
		}
		if mode != want {
			t.Errorf("%s has mode %v, want %v", rel, mode, want)
		}
		checked = append(checked, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{".", "kubernix.toml", "cluster.toml", "nodes/sd-e2e-modes-node-0/containerd.toml", "registries/registry.k8s.io/hosts.toml", ".lock"} {
		if !slices.Contains(checked, must) {
			t.Errorf("%s was not checked (not there?); checked: %s", must, strings.Join(checked, " "))
		}
	}
	t.Logf("checked %d entries: %s", len(checked), strings.Join(checked, " "))
}

// exception reports whether rel (relative to the state dir) is an entry
// of stateModeExceptions.
func exception(rel string) bool {
	for pattern := range stateModeExceptions {
		if ok, _ := filepath.Match(pattern, rel); ok {
			return true
		}
	}
	return false
}

// startSleep starts `sleep` as a process of the test's (root's), killed
// at the end, and returns its PID and start time.
func startSleep(t *testing.T) (int, string) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	start := startTime(cmd.Process.Pid)
	if start == "" {
		t.Fatalf("no start time of pid %d", cmd.Process.Pid)
	}
	return cmd.Process.Pid, start
}

// holdLockAs takes the flock of file as uid (opened read-only, as
// flock(1) does) in a process that holds it until the test ends, and
// returns once it holds it.
func holdLockAs(t *testing.T, file string, uid int) {
	t.Helper()
	cmd := exec.Command("flock", "--exclusive", file, "sh", "-c", "echo locked; exec sleep 1000")
	// In a process group of its own: flock forks the command, which
	// holds the lock (and the output pipes) too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("flock %s as uid %d: %q, %v: %s", file, uid, line, err, stderr.String())
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// chownTree gives uid every entry of the tree at root, root included.
func chownTree(t *testing.T, root string, uid int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// statLine is dir's entries, owner and mode, to compare before and after.
func statLine(t *testing.T, dir string) string {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s uid %d mode %v: %q", dir, st.Sys().(*syscall.Stat_t).Uid, st.Mode(), dirList(t, dir))
}

// treeList lists every entry of the tree at root with its owner, mode and
// size, sorted.
func treeList(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, path+" uid "+strconv.Itoa(int(info.Sys().(*syscall.Stat_t).Uid))+" "+info.Mode().String()+" "+strconv.FormatInt(info.Size(), 10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
