package common

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
)

// TestFindByName: --name alone finds a cluster that up was given another
// --state-dir for, through the inventory; a name no cluster has keeps the
// default state dir; a name two clusters have is refused naming both.
func TestFindByName(t *testing.T) {
	root := t.TempDir()
	inv := cluster.Inventory{Root: filepath.Join(root, "kubernix")}
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
