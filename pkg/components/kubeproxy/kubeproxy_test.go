package kubeproxy

import (
	"github.com/kubernix/kubernix/pkg/components"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLinkTools(t *testing.T) {
	tests := []struct {
		name    string
		nft     string
		before  string // an existing link's target, if any
		wantErr string
	}{
		{"new directory", "/usr/sbin/nft", "", ""},
		{"an existing link to elsewhere is replaced", "/usr/sbin/nft", "/old/nft", ""},
		{"the same link is kept", "/usr/sbin/nft", "/usr/sbin/nft", ""},
		{"nft not found", "", "", "kube-proxy needs nft"},
		{"a relative path is refused", "nft", "", "kube-proxy needs nft"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Spec{ToolDir: filepath.Join(t.TempDir(), "kube-proxy-path")}
			if tt.before != "" {
				if err := os.MkdirAll(s.ToolDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(tt.before, filepath.Join(s.ToolDir, "nft")); err != nil {
					t.Fatal(err)
				}
			}
			s.NFT, s.NodeName, s.ConfigFile = tt.nft, "node-0", filepath.Join(t.TempDir(), "kube-proxy.yaml")
			d, err := Describe(s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Describe error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Describe: %v", err)
			}
			if err := components.WriteFiles(d); err != nil {
				t.Fatalf("WriteFiles: %v", err)
			}
			entries, err := os.ReadDir(s.ToolDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].Name() != "nft" {
				t.Fatalf("%s holds %v, want nft alone", s.ToolDir, entries)
			}
			if got, err := os.Readlink(filepath.Join(s.ToolDir, "nft")); err != nil || got != tt.nft {
				t.Errorf("nft links to %q (%v), want %q", got, err, tt.nft)
			}
		})
	}
}

func TestCommandPath(t *testing.T) {
	t.Setenv("PATH", "/usr/sbin:/usr/bin")
	t.Setenv("NOTIFY_SOCKET", "/run/notify")
	s := Spec{Binary: "/bin/kube-proxy", ConfigFile: "/state/kube-proxy.yaml", ToolDir: "/state/kube-proxy-path"}
	d := components.Description{Command: Command(s)}
	var path []string
	for _, kv := range d.Environ() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			path = append(path, kv)
		}
	}
	if want := []string{"PATH=/state/kube-proxy-path"}; !slices.Equal(path, want) {
		t.Errorf("PATH and NOTIFY_SOCKET in the environment = %q, want %q", path, want)
	}
}
