package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestForegroundSIGHUP: a foreground supervisor whose terminal closes
// (SIGHUP) brings its cluster down in order, as Ctrl-C does, and leaves
// nothing behind (issue #11, item 5).
func TestForegroundSIGHUP(t *testing.T) {
	e := newEnv(t, "e2e-hup", "10.65.0.0/16", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e.downOnCleanup()
	// Run under nohup, this test would hand SIGHUP down ignored; a handler
	// of its own gives the child the default disposition.
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}

	fg := e.upForeground(ctx, t)
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node/e2e-hup-node-0", "--timeout=60s")

	fg.stop(t, syscall.SIGHUP)
	if !strings.Contains(fg.output(), `bringing cluster "e2e-hup" down`) {
		t.Errorf("up did not bring the cluster down:\n%s", fg.output())
	}
	if left := e.leftovers([]string{"e2e-hup-node-0"}, true); len(left) > 0 {
		t.Fatalf("SIGHUP left behind:\n%s", strings.Join(left, "\n"))
	}
}

// foreground is a foreground `kubernix up` a test started.
type foreground struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan error
}

// upForeground starts `kubernix up --no-shell` of e's cluster in the
// foreground, its output to a file, and waits until it supervises.
func (e *env) upForeground(ctx context.Context, t *testing.T) *foreground {
	t.Helper()
	fg := &foreground{logPath: filepath.Join(t.TempDir(), "up.log"), exited: make(chan error, 1)}
	fg.cmd = exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), append([]string{"up", "--no-shell"}, e.args()...)...)
	fg.cmd.Env = e.environ()
	log, err := os.Create(fg.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the child has its own copy
	fg.cmd.Stdout, fg.cmd.Stderr = log, log
	if err := fg.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { fg.exited <- fg.cmd.Wait() }()
	eventually(t, 5*time.Minute, "up supervises", func() error {
		select {
		case err := <-fg.exited:
			t.Fatalf("foreground up exited before it supervised (%v):\n%s", err, fg.output())
		default:
		}
		if !strings.Contains(fg.output(), "\nsupervising;") {
			return errors.New("not yet")
		}
		return nil
	})
	return fg
}

// output is what the foreground up printed so far.
func (fg *foreground) output() string {
	b, _ := os.ReadFile(fg.logPath)
	return string(b)
}

// stop sends the foreground up sig and waits, up to 5 minutes, for it to
// exit 0 (an orderly down).
func (fg *foreground) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := fg.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fg.exited:
		if err != nil {
			t.Errorf("up exited with %v after %v, want an orderly down (exit 0):\n%s", err, sig, fg.output())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("up still runs 5 minutes after %v:\n%s", sig, fg.output())
	}
}

// TestSupervision: two concurrent `up` of one cluster leave one working
// cluster and one clear error (issue #11, item 6); then a hung
// kube-apiserver (SIGSTOP) is found by its liveness check and restarted,
// and the cluster recovers (item 5).
func TestSupervision(t *testing.T) {
	e := newEnv(t, "e2e-sup", "10.63.0.0/16", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()
	node := "e2e-sup-node-0"

	t.Run("two concurrent ups: one cluster, one clear error", func(t *testing.T) {
		type result struct {
			out  string
			code int
		}
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				out, code := e.kubernix(ctx, "up", "--detach")
				results[i] = result{out, code}
			})
		}
		wg.Wait()
		var won, lost []result
		for _, r := range results {
			if r.code == 0 {
				won = append(won, r)
			} else {
				lost = append(lost, r)
			}
		}
		if len(won) != 1 || len(lost) != 1 {
			t.Fatalf("exits %d and %d, want one 0 and one error:\n--- first:\n%s\n--- second:\n%s",
				results[0].code, results[1].code, results[0].out, results[1].out)
		}
		if !strings.Contains(lost[0].out, `cluster "e2e-sup" is being started or supervised by pid`) {
			t.Errorf("the second up's error does not say who runs the cluster:\n%s", lost[0].out)
		}
		t.Logf("the second up (exit %d):\n%s", lost[0].code, lost[0].out)
		e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node/"+node, "--timeout=60s")
		if out, code := e.kubernix(ctx, "status"); code != 0 {
			t.Fatalf("status after the concurrent ups exited %d:\n%s", code, out)
		}
	})

	t.Run("hung apiserver restarted, cluster recovers", func(t *testing.T) {
		if _, code := e.kubernix(ctx, "status"); code != 0 { // the subtest above failed
			e.kubernix(ctx, "down")
			if out, code := e.kubernix(ctx, "up", "--detach"); code != 0 {
				t.Fatalf("up exited %d:\n%s", code, out)
			}
		}
		pidFile := filepath.Join(e.stateDir, "run", "control-plane", "kube-apiserver", "pid")
		old := readPid(t, pidFile)
		if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Leave no stopped process behind if the test fails.
		defer syscall.Kill(old, syscall.SIGCONT)
		eventually(t, 3*time.Minute, "a new kube-apiserver", func() error {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return err
			}
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err != nil {
				return err
			}
			if pid == old || syscall.Kill(pid, 0) != nil {
				return fmt.Errorf("kube-apiserver pid %d (hung: %d) is not a new live process", pid, old)
			}
			return nil
		})
		if err := syscall.Kill(old, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the hung kube-apiserver (pid %d) still exists: kill -0 = %v", old, err)
		}
		eventually(t, 2*time.Minute, "kubectl against the restarted apiserver", func() error {
			_, err := e.kubectl(ctx, "get", "nodes")
			return err
		})
		e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node/"+node, "--timeout=120s")
		var status string
		eventually(t, 2*time.Minute, "status healthy", func() error {
			out, code := e.kubernix(ctx, "status")
			status = out
			if code != 0 {
				return fmt.Errorf("status exited %d:\n%s", code, out)
			}
			return nil
		})
		t.Logf("status after the restart:\n%s", status)
		if !strings.Contains(status, "liveness check failed") {
			t.Errorf("status does not show the apiserver's liveness failure:\n%s", status)
		}
		restarts := ""
		for _, line := range strings.Split(status, "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[0] == "kube-apiserver" {
				restarts = f[4]
			}
		}
		if restarts != "1" {
			t.Errorf("status shows %q restarts of kube-apiserver, want 1:\n%s", restarts, status)
		}
	})

	out := e.mustKubernix(ctx, "down")
	t.Logf("down:\n%s", out)
	if left := e.leftovers([]string{node}, true); len(left) > 0 {
		t.Fatalf("down left behind:\n%s", strings.Join(left, "\n"))
	}
}

// downOnCleanup brings the cluster down when the test ends, whatever
// state the test left it in.
func (e *env) downOnCleanup() {
	e.t.Cleanup(func() {
		if out, code := e.kubernix(context.Background(), "down"); code != 0 {
			e.t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})
}
