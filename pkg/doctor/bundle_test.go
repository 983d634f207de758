package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/bins"
)

// TestCheckBundle checks what doctor says about the bundle and the
// built-in images: where they are and how the bundle was found.
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
	exe := filepath.Join(root, "prefix", "bin", "kubernix")
	tests := []struct {
		name         string
		finder       *bins.Finder
		bundle       Status
		bundleDetail []string
		images       Status
		imagesDetail []string
	}{
		{"installed layout", &bins.Finder{Exe: exe, Bundle: bins.LocateBundle("", exe)},
			StatusOK, []string{installed, "(installed layout)"}, StatusOK, []string{filepath.Join(installed, "images"), "pause.tar"}},
		{"given", &bins.Finder{Exe: exe, Bundle: bins.LocateBundle(installed, exe)},
			StatusOK, []string{installed, "(" + bins.HowGiven + ")"}, StatusOK, []string{filepath.Join(installed, "images")}},
		{"given without bin", &bins.Finder{Exe: exe, Bundle: bins.LocateBundle(filepath.Join(root, "empty"), exe)},
			StatusFail, []string{filepath.Join(root, "empty") + ": no bin directory"}, StatusFail, []string{filepath.Join(root, "empty", "images")}},
		{"none", &bins.Finder{Exe: filepath.Join(root, "elsewhere", "kubernix"), Bundle: bins.LocateBundle("", filepath.Join(root, "elsewhere", "kubernix"))},
			StatusInfo, []string{"none (no kube-apiserver in " + filepath.Join(root, "lib", "kubernix", "bin")}, StatusFail, []string{"make images"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkBundle(tt.finder)
			if len(r) != 2 || r[0].Name != "bundle" || r[1].Name != "built-in images" {
				t.Fatalf("results %+v, want bundle and built-in images", r)
			}
			for i, want := range []struct {
				status Status
				detail []string
			}{{tt.bundle, tt.bundleDetail}, {tt.images, tt.imagesDetail}} {
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
