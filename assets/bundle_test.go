package assets_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/kubernix/kubernix/assets"
)

// TestBundleModuleMatchesVersions ties bundle/go.mod, which the Makefile
// builds the Kubernetes binaries and the bundle's tools from, to the
// versions kubernix reports and tags the built-in images with
// (versions.env): bumping one without the other would build a component
// whose image carries another version's tag.
func TestBundleModuleMatchesVersions(t *testing.T) {
	path := filepath.Join("..", "bundle", "go.mod")
	mod := readModFile(t, path)
	var tools []string
	for _, tl := range mod.Tool {
		tools = append(tools, tl.Path)
	}
	tests := []struct {
		module, versionKey string
		tool               string // the package the Makefile builds, "" if none of the module's own tools
	}{
		{"k8s.io/kubernetes", "KUBERNETES_VERSION", "k8s.io/kubernetes/cmd/kubectl"},
		// CoreDNS is built from the bundle's own cmd/coredns (its plugins
		// less those linking cloud SDKs), not from upstream's main.
		{"github.com/coredns/coredns", "COREDNS_VERSION", ""},
		{"github.com/rancher/local-path-provisioner", "LOCAL_PATH_PROVISIONER_VERSION", "github.com/rancher/local-path-provisioner"},
		{"sigs.k8s.io/metrics-server", "METRICS_SERVER_VERSION", "sigs.k8s.io/metrics-server/cmd/metrics-server"},
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
			if tt.tool != "" && !slices.Contains(tools, tt.tool) {
				t.Errorf("%s lacks the tool %s (the Makefile builds it): tools %v", path, tt.tool, tools)
			}
		})
	}
}

// TestModulesShareVersions holds kubernix's own module, the bundle and the
// conformance module (test/conformance) to one version of every module two
// of them require. A package is compiled once per distinct set of inputs,
// so a shared module at two versions (or a dependency of it at two
// versions) makes a cold build compile client-go, k8s.io/api and their
// kind once per module graph instead of once (see the Makefile's
// BUNDLE_COMPILED). Lift the lower side (`go get module@version`) when
// this fails.
func TestModulesShareVersions(t *testing.T) {
	files := []string{filepath.Join("..", "go.mod"), filepath.Join("..", "bundle", "go.mod"),
		filepath.Join("..", "test", "conformance", "go.mod")}
	versions := make([]map[string]string, len(files))
	for i, path := range files {
		versions[i] = requiredVersions(readModFile(t, path))
	}
	for i := range files {
		for j := i + 1; j < len(files); j++ {
			for path, vi := range versions[i] {
				if vj, ok := versions[j][path]; ok && vi != vj {
					t.Errorf("%s: %s in %s, %s in %s", path, vi, files[i], vj, files[j])
				}
			}
		}
	}
}

