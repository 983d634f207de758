package images

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dynamicExecutable returns a dynamically linked executable of the host and
// its program interpreter, or skips the test.
func dynamicExecutable(t *testing.T) (exe, interp string) {
	t.Helper()
	for _, exe := range []string{"/bin/ls", "/usr/bin/ls", "/bin/sh"} {
		if interp, err := interpreter(exe); err == nil && interp != "" {
			return exe, interp
		}
	}
	t.Skip("no dynamically linked /bin/ls or /bin/sh on this host")
	return "", ""
}

func TestSharedLibraries(t *testing.T) {
	exe, interp := dynamicExecutable(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notELF := filepath.Join(t.TempDir(), "script")
	writeFile(t, notELF, "#!/bin/sh\necho hi\n")

	tests := []struct {
		name    string
		exe     string
		want    func(t *testing.T, libs []string)
		wantErr string
	}{
		{name: "dynamic", exe: exe, want: func(t *testing.T, libs []string) {
			if len(libs) < 2 || libs[0] != interp {
				t.Fatalf("SharedLibraries(%s) = %q, want the interpreter %s first, then libraries", exe, libs, interp)
			}
			if !slices.ContainsFunc(libs, func(p string) bool { return path.Base(p) == "libc.so.6" }) {
				t.Errorf("SharedLibraries(%s) = %q: no libc.so.6", exe, libs)
			}
			seen := map[string]bool{}
			for _, l := range libs {
				if seen[path.Base(l)] {
					t.Errorf("%s listed twice in %q", path.Base(l), libs)
				}
				seen[path.Base(l)] = true
				if _, err := os.Stat(l); err != nil || !filepath.IsAbs(l) {
					t.Errorf("%s: not an absolute path of the host (%v)", l, err)
				}
			}
		}},
		{name: "static", exe: self, want: func(t *testing.T, libs []string) {
			if interp, _ := interpreter(self); interp != "" {
				t.Skip("the test binary is dynamically linked (cgo)")
			}
			if len(libs) != 0 {
				t.Errorf("SharedLibraries(static test binary) = %q, want none", libs)
			}
		}},
		{name: "not an ELF file", exe: notELF, wantErr: notELF},
		{name: "missing", exe: filepath.Join(t.TempDir(), "none"), wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			libs, err := SharedLibraries(tt.exe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SharedLibraries(%s) = %q, %v; want an error containing %q", tt.exe, libs, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want(t, libs)
		})
	}
}

// TestBuildLibraries builds an image of a host executable with Libraries
// and checks that its interpreter and libraries are in the layer, at their
// host paths, with the host files' content.
func TestBuildLibraries(t *testing.T) {
	exe, interp := dynamicExecutable(t)
	libs, err := SharedLibraries(exe)
	if err != nil {
		t.Fatal(err)
	}
	b := Builtin{
		Name: "tool", Ref: "registry.k8s.io/tool:1", Entrypoint: []string{"/tool"},
		Extra: []File{{Path: "/tool", Source: exe, Libraries: true}},
	}
	out := filepath.Join(t.TempDir(), b.FileName())
	if err := Build(b, t.TempDir(), out); err != nil {
		t.Fatal(err)
	}
	_, entries := readImage(t, out, b.Ref)
	byName := map[string]layerEntry{}
	for _, e := range entries {
		byName[e.hdr.Name] = e
	}
	for _, l := range append([]string{interp}, libs...) {
		want, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := byName[layerName(l)]
		if !ok {
			t.Errorf("no %s in the layer", l)
			continue
		}
		if e.content != string(want) {
			t.Errorf("%s: %d bytes in the layer, want the host file's %d", l, len(e.content), len(want))
		}
	}
	if _, ok := byName["tool"]; !ok {
		t.Error("no /tool in the layer")
	}
}
