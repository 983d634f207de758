package common

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
