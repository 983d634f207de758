package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state/statetest"
)

// TestRecordedName: the name comes from the admin kubeconfig's current
// context when no name claim names the state dir; a context that is not
// kubernix's names nothing.
func TestRecordedName(t *testing.T) {
	tests := []struct {
		name, context, want string
	}{
		{"kubernix's context", "kubernix-dev", "dev"},
		{"another context", "kind-dev", ""},
		{"not a cluster name", "kubernix-Dev_1", ""},
		{"no kubeconfig", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: t.TempDir()}
			if tt.context != "" {
				statetest.WriteAdminKubeconfig(t, p, tt.context)
			}
			if got := RecordedName(p); got != tt.want {
				t.Errorf("RecordedName = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLoadCluster: a record that does not parse, or one that is missing
// while the cluster's processes remain, is a *DamagedError naming the
// file, with the config recovered from the other records; a missing
// record of a cluster that is not on the host is os.ErrNotExist.
func TestLoadCluster(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(t *testing.T, p config.Paths)
		wantDamaged bool
		wantMissing bool
	}{
		{name: "one line of statetest.Garbage", wantDamaged: true, setup: func(t *testing.T, p config.Paths) {
			statetest.MakeCluster(t, p.State, "dev", 2)
			statetest.AppendTo(t, p.ConfigFile(), statetest.Garbage)
		}},
		{name: "a bad value", wantDamaged: true, setup: func(t *testing.T, p config.Paths) {
			statetest.MakeCluster(t, p.State, "dev", 2)
			statetest.AppendTo(t, p.ConfigFile(), "nodes = \"three\"\n")
		}},
		{name: "missing, processes live", wantDamaged: true, wantMissing: true, setup: func(t *testing.T, p config.Paths) {
			statetest.MakeCluster(t, p.State, "dev", 2)
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
			if err := os.Remove(p.ConfigFile()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing, nothing left", setup: func(t *testing.T, p config.Paths) {
			if err := p.MakeState(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing, not kubernix's", setup: func(t *testing.T, p config.Paths) {
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: filepath.Join(t.TempDir(), "s")}
			tt.setup(t, p)
			statetest.Mkdirs(t, p.Node("dev-node-0").Dir, p.Node("dev-node-1").Dir)
			statetest.WriteAdminKubeconfig(t, p, "kubernix-dev")
			cfg, err := LoadCluster(p.State)
			var damaged *DamagedError
			if !tt.wantDamaged {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("LoadCluster = %v, want os.ErrNotExist", err)
				}
				return
			}
			if !errors.As(err, &damaged) || damaged.File != p.ConfigFile() || damaged.Missing() != tt.wantMissing {
				t.Fatalf("LoadCluster = %v, want a DamagedError of %s (missing %v)", err, p.ConfigFile(), tt.wantMissing)
			}
			if !strings.Contains(err.Error(), p.ConfigFile()) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q does not name %s on one line", err, p.ConfigFile())
			}
			if cfg.Name != "dev" || cfg.Nodes != 2 || cfg.StateDir != p.State {
				t.Errorf("recovered config: name %q, %d nodes, state dir %s; want dev, 2, %s", cfg.Name, cfg.Nodes, cfg.StateDir, p.State)
			}
		})
	}
}

// TestInspectDamaged: a cluster whose record is damaged is broken, the
// damage its first problem, whether it runs, was killed or is down.
func TestInspectDamaged(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, p config.Paths)
		wantSuper  bool
		wantRemain string
	}{
		{name: "down", setup: func(*testing.T, config.Paths) {}},
		{name: "running", wantSuper: true, setup: func(t *testing.T, p config.Paths) { superviseHere(t, p) }},
		{name: "supervisor killed", wantRemain: "process control-plane/etcd (pid ", setup: func(t *testing.T, p config.Paths) {
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := statetest.MakeCluster(t, filepath.Join(t.TempDir(), "c"), "c", 1)
			statetest.WriteAdminKubeconfig(t, p, "kubernix-c")
			statetest.AppendTo(t, p.ConfigFile(), statetest.Garbage)
			tt.setup(t, p)
			got, err := Inspect(p.State)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != StateBroken || got.Name != "c" || (got.Supervisor != 0) != tt.wantSuper {
				t.Errorf("Inspect = %+v, want broken, name c, supervised %v", got, tt.wantSuper)
			}
			if len(got.Problems) == 0 || !strings.Contains(got.Problems[0], p.ConfigFile()) {
				t.Errorf("Problems = %q, want the damaged %s first", got.Problems, p.ConfigFile())
			}
			if all := strings.Join(got.Problems, "; "); !strings.Contains(all, tt.wantRemain) {
				t.Errorf("Problems = %q, want one with %q", all, tt.wantRemain)
			}
		})
	}
}
