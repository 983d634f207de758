package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/release"
)

// TestCheckBundle checks what doctor says about the bundle and the
// built-in images: where they are and how the bundle was found; and the
// releases it holds.
func TestCheckBundle(t *testing.T) {
	root := t.TempDir()
	installed := filepath.Join(root, "prefix", "lib", "kubernix")
	for _, d := range []string{filepath.Join(installed, "bin"), filepath.Join(installed, "images"), filepath.Join(root, "empty")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(installed, "bin", "kube-apiserver"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(installed, "images", "pause.tar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// An older release, as `make install` lays it out.
	older := release.Known()[len(release.Known())-1]
	olderBin := filepath.Join(installed, "releases", older, "bin")
	if err := os.MkdirAll(olderBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(olderBin, "kube-apiserver"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := release.Default().Kubernetes + " (default)"
	exe := filepath.Join(root, "prefix", "bin", "kubernix")
	tests := []struct {
		name         string
		finder       *bins.Finder
		bundle       Status
		bundleDetail []string
		images       Status
		imagesDetail []string
		releases     []string
	}{
		{"installed layout", &bins.Finder{Exe: exe, Bundle: bins.LocateBundle("", exe)},
			StatusOK, []string{installed, "(installed layout)"}, StatusOK, []string{filepath.Join(installed, "images"), "pause.tar"},
			[]string{def + ", " + older + " (" + olderBin + ")"}},
		{"given", &bins.Finder{Exe: exe, Bundle: bins.LocateBundle(installed, exe)},
			StatusOK, []string{installed, "(" + bins.HowGiven + ")"}, StatusOK, []string{filepath.Join(installed, "images")}, []string{older + " (" + olderBin + ")"}},
		{"given without bin", &bins.Finder{Exe: exe, Bundle: bins.LocateBundle(filepath.Join(root, "empty"), exe)},
			StatusFail, []string{filepath.Join(root, "empty") + ": no bin directory"}, StatusFail, []string{filepath.Join(root, "empty", "images")},
			[]string{def + "; not built: ", older, "make bins KUBERNETES_VERSION="}},
		{"none", &bins.Finder{Exe: filepath.Join(root, "elsewhere", "kubernix"), Bundle: bins.LocateBundle("", filepath.Join(root, "elsewhere", "kubernix"))},
			StatusInfo, []string{"none (no kube-apiserver in " + filepath.Join(root, "lib", "kubernix", "bin")}, StatusFail, []string{"make images"}, []string{def + "; not built"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkBundle(tt.finder)
			if len(r) != 3 || r[0].Name != "bundle" || r[1].Name != "built-in images" || r[2].Name != "Kubernetes releases" {
				t.Fatalf("results %+v, want bundle, built-in images and Kubernetes releases", r)
			}
			for i, want := range []struct {
				status Status
				detail []string
			}{{tt.bundle, tt.bundleDetail}, {tt.images, tt.imagesDetail}, {StatusInfo, tt.releases}} {
				if r[i].Status != want.status {
					t.Errorf("%s: %s, want %s (%s)", r[i].Name, r[i].Status, want.status, r[i].Detail)
				}
				for _, d := range want.detail {
					if !strings.Contains(r[i].Detail, d) {
						t.Errorf("%s: %q does not mention %q", r[i].Name, r[i].Detail, d)
					}
				}
			}
		})
	}
}
