package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/process"
)

// TestKubeconfigStaleLock (issue 23, item 7): a kubernix killed with
// SIGKILL while it merges its context leaves the kubeconfig's lock file
// (kubectl refuses to write while it exists); the next kubernix that
// meets it removes it, saying so, and merges. A lock whose holder runs is
// never removed.
//
// The first up is really killed at the merge: its kubeconfig is a FIFO,
// so the merge, once it holds the lock, waits in the read of the file
// until the test kills the supervisor that holds it.
func TestKubeconfigStaleLock(t *testing.T) {
	first := newEnv(t, "kxlock1", "10.132.0.0/16", leanAddons)
	first.parallelAt(weightLong)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	kubeconfig := first.kubeconfig
	lock := kubeconfig + ".lock"
	if err := unix.Mkfifo(kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	first.downOnCleanup()

	up := exec.CommandContext(ctx, filepath.Join(first.binDir, "kubernix"), append([]string{"up"}, first.argsOf("up")...)...)
	up.Args = append(up.Args, "--detach")
	up.Env = first.environ()
	var upOut bytes.Buffer
	up.Stdout, up.Stderr = &upOut, &upOut
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	upDone := make(chan error, 1)
	go func() { upDone <- up.Wait() }()
	var holder int
	eventually(t, 10*time.Minute, "the first up holds "+lock, func() error {
		select {
		case err := <-upDone:
			t.Fatalf("up exited (%v) before it locked the kubeconfig:\n%s", err, upOut.String())
		default:
		}
		b, err := os.ReadFile(lock)
		if err != nil {
			return err
		}
		var rec struct {
			Owner string `json:"owner"`
			PID   int    `json:"pid"`
		}
		if err := json.Unmarshal(b, &rec); err == nil && rec.Owner == "kubernix" && rec.PID > 0 {
			holder = rec.PID
			return nil
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 { // an older kubernix's lock
			holder = pid
			return nil
		}
		return fmt.Errorf("%s holds %q, no pid yet", lock, b)
	})
	sup := readPid(t, filepath.Join(first.stateDir, "run", "supervisor", "kubernix", "pid"))
	if holder != sup {
		t.Fatalf("%s names pid %d, the supervisor is %d", lock, holder, sup)
	}
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-upDone
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the killed merge left no lock (%v): nothing to test", err)
	}
	// The killed cluster goes; its down finds no kubeconfig to clean and
	// leaves the lock alone.
	if err := os.Remove(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if out, code := first.kubernix(ctx, "down"); code != 0 {
		t.Fatalf("down of the killed cluster exited %d:\n%s", code, out)
	}
	stale, err := os.ReadFile(lock)
	if err != nil {
		t.Fatalf("the lock is gone before the next up: %v", err)
	}

	second := newEnv(t, "kxlock2", "10.133.0.0/16", leanAddons)
	second.parallel()
	second.kubeconfig = kubeconfig
	second.downOnCleanup()
	out := second.mustKubernix(ctx, "up", "--detach")
	t.Logf("up with the stale lock:\n%s", out)
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale lock %s is still there (%v)", lock, err)
	}
	supLog := string(mustRead(t, filepath.Join(second.stateDir, "logs", "supervisor", "supervisor.log")))
	if !strings.Contains(supLog, "removed a stale lock of the kubeconfig") || !strings.Contains(supLog, lock) ||
		!strings.Contains(supLog, "pid "+strconv.Itoa(sup)) {
		t.Errorf("the supervisor's log does not note that it removed the stale lock %s of pid %d (%q):\n%s", lock, sup, stale, supLog)
	}
	if cfg, err := clientcmd.LoadFromFile(kubeconfig); err != nil || cfg.Contexts["kubernix-kxlock2"] == nil || cfg.CurrentContext != "kubernix-kxlock2" {
		t.Fatalf("the context kubernix-kxlock2 was not merged into %s (%v); up said:\n%s", kubeconfig, err, out)
	}
	second.mustKubectl(ctx, "get", "nodes")

	// A lock whose holder runs stays: down waits for it, keeps the
	// context and its record, and says which file is locked.
	sleeper := exec.Command("sleep", "1000")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	live := liveLockRecord(t, sleeper.Process.Pid)
	if err := os.WriteFile(lock, live, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := second.kubernix(ctx, "down")
	if code != 0 {
		t.Fatalf("down with a live lock exited %d:\n%s", code, out)
	}
	if b, err := os.ReadFile(lock); err != nil || !bytes.Equal(b, live) {
		t.Errorf("the live lock was removed or changed (%v): %q", err, b)
	}
	for _, want := range []string{lock, "which is running"} {
		if !strings.Contains(out, want) {
			t.Errorf("down's output does not say %q:\n%s", want, out)
		}
	}
	if cfg, err := clientcmd.LoadFromFile(kubeconfig); err != nil || cfg.Contexts["kubernix-kxlock2"] == nil {
		t.Errorf("down changed the locked kubeconfig (%v)", err)
	}
	// Once the holder is done, the next down removes the context.
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	second.mustKubernix(ctx, "down")
	if cfg, err := clientcmd.LoadFromFile(kubeconfig); err != nil || cfg.Contexts["kubernix-kxlock2"] != nil {
		t.Errorf("the context is still in %s after down (%v)", kubeconfig, err)
	}
}

// liveLockRecord is the lock record kubernix writes, for the running
// process pid on this host.
func liveLockRecord(t *testing.T, pid int) []byte {
	t.Helper()
	start, err := process.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	boot := strings.TrimSpace(string(mustRead(t, "/proc/sys/kernel/random/boot_id")))
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{
		"owner": "kubernix", "pid": pid, "start_time": start, "pid_namespace": ns, "boot_id": boot, "host": host,
	})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
