package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state/statetest"
)

// TestInventoryStateDirs: the state root's clusters, the index's and the
// name claims', each once and only with a kubernix.toml; index entries of
// directories that are gone or not kubernix's are pruned, those of a
// state dir up claimed but never started kept.
func TestInventoryStateDirs(t *testing.T) {
	root, elsewhere, names := t.TempDir(), t.TempDir(), t.TempDir()
	inv := Inventory{Root: root, Names: names}
	inRoot := filepath.Join(root, "a")
	statetest.MakeCluster(t, inRoot, "a", 1)
	if err := os.MkdirAll(filepath.Join(root, "not-a-cluster"), 0o755); err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(elsewhere, "custom")
	statetest.MakeCluster(t, custom, "custom", 2)
	claimed := filepath.Join(elsewhere, "claimed") // up refused after the lock
	if err := (config.Paths{State: claimed}).MakeState(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(elsewhere, "gone")
	foreign := filepath.Join(elsewhere, "foreign")
	statetest.MustWrite(t, filepath.Join(foreign, "notes.txt"), "mine\n")
	named := filepath.Join(elsewhere, "named") // started by a kubernix without the index
	statetest.MakeCluster(t, named, "named", 1)
	statetest.MustWrite(t, filepath.Join(names, "named"), named+"\n")
	for _, d := range []string{inRoot, custom, claimed, gone, foreign} {
		if err := inv.Record(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := inv.Record(custom); err != nil { // twice: one entry
		t.Fatal(err)
	}
	statetest.MustWrite(t, filepath.Join(inv.IndexDir(), "junk"), "relative/path\n")

	got, err := inv.StateDirs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{custom, named, inRoot}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("StateDirs = %q, want %q", got, want)
	}
	tests := []struct {
		dir  string
		kept bool
	}{
		{inRoot, true}, {custom, true}, {claimed, true}, {gone, false}, {foreign, false},
	}
	for _, tt := range tests {
		_, err := os.Stat(inv.IndexEntry(tt.dir))
		if kept := err == nil; kept != tt.kept {
			t.Errorf("index entry of %s kept = %v, want %v", tt.dir, kept, tt.kept)
		}
	}
	if _, err := os.Stat(filepath.Join(inv.IndexDir(), "junk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index entry holding no absolute path not pruned: %v", err)
	}
	entries, _ := os.ReadDir(inv.IndexDir())
	if len(entries) != 3 {
		t.Errorf("index holds %d entries, want 3 (a, custom, claimed)", len(entries))
	}
	if err := inv.Forget(custom); err != nil {
		t.Fatal(err)
	}
	if err := inv.Forget(custom); err != nil {
		t.Errorf("Forget of a missing entry: %v", err)
	}
	if got, _ := inv.StateDirs(); slices.Contains(got, custom) {
		t.Errorf("StateDirs after Forget(%s) = %q", custom, got)
	}
	if got, err := (Inventory{Root: filepath.Join(root, "missing")}).StateDirs(); err != nil || len(got) != 0 {
		t.Errorf("StateDirs of a missing root = %q, %v; want none, nil", got, err)
	}
}

// liveProcess starts a process that lives as long as the test.
func liveProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// recordProcess records cmd in the run dir of component name in scope.
func recordProcess(t *testing.T, p config.Paths, scope, name string, cmd *exec.Cmd) {
	t.Helper()
	if err := process.Record(p.Run(scope, name), name, scope, cmd.Process.Pid, cmd.Args, ""); err != nil {
		t.Fatal(err)
	}
}

// TestInspect: the state of a cluster from its state dir and the process
// table: running with a live supervisor, broken with one that gave up on
// a component or node or without one but with live components, stopped
// with neither.
func TestInspect(t *testing.T) {
	tests := []struct {
		name string
		// supervised records this test process as the supervisor.
		supervised bool
		// setup makes the cluster's remains.
		setup        func(t *testing.T, p config.Paths)
		want         State
		wantProblem  string
		wantRootless bool
	}{
		{name: "never run", setup: func(*testing.T, config.Paths) {}, want: StateStopped},
		{name: "down: stale pidfile", want: StateStopped, setup: func(t *testing.T, p config.Paths) {
			statetest.MustWrite(t, filepath.Join(p.Run(config.ControlPlaneScope, "etcd"), process.PidFile), "1\n")
		}},
		{name: "supervised", supervised: true, want: StateRunning, setup: func(t *testing.T, p config.Paths) {
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
		{name: "supervisor killed, components live", want: StateBroken, wantProblem: "process control-plane/etcd (pid ", setup: func(t *testing.T, p config.Paths) {
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
		{name: "supervisor gave up on a component", supervised: true, want: StateBroken, wantProblem: "component node-0/kubelet failed: exit status 1", setup: func(t *testing.T, p config.Paths) {
			statetest.MustWrite(t, components.SupervisionFile(p.Run("node-0", "kubelet")),
				`{"state":"failed","restarts":5,"failures":5,"last_failure":"exit status 1"}`)
		}},
		{name: "a restarting component is not broken", supervised: true, want: StateRunning, setup: func(t *testing.T, p config.Paths) {
			statetest.MustWrite(t, components.SupervisionFile(p.Run("node-0", "kubelet")), `{"state":"restarting","restarts":1}`)
		}},
		{name: "supervisor gave up on a node", supervised: true, want: StateBroken, wantProblem: "node c-node-0 failed: containerd died", setup: func(t *testing.T, p config.Paths) {
			statetest.MustWrite(t, FailedFile(p, "c-node-0"), "containerd died\n")
		}},
		{name: "rootless, stopped", want: StateStopped, wantRootless: true, setup: func(t *testing.T, p config.Paths) {
			if err := WriteRootless(p, RootlessState{UID: 1000}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := statetest.MakeCluster(t, filepath.Join(t.TempDir(), "c"), "c", 3)
			if tt.supervised {
				superviseHere(t, p)
			}
			tt.setup(t, p)
			got, err := Inspect(p.State)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want || got.Name != "c" || got.Nodes != 3 || got.StateDir != p.State || got.Rootless != tt.wantRootless {
				t.Errorf("Inspect = %+v, want state %s, name c, 3 nodes, rootless %v", got, tt.want, tt.wantRootless)
			}
			if problems := strings.Join(got.Problems, "; "); tt.wantProblem == "" && problems != "" || !strings.Contains(problems, tt.wantProblem) {
				t.Errorf("Problems = %q, want one with %q", problems, tt.wantProblem)
			}
			if got.Started.IsZero() || time.Since(got.Started) > time.Minute {
				t.Errorf("Started = %v, want about now", got.Started)
			}
			if (got.Supervisor == os.Getpid()) != tt.supervised {
				t.Errorf("Supervisor = %d (this process is %d)", got.Supervisor, os.Getpid())
			}
		})
	}
	if _, err := Inspect(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Inspect of a dir without kubernix.toml: %v, want os.ErrNotExist", err)
	}
}

// superviseHere records this test process as the cluster's supervisor.
func superviseHere(t *testing.T, p config.Paths) {
	t.Helper()
	if err := process.RecordSelf(SupervisorRunDir(p), SupervisorName, SupervisorScope); err != nil {
		t.Fatal(err)
	}
}

// TestPurge: a state dir that is kubernix's (marker or kubernix.toml) and
// down is removed with its index entry; anything else, or a cluster that
// is not down, is refused and nothing is removed.
func TestPurge(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr error // nil: removed
		wantMsg string
	}{
		{name: "stopped cluster", setup: func(t *testing.T, dir string) { statetest.MakeCluster(t, dir, "c", 1) }},
		{name: "claimed, never started", setup: func(t *testing.T, dir string) {
			if err := (config.Paths{State: dir}).MakeState(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "older kubernix: toml, no marker", setup: func(t *testing.T, dir string) {
			p := statetest.MakeCluster(t, dir, "c", 1)
			if err := os.Remove(p.Marker()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing", setup: func(*testing.T, string) {}},
		{name: "not ours", wantErr: ErrNotOurs, wantMsg: "holds no .kubernix-state or kubernix.toml", setup: func(t *testing.T, dir string) {
			statetest.MustWrite(t, filepath.Join(dir, "thesis.tex"), "precious\n")
		}},
		{name: "not ours, even empty", wantErr: ErrNotOurs, setup: func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "running", wantMsg: "runs (supervisor pid", setup: func(t *testing.T, dir string) {
			superviseHere(t, statetest.MakeCluster(t, dir, "c", 1))
		}},
		{name: "supervisor killed", wantMsg: "is not down", setup: func(t *testing.T, dir string) {
			recordProcess(t, statetest.MakeCluster(t, dir, "c", 1), config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
		{name: "context not removed", wantMsg: "its context is still in the kubeconfig", setup: func(t *testing.T, dir string) {
			p := statetest.MakeCluster(t, dir, "c", 1)
			statetest.MustWrite(t, UserKubeconfigFile(p), `{"path":"/nonexistent/config"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := Inventory{Root: t.TempDir()}
			dir := filepath.Join(t.TempDir(), "state")
			tt.setup(t, dir)
			if err := inv.Record(dir); err != nil {
				t.Fatal(err)
			}
			before := listTree(t, dir)
			err := Purge(inv, config.Paths{State: dir}, "c")
			if tt.wantErr == nil && tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Purge: %v", err)
				}
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("state dir not removed: %v", err)
				}
				if _, err := os.Stat(inv.IndexEntry(dir)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("index entry not removed: %v", err)
				}
				return
			}
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Purge: %v, want an error wrapping %v with %q", err, tt.wantErr, tt.wantMsg)
			}
			if tt.wantErr != nil && !errors.Is(err, config.ErrInvalid) {
				t.Errorf("Purge: %v does not wrap config.ErrInvalid (exit 2)", err)
			}
			if after := listTree(t, dir); !slices.Equal(before, after) {
				t.Errorf("refused Purge changed the state dir: %q, then %q", before, after)
			}
			if _, err := os.Stat(inv.IndexEntry(dir)); err != nil {
				t.Errorf("refused Purge removed the index entry: %v", err)
			}
		})
	}
}

// listTree lists every path below dir, relative to it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	return out
}
