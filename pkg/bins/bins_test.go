package bins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/release"
)

func writeExe(t *testing.T, dir, name, script string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// layout makes a temp tree of every bundle layout: an installed one
// (inst/bin/kubernix, inst/lib/kubernix), the source tree's two (kubernix
// in src/_output/bin; kubernix at top/ beside top/_output), a given one,
// and a kubernix with no bundle; each bundle with kube-apiserver, kubectl
// and images/pause.tar. Plus a --bin-dir, a PATH dir with an old kubectl
// and iptables-path, and a system dir with iptables.
func layout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, bundle := range []string{"inst/lib/kubernix", "src/_output", "top/_output", "given"} {
		for _, b := range []string{"kube-apiserver", "kubectl"} {
			writeExe(t, filepath.Join(root, bundle, "bin"), b, "echo "+bundle)
		}
		if err := os.MkdirAll(filepath.Join(root, bundle, "images"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, bundle, "images", "pause.tar"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, exe := range []string{"inst/bin", "src/_output/bin", "top", "none/bin"} {
		writeExe(t, filepath.Join(root, exe), "kubernix", "true")
	}
	writeExe(t, filepath.Join(root, "bindir"), "kubectl", "echo bindir")
	writeExe(t, filepath.Join(root, "path"), "kubectl", "echo Client Version: v1.32.0")
	writeExe(t, filepath.Join(root, "path"), "both", "echo path")
	writeExe(t, filepath.Join(root, "sbin"), "both", "echo sbin")
	writeExe(t, filepath.Join(root, "sbin"), "iptables", "echo sbin")
	// A file that is not executable is skipped.
	if err := os.WriteFile(filepath.Join(root, "path", "noexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeExe(t, filepath.Join(root, "sbin"), "noexec", "echo sbin")
	return root
}

// finderIn is the Finder of layout root for the executable exe, the
// --bundle-dir given and the --bin-dir binDir (paths relative to root,
// "" for none), with PATH root/path and the system dir root/sbin.
func finderIn(root, exe, given, binDir string) *Finder {
	for _, p := range []*string{&exe, &given, &binDir} {
		if *p != "" {
			*p = filepath.Join(root, *p)
		}
	}
	return &Finder{BinDir: binDir, Bundle: LocateBundle(given, exe), Path: filepath.Join(root, "path"), SystemDirs: []string{filepath.Join(root, "sbin")}}
}

// TestFindOrder checks the search order: --bin-dir, the bundle (given,
// else the installed layout or the source tree's beside the executable),
// PATH, then the system dirs; and where the bundle was found.
func TestFindOrder(t *testing.T) {
	root := layout(t)
	at := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		name                   string
		exe, given, binDir     string
		find                   string
		wantDir, wantBundleDir string
		wantHow                string
	}{
		{"installed: bundle kubectl over an old one on PATH", "inst/bin/kubernix", "", "", "kubectl", "inst/lib/kubernix/bin", "inst/lib/kubernix", HowInstalled},
		{"source tree, kubernix in _output/bin", "src/_output/bin/kubernix", "", "", "kubectl", "src/_output/bin", "src/_output", HowSourceTree},
		{"source tree, kubernix at the top", "top/kubernix", "", "", "kubectl", "top/_output/bin", "top/_output", HowSourceTree},
		{"given bundle over the installed one", "inst/bin/kubernix", "given", "", "kubectl", "given/bin", "given", HowGiven},
		{"bin dir over the bundle", "inst/bin/kubernix", "given", "bindir", "kubectl", "bindir", "given", HowGiven},
		{"no bundle: PATH", "none/bin/kubernix", "", "", "kubectl", "path", "", ""},
		{"unknown executable: PATH", "", "", "", "kubectl", "path", "", ""},
		{"system tool not on PATH: system dir", "inst/bin/kubernix", "", "", "iptables", "sbin", "inst/lib/kubernix", HowInstalled},
		{"PATH over the system dirs", "inst/bin/kubernix", "", "", "both", "path", "inst/lib/kubernix", HowInstalled},
		{"not executable on PATH: system dir", "inst/bin/kubernix", "", "", "noexec", "sbin", "inst/lib/kubernix", HowInstalled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := finderIn(root, tt.exe, tt.given, tt.binDir)
			got, err := f.Find(tt.find)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(got) != at(tt.wantDir) {
				t.Errorf("Find(%s) = %s, want it in %s", tt.find, got, at(tt.wantDir))
			}
			wantBundle := ""
			if tt.wantBundleDir != "" {
				wantBundle = at(tt.wantBundleDir)
			}
			if f.Bundle.Dir != wantBundle || f.Bundle.How != tt.wantHow {
				t.Errorf("bundle %q (%s), want %q (%s)", f.Bundle.Dir, f.Bundle.How, wantBundle, tt.wantHow)
			}
		})
	}
	f := &Finder{BinDir: at("bindir"), Path: at("path"), SystemDirs: []string{at("sbin")}}
	_, err := f.Find("missing")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), at("bindir")) || !strings.Contains(err.Error(), "$PATH, "+at("sbin")) {
		t.Errorf("Find(missing) = %v, want ErrNotFound naming where it looked", err)
	}
}

func TestSystemEnviron(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"HOME=/h", "PATH=/usr/bin:/bin"}, []string{"HOME=/h", "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}},
		{[]string{"HOME=/h"}, []string{"HOME=/h", "PATH=/usr/sbin:/sbin"}},
		{[]string{"PATH=/sbin:/usr/sbin", "X=PATH=/y"}, []string{"PATH=/sbin:/usr/sbin", "X=PATH=/y"}},
	}
	for _, tt := range tests {
		if got := SystemEnviron(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SystemEnviron(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSystemPath(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/usr/local/bin:/usr/bin:/bin", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"},
		{"/usr/sbin:/usr/bin", "/usr/sbin:/usr/bin:/sbin"},
		{"/bin:/sbin:/usr/sbin", "/bin:/sbin:/usr/sbin"},
		{"", "/usr/sbin:/sbin"},
	}
	for _, tt := range tests {
		if got := SystemPath(tt.path); got != tt.want {
			t.Errorf("SystemPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestVersion(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, script, want string
		wantErr            bool
	}{
		{"stdout", "echo 'tool version 1.2.3'", "tool version 1.2.3", false},
		{"stderr only", "echo 'v9' >&2", "v9", false},
		{"multi-line collapsed", "printf 'name:\\n  Version: v2.4.2\\n'", "name: Version: v2.4.2", false},
		{"failing", "echo broken >&2; exit 3", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeExe(t, dir, strings.ReplaceAll(tt.name, " ", "-"), tt.script)
			got, err := Version(context.Background(), p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("Version = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCachedVersion(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	p := writeExe(t, dir, "tool", "echo v1")
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	rewrite := func(script string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
		args   []string
		want   string
	}{
		{"first run", func() {}, nil, "v1"},
		{"same size and mtime: recorded", func() { rewrite("echo v2", at) }, nil, "v1"},
		{"other args: run", func() {}, []string{"--version"}, "v2"},
		{"new mtime: run", func() { rewrite("echo v3", at.Add(time.Second)) }, nil, "v3"},
		{"failure not recorded", func() { rewrite("exit 1", at.Add(2*time.Second)) }, nil, ""},
		{"fixed again", func() { rewrite("echo v4", at.Add(2*time.Second)) }, nil, "v4"},
	}
	for _, s := range steps {
		s.change()
		got, err := CachedVersion(context.Background(), cache, p, s.args...)
		if s.want == "" {
			if err == nil {
				t.Errorf("%s: no error", s.name)
			}
			continue
		}
		if err != nil || got != s.want {
			t.Errorf("%s: %q, %v; want %q", s.name, got, err, s.want)
		}
	}
}

// TestImagesDir checks where the built-in images are found: beside the
// --bin-dir, else in the bundle's images dir; and the error without.
func TestImagesDir(t *testing.T) {
	root := layout(t)
	at := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		name, exe, given, binDir string
		want                     string
		wantErr                  []string
	}{
		{"installed layout", "inst/bin/kubernix", "", "", "inst/lib/kubernix/images", nil},
		{"source tree, kubernix in _output/bin", "src/_output/bin/kubernix", "", "", "src/_output/images", nil},
		{"source tree, kubernix at the top", "top/kubernix", "", "", "top/_output/images", nil},
		{"given bundle", "inst/bin/kubernix", "given", "", "given/images", nil},
		{"beside the bin dir first", "inst/bin/kubernix", "", "src/_output/bin", "src/_output/images", nil},
		{"bin dir without images: the bundle's", "inst/bin/kubernix", "", "bindir", "inst/lib/kubernix/images", nil},
		{"none", "none/bin/kubernix", "", "bindir", "", []string{"not found in " + filepath.Join(root, "images"), "make images", "--bundle-dir"}},
		{"no bundle, no bin dir", "none/bin/kubernix", "", "", "", []string{"no bundle beside kubernix", "kubernix doctor", "--bundle-dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := finderIn(root, tt.exe, tt.given, tt.binDir)
			got, err := f.ImagesDir()
			if tt.want == "" {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("ImagesDir = %q, %v; want an error mentioning %q", got, err, w)
					}
				}
				return
			}
			if err != nil || got != at(tt.want) {
				t.Errorf("ImagesDir = %q, %v; want %s", got, err, at(tt.want))
			}
		})
	}
}

// TestUseRelease checks that the releases of a bundle are found in
// releases/<version>/bin, and that a release's bin dir is searched after
// --bin-dir and before the bundle's own.
func TestUseRelease(t *testing.T) {
	root := layout(t)
	known := release.Known()
	older := known[len(known)-1]
	rel := filepath.Join(root, "inst/lib/kubernix/releases", older, "bin")
	for _, b := range []string{"kube-apiserver", "kubectl"} {
		writeExe(t, rel, b, "echo "+older)
	}
	// A release kubernix does not build is not listed, built or not.
	writeExe(t, filepath.Join(root, "inst/lib/kubernix/releases/v1.20.0/bin"), "kube-apiserver", "true")

	f := finderIn(root, "inst/bin/kubernix", "", "")
	var got []string
	for _, r := range f.Bundle.Releases() {
		got = append(got, r.Kubernetes+" "+r.Bin)
	}
	want := []string{known[0] + " " + f.Bundle.Bin, older + " " + rel}
	if !slices.Equal(got, want) {
		t.Fatalf("Releases() = %q, want %q", got, want)
	}

	for _, tt := range []struct {
		version, binDir, wantDir string
	}{
		{older, "", rel},
		{older[:len(older)-2], "", rel}, // its minor
		{older, "bindir", rel},          // asked for by name, it wins over --bin-dir
		{"", "bindir", filepath.Join(root, "bindir")},
		{"", "", f.Bundle.Bin},
		{known[0], "", f.Bundle.Bin},
	} {
		f := finderIn(root, "inst/bin/kubernix", "", tt.binDir)
		if _, err := f.UseRelease(tt.version); err != nil {
			t.Fatalf("UseRelease(%q): %v", tt.version, err)
		}
		p, err := f.Find("kubectl")
		if err != nil || filepath.Dir(p) != tt.wantDir {
			t.Errorf("UseRelease(%q), --bin-dir %q: Find(kubectl) = %s, %v; want it in %s", tt.version, tt.binDir, p, err, tt.wantDir)
		}
	}

	// A release beside the --bin-dir (_output/bin, _output/releases) is
	// found when the bundle has none.
	besideBin := filepath.Join(root, "src/_output/releases", older, "bin")
	writeExe(t, besideBin, "kube-apiserver", "true")
	writeExe(t, besideBin, "kubectl", "true")
	f = finderIn(root, "none/bin/kubernix", "", "src/_output/bin")
	if r, err := f.UseRelease(older); err != nil || r.Bin != besideBin {
		t.Errorf("UseRelease(%q) with the release beside --bin-dir = %+v, %v; want it in %s", older, r, err, besideBin)
	}
	if err := os.RemoveAll(besideBin); err != nil {
		t.Fatal(err)
	}

	// Without the release built: refused, naming the make command, and
	// the finder is unchanged.
	f = finderIn(root, "src/_output/bin/kubernix", "", "")
	if _, err := f.UseRelease(older); !errors.Is(err, release.ErrNotBuilt) || !strings.Contains(err.Error(), "make bins KUBERNETES_VERSION="+older) {
		t.Errorf("UseRelease(%q) without it built = %v, want ErrNotBuilt naming the make command", older, err)
	}
	if f.ReleaseBin != "" {
		t.Errorf("a failed UseRelease set ReleaseBin %q", f.ReleaseBin)
	}
}
