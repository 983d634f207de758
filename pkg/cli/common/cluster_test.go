package common

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestFindByName: --name alone finds a cluster that up was given another
// --state-dir for, through the inventory; a name no cluster has keeps the
// default state dir; a name two clusters have is refused naming both.
func TestFindByName(t *testing.T) {
	root := t.TempDir()
	inv := state.Inventory{Root: filepath.Join(root, "kubernix")}
	started := func(dir, name string) string {
		t.Helper()
		dir = filepath.Join(root, dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kubernix.toml"), []byte("name = '"+name+"'\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := inv.Record(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	custom := started("custom", "dev")
	started("twice-1", "twice")
	started("twice-2", "twice")
	tests := []struct {
		name, want string
		invalid    bool
	}{
		{"dev", custom, false},
		{"nosuch", "/default", false},
		{"twice", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findByName(inv, tt.name, "/default")
			if tt.invalid {
				if !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("findByName(%q) = %q, %v; want an invalid-configuration error", tt.name, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("findByName(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
			}
		})
	}
}

// TestUseClusterSettings: without a config file, a cluster that ran before
// starts from the settings its last up was given, flags changing only
// what they set; a config file, given or in $KUBERNIX_CONFIG, wins.
func TestUseClusterSettings(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "cluster.toml"), []byte("nodes = 3\ncidr = '10.30.0.0/16'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(t.TempDir(), "given.toml")
	if err := os.WriteFile(given, []byte("nodes = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args, env []string
		used      bool
		nodes     int
		cidr      string
	}{
		{"the last settings", []string{"--state-dir", state}, nil, true, 3, "10.30.0.0/16"},
		{"a flag changes what it sets", []string{"--state-dir", state, "--nodes", "4"}, nil, true, 4, "10.30.0.0/16"},
		{"a config file wins", []string{"--state-dir", state, "--config", given}, nil, false, 2, config.DefaultCIDR},
		{"$KUBERNIX_CONFIG wins", []string{"--state-dir", state}, []string{"KUBERNIX_CONFIG=" + given}, false, 2, config.DefaultCIDR},
		{"a cluster that never ran", []string{"--state-dir", t.TempDir()}, nil, false, 1, config.DefaultCIDR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Flags: config.NewFlags(), Environ: tt.env}
			fs := pflag.NewFlagSet("up", pflag.ContinueOnError)
			e.Flags.Bind(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			used := e.UseClusterSettings()
			cfg, err := config.Load(e.Flags, e.Environ)
			if err != nil {
				t.Fatal(err)
			}
			if (used != "") != tt.used || cfg.Nodes != tt.nodes || cfg.CIDR != tt.cidr {
				t.Errorf("used %q, nodes %d, cidr %s; want used %v, %d nodes, cidr %s", used, cfg.Nodes, cfg.CIDR, tt.used, tt.nodes, tt.cidr)
			}
		})
	}
}

// damagedCluster writes a state dir at dir whose kubernix.toml (of a
// cluster named name) got a line of garbage, with the admin kubeconfig up
// writes, and records it in inv.
func damagedCluster(t *testing.T, inv state.Inventory, dir, name string) {
	t.Helper()
	p := config.Paths{State: dir}
	if err := p.MakeState(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.ConfigFile(), []byte("name = '"+name+"'\nthis is not TOML\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p.Kubeconfig("admin")), 0o700); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.CurrentContext = "kubernix-" + name
	if err := clientcmd.WriteToFile(*kc, p.Kubeconfig("admin")); err != nil {
		t.Fatal(err)
	}
	if err := inv.Record(dir); err != nil {
		t.Fatal(err)
	}
}

// TestSavedConfigDamaged: a cluster whose record is damaged is selected
// by --state-dir, returned under the name its other records give with a
// DamagedError (which WarnDamaged turns into a warning), and found by
// --name alone; a --name that contradicts it is refused.
func TestSavedConfigDamaged(t *testing.T) {
	root := t.TempDir()
	inv := state.Inventory{Root: filepath.Join(root, "kubernix")}
	dir := filepath.Join(root, "dmg")
	damagedCluster(t, inv, dir, "dev")
	if got, err := findByName(inv, "dev", "/default"); err != nil || got != dir {
		t.Errorf("findByName(dev) = %q, %v; want %s", got, err, dir)
	}
	tests := []struct {
		name    string
		args    []string
		invalid bool
	}{
		{"--state-dir", []string{"--state-dir", dir}, false},
		{"--state-dir and its --name", []string{"--state-dir", dir, "--name", "dev"}, false},
		{"another --name", []string{"--state-dir", dir, "--name", "prod"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs bytes.Buffer
			e := &Env{Flags: config.NewFlags(), Streams: Streams{Err: &errs}}
			fs := pflag.NewFlagSet("down", pflag.ContinueOnError)
			e.Flags.Bind(fs, config.SelectorKeys...)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := e.SavedConfig()
			if tt.invalid {
				if !errors.Is(err, config.ErrInvalid) || errors.As(err, new(*state.DamagedError)) {
					t.Fatalf("SavedConfig = %v, want an invalid --name", err)
				}
				return
			}
			var damaged *state.DamagedError
			if !errors.As(err, &damaged) || cfg.Name != "dev" || cfg.StateDir != dir {
				t.Fatalf("SavedConfig = %s in %s, %v; want dev in %s with a DamagedError", cfg.Name, cfg.StateDir, err, dir)
			}
			if err := e.WarnDamaged(err); err != nil || !strings.Contains(errs.String(), filepath.Join(dir, "kubernix.toml")) {
				t.Errorf("WarnDamaged = %v, warning %q; want nil and a warning naming the record", err, errs.String())
			}
		})
	}
}

// TestDamagedClusterSettings: a cluster.toml that does not parse stops
// only an up that starts from it, with an error naming the file (exit 2);
// a config file given instead is used.
func TestDamagedClusterSettings(t *testing.T) {
	state := t.TempDir()
	asked := filepath.Join(state, "cluster.toml")
	if err := os.WriteFile(asked, []byte("nodes = 3\nthis is not TOML\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(t.TempDir(), "given.toml")
	if err := os.WriteFile(given, []byte("nodes = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"from the damaged settings", []string{"--state-dir", state}, false},
		{"with --config", []string{"--state-dir", state, "--config", given}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Flags: config.NewFlags()}
			fs := pflag.NewFlagSet("up", pflag.ContinueOnError)
			e.Flags.Bind(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			e.UseClusterSettings()
			_, err := config.Load(e.Flags, e.Environ)
			if tt.ok != (err == nil) || (err != nil && (!errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), asked))) {
				t.Errorf("Load = %v, want ok %v or an invalid-configuration error naming %s", err, tt.ok, asked)
			}
		})
	}
}