// requiredVersions maps each module that mod requires to the version its
// build uses: the replacement's version where a replace directive with a
// version applies, else the required one.
func requiredVersions(mod *modfile.File) map[string]string {
	v := make(map[string]string, len(mod.Require))
	for _, r := range mod.Require {
		v[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range mod.Replace {
		if _, ok := v[r.Old.Path]; ok && r.New.Version != "" {
			v[r.Old.Path] = r.New.Version
		}
	}
	return v
}

// readModFile reads and parses the go.mod file at path, failing the test
// if it cannot.
func readModFile(t *testing.T, path string) *modfile.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestReleaseModulesPinTheirRelease checks each module of another
// Kubernetes release than the default (bundle/releases/v<major>.<minor>,
// which `make bins KUBERNETES_VERSION=...` builds): it replaces
// k8s.io/kubernetes with a patch of its own minor, older than the default
// release; every staging module the bundle pins that the release has (it
// requires or replaces it: k8s.io/streaming came with v1.36) with the
// matching v0 version (a staging module of another release would not
// compile, or worse, would); and it has the tools the Makefile builds. The releases
// these modules pin are versions.env's KUBERNETES_RELEASES, which kubernix
// names when a release is asked for that is not built.
func TestReleaseModulesPinTheirRelease(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "bundle", "releases", "v*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no module in bundle/releases")
	}
	// The bundle replaces each staging module of k8s.io/kubernetes (k8s.io/*).
	staging := []string{}
	for m := range replacedVersions(readModFile(t, filepath.Join("..", "bundle", "go.mod"))) {
		if strings.HasPrefix(m, "k8s.io/") {
			staging = append(staging, m)
		}
	}
	def := semver.MajorMinor(assets.Version("KUBERNETES_VERSION"))
	var pinned []string
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			path := filepath.Join(dir, "go.mod")
			mod := readModFile(t, path)
			replaced := replacedVersions(mod)
			k8s := replaced["k8s.io/kubernetes"]
			pinned = append(pinned, k8s)
			minor := filepath.Base(dir)
			if semver.MajorMinor(k8s) != minor {
				t.Fatalf("%s replaces k8s.io/kubernetes with %q, want a %s patch", path, k8s, minor)
			}
			if semver.Compare(minor, def) >= 0 {
				t.Errorf("%s is for %s, not older than the default release %s", path, minor, def)
			}
			want := "v0" + strings.TrimPrefix(k8s, "v1") // v1.36.3: the staging modules' v0.36.3
			required := map[string]bool{}
			for _, r := range mod.Require {
				required[r.Mod.Path] = true
			}
			for _, m := range staging {
				got, ok := replaced[m]
				if !ok && !required[m] {
					continue // not a module of this release: k8s.io/streaming and k8s.io/cri-streaming came with v1.36
				}
				if got != want {
					t.Errorf("%s replaces %s with %q, want %s", path, m, got, want)
				}
			}
			var tools []string
			for _, tl := range mod.Tool {
				tools = append(tools, tl.Path)
			}
			for _, tool := range []string{"github.com/kubernix/kubernix/bundle/cmd/kube", "k8s.io/kubernetes/cmd/kubectl"} {
				if !slices.Contains(tools, tool) {
					t.Errorf("%s lacks the tool %s (the Makefile builds it): tools %v", path, tool, tools)
				}
			}
		})
	}
	semver.Sort(pinned)
	slices.Reverse(pinned)
	if listed := strings.Fields(assets.Version("KUBERNETES_RELEASES")); !slices.Equal(listed, pinned) {
		t.Errorf("versions.env has KUBERNETES_RELEASES=%s; the modules of bundle/releases pin %s (newest first)",
			strings.Join(listed, " "), strings.Join(pinned, " "))
	}
}

// replacedVersions maps each module path that mod replaces with a module
// version (not a directory) to that version.
func replacedVersions(mod *modfile.File) map[string]string {
	v := map[string]string{}
	for _, r := range mod.Replace {
		if r.New.Version != "" {
			v[r.Old.Path] = r.New.Version
		}
	}
	return v
}

// TestTraefikModuleMatchesVersions ties bundle/traefik/go.mod, which the
// Makefile builds the ingress addon's traefik in, to TRAEFIK_VERSION (the
// built-in image's tag) and GATEWAY_API_VERSION (the CRDs the addon
// installs must be those of the Gateway API release traefik is built
// against), and checks it names traefik's command as a tool.
func TestTraefikModuleMatchesVersions(t *testing.T) {
	path := filepath.Join("..", "bundle", "traefik", "go.mod")
	mod := readModFile(t, path)
	for module, key := range map[string]string{
		"github.com/traefik/traefik/v3": "TRAEFIK_VERSION",
		"sigs.k8s.io/gateway-api":       "GATEWAY_API_VERSION",
	} {
		want := assets.Version(key)
		i := slices.IndexFunc(mod.Require, func(r *modfile.Require) bool { return r.Mod.Path == module })
		if want == "" || i < 0 || mod.Require[i].Mod.Version != want {
			t.Errorf("%s: want %s at %s=%q of versions.env", path, module, key, want)
		}
	}
	if !slices.ContainsFunc(mod.Tool, func(tl *modfile.Tool) bool { return tl.Path == "github.com/traefik/traefik/v3/cmd/traefik" }) {
		t.Errorf("%s lacks the tool github.com/traefik/traefik/v3/cmd/traefik (the Makefile builds it)", path)
	}
}
