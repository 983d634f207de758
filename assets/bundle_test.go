package assets_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/kubernix/kubernix/assets"
)

// TestBundleModuleMatchesVersions ties bundle/go.mod, which the Makefile
// builds the Kubernetes binaries and the bundle's tools from, to the
// versions kubernix reports and tags the built-in images with
// (versions.env): bumping one without the other would build a component
// whose image carries another version's tag.
func TestBundleModuleMatchesVersions(t *testing.T) {
	path := filepath.Join("..", "bundle", "go.mod")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, tl := range mod.Tool {
		tools = append(tools, tl.Path)
	}
	tests := []struct {
		module, versionKey string
		tool               string // the package the Makefile builds, "" if none of the module's own tools
	}{
		{"k8s.io/kubernetes", "KUBERNETES_VERSION", "k8s.io/kubernetes/cmd/kubectl"},
		{"github.com/coredns/coredns", "COREDNS_VERSION", "github.com/coredns/coredns"},
		{"github.com/rancher/local-path-provisioner", "LOCAL_PATH_PROVISIONER_VERSION", "github.com/rancher/local-path-provisioner"},
	}
	for _, tt := range tests {
		t.Run(tt.module, func(t *testing.T) {
			want := assets.Version(tt.versionKey)
			if want == "" {
				t.Fatalf("versions.env has no %s", tt.versionKey)
			}
			i := slices.IndexFunc(mod.Require, func(r *modfile.Require) bool { return r.Mod.Path == tt.module })
			if i < 0 {
				t.Fatalf("%s requires no %s; versions.env has %s=%s", path, tt.module, tt.versionKey, want)
			}
			if got := mod.Require[i].Mod.Version; got != want {
				t.Errorf("%s requires %s %s, versions.env has %s=%s", path, tt.module, got, tt.versionKey, want)
			}
			if !slices.Contains(tools, tt.tool) {
				t.Errorf("%s lacks the tool %s (the Makefile builds it): tools %v", path, tt.tool, tools)
			}
		})
	}
}
