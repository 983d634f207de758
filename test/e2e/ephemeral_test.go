package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestEphemeral (issue 30): an ephemeral cluster (--ephemeral) runs etcd
// without fsync and the apiserver without its watch cache, says so in its
// status, and is deleted when it goes down: its state dir, its
// entry in `kubernix list` and its kubeconfig context go, and nothing of
// it is left on the host. That holds for down, for down after the
// supervisor was SIGKILLed, and for a foreground up ended with Ctrl-C.
// A stopped cluster that is not ephemeral is not made one.
func TestEphemeral(t *testing.T) {
	e := newEnv(t, "e2e-eph", "10.235.0.0/16", leanAddons, "--ephemeral")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()

	t.Run("down deletes it, etcd without fsync, no watch cache", func(t *testing.T) {
		e.mustKubernix(ctx, "up", "--detach")
		for component, flag := range map[string]string{"etcd": "--unsafe-no-fsync", "kube-apiserver": "--watch-cache=false"} {
			pid := readPid(t, filepath.Join(e.stateDir, "run", "control-plane", component, "pid"))
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if err != nil || !strings.Contains(string(cmdline)+"\x00", "\x00"+flag+"\x00") {
				t.Errorf("%s of an ephemeral cluster runs without %s (%v): %q", component, flag, err, cmdline)
			}
		}
		if c, ok := e.listed(ctx, t); !ok || c.State != "running" {
			t.Errorf("kubernix list shows %+v (listed: %v), want it running", c, ok)
		}
		if out := e.mustKubernix(ctx, "status", "-o", "json"); !strings.Contains(out, `"ephemeral": true`) {
			t.Errorf("status -o json does not say the cluster is ephemeral:\n%s", out)
		}
		if out := e.mustKubernix(ctx, "down"); !strings.Contains(out, "deleted (ephemeral: state dir "+e.stateDir+" removed)") {
			t.Errorf("down of an ephemeral cluster does not say it deleted it:\n%s", out)
		}
		e.wantDeleted(ctx, t)
	})

	t.Run("SIGKILLed supervisor, then down deletes it", func(t *testing.T) {
		e.mustKubernix(ctx, "up", "--detach")
		e.killSupervisor(t)
		e.mustKubernix(ctx, "down")
		e.wantDeleted(ctx, t)
	})

	t.Run("a foreground up ended with Ctrl-C deletes it", func(t *testing.T) {
		e.upForeground(ctx, t).stop(t, syscall.SIGINT)
		e.wantDeleted(ctx, t)
	})

	t.Run("a stopped cluster is not made ephemeral", func(t *testing.T) {
		e.mustKubernix(ctx, "up", "--detach", "--ephemeral=false")
		e.mustKubernix(ctx, "down")
		before := dirList(t, e.stateDir)
		out, code := e.kubernix(ctx, "up", "--detach")
		if code != 2 || !strings.Contains(out, "ephemeral: false → true (needs a new cluster") {
			t.Errorf("up --ephemeral of a stopped cluster that is not ephemeral: exit %d, want 2 naming the setting:\n%s", code, out)
		}
		if after := dirList(t, e.stateDir); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("the refused up changed the state dir: %q, then %q", before, after)
		}
		e.mustKubernix(ctx, "delete")
	})
}

// wantDeleted checks that e's cluster is gone as `kubernix delete` leaves
// it: no state dir, not in `kubernix list`, no context in the kubeconfig
// up merged it into, nothing on the host.
func (e *env) wantDeleted(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := os.Stat(e.stateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir %s is still there (%v)", e.stateDir, err)
	}
	if c, ok := e.listed(ctx, t); ok {
		t.Errorf("kubernix list still shows the cluster: %+v", c)
	}
	if cfg, err := clientcmd.LoadFromFile(e.kubeconfig); err == nil && cfg.Contexts["kubernix-"+e.name] != nil {
		t.Errorf("%s still has context kubernix-%s", e.kubeconfig, e.name)
	}
	if left := e.leftovers([]string{e.name + "-node-0"}, false); len(left) > 0 {
		t.Errorf("left on the host:\n%s", strings.Join(left, "\n"))
	}
}

// TestEphemeralRootless (issue 30): an ordinary user's ephemeral cluster
// is deleted by down as root's is: its state dir (which holds files of
// the user's subordinate IDs), its context in the user's kubeconfig and
// its entry in the user's `kubernix list` go, and none of the user's
// processes is left.
func TestEphemeralRootless(t *testing.T) {
	rootlessParallel(t)
	rc := newRootlessCluster(t, "kxeph", "kxe-rl")
	u := rc.u
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, code := u.kubernix(ctx, "up", "--detach", "--ephemeral", "--name", rc.name, "--cidr", "10.236.0.0/16", leanAddons); code != 0 {
		t.Fatalf("up --detach --ephemeral as %s exited %d:\n%s", u.name, code, out)
	}
	u.mustKubectl(ctx, rc.kctx, "wait", "--for=condition=Ready", "node/"+rc.name+"-node-0", "--timeout=60s")
	out, code := u.kubernix(ctx, "down", "--name", rc.name)
	if code != 0 || !strings.Contains(out, "deleted (ephemeral: state dir "+rc.state+" removed)") {
		t.Errorf("down of an ephemeral cluster as %s: exit %d, want 0 saying it deleted it:\n%s", u.name, code, out)
	}
	if _, err := os.Stat(rc.state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir %s is still there (%v)", rc.state, err)
	}
	if list, code := u.kubernix(ctx, "list"); code != 0 || strings.Contains(list, rc.name) {
		t.Errorf("kubernix list as %s (exit %d) still shows %s:\n%s", u.name, code, rc.name, list)
	}
	if cfg, err := clientcmd.LoadFromFile(filepath.Join(u.home, ".kube", "config")); err == nil && cfg.Contexts[rc.kctx] != nil {
		t.Errorf("the user's kubeconfig still has context %s", rc.kctx)
	}
	if left := u.processes(); len(left) > 0 {
		t.Errorf("processes of %s left:\n%s", u.name, strings.Join(left, "\n"))
	}
}
