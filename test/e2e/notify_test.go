package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notifyCIDR is the range of this file's clusters (none starts).
const notifyCIDR = "10.152.0.0/16"

// badRecord is a record of the last run (<state>/kubernix.toml) that does
// not parse. Only the supervisor reads it (cluster.Up, to remove what that
// run left), after `up` has handed over to it: the error reaches `up`
// through the supervisor's notices.
const badRecord = "nodes = \"three\"\n"

// TestNotifyDetachExitCode: bad input that only the detached supervisor
// sees (an unreadable record of the last run) makes `kubernix up --detach`
// exit 2, as the supervisor does, naming the file; nothing is left running.
func TestNotifyDetachExitCode(t *testing.T) {
	e := newEnv(t, "nt-notify", notifyCIDR, leanAddons)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	record := filepath.Join(e.stateDir, "kubernix.toml")
	if err := os.WriteFile(record, []byte(badRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := e.kubernix(ctx, "up", "--detach")
	if code == 0 {
		t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	}
	if code != 2 || !strings.Contains(out, "the record of the last run") || !strings.Contains(out, record) {
		t.Fatalf("up --detach with an unreadable %s: exit %d, output:\n%s\nwant exit 2 naming the file", record, code, out)
	}
	t.Logf("refused as it should:\n%s", out)
	if left := e.leftovers([]string{e.name + "-node-0"}, false); len(left) > 0 {
		t.Errorf("refused up left:\n%s", strings.Join(left, "\n"))
	}
}

// TestNotifyRootlessExitCode is TestNotifyDetachExitCode for a rootless
// cluster, whose supervisor reports through a FIFO from inside
// rootlesskit: `up --detach` and `up` in the foreground both exit 2.
func TestNotifyRootlessExitCode(t *testing.T) {
	u := newRootlessUser(t, "kxnotify")
	u.addSubIDs()
	u.openTun()
	u.delegateCgroups()
	state := filepath.Join(u.home, "st")
	record := filepath.Join(state, "kubernix.toml")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, mode := range [][]string{{"--detach"}, {"--no-shell"}} {
		t.Run(mode[0], func(t *testing.T) {
			if err := os.MkdirAll(state, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(record, []byte(badRecord), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(state, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(record, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"up", "--name", "ntrl", "--cidr", notifyCIDR, "--state-dir", state}, mode...)
			out, code := u.kubernix(ctx, args...)
			if code == 0 {
				t.Cleanup(func() { u.kubernix(context.Background(), "down", "--name", "ntrl", "--state-dir", state) })
			}
			if code != 2 || !strings.Contains(out, "the record of the last run") || !strings.Contains(out, record) {
				log, _ := os.ReadFile(filepath.Join(state, "logs", "supervisor", "supervisor.log"))
				t.Fatalf("%s with an unreadable %s: exit %d, output:\n%s\nwant exit 2 naming the file; supervisor log:\n%s",
					strings.Join(args, " "), record, code, out, log)
			}
			t.Logf("refused as it should:\n%s", out)
			if left := u.processes(); len(left) > 0 {
				t.Errorf("refused up left processes:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}
