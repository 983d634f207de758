package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/images"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	outDir := filepath.Join(dir, "images")
	busybox := filepath.Join(dir, "busybox")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{busybox, filepath.Join(binDir, "pause"), filepath.Join(binDir, "coredns"), filepath.Join(binDir, "agnhost"), filepath.Join(binDir, "local-path-provisioner"), filepath.Join(binDir, "metrics-server"), filepath.Join(binDir, "traefik")} {
		if err := os.WriteFile(p, []byte("fake "+filepath.Base(p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The agnhost image's tools come from the host's Debian packages
	// (hack/deps.sh installs them).
	for _, f := range images.AgnhostTools() {
		if f.Source == "" {
			continue
		}
		if _, err := os.Stat(f.Source); err != nil {
			t.Skipf("%s of Debian package %s: %v (run hack/deps.sh)", f.Source, f.Package, err)
		}
	}
	k8sDir := filepath.Join(dir, "kubernetes")
	porter := filepath.Join(k8sDir, "test/images/agnhost/porter")
	if err := os.MkdirAll(porter, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"localhost.crt", "localhost.key"} {
		if err := os.WriteFile(filepath.Join(porter, n), []byte("fake "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"-bin-dir", binDir, "-out", outDir, "-busybox", busybox, "-kubernetes-dir", k8sDir}
	allRefs := []string{images.PauseRef(), images.CoreDNSRef(), images.AgnhostRef(), images.LocalPathProvisionerRef(), images.BusyboxRef(), images.MetricsServerRef(), images.TraefikRef()}

	// The steps run in order: each sees the images the ones before built.
	steps := []struct {
		name    string
		args    []string
		want    []string // one prefix per output line
		wantErr string
		before  func(t *testing.T)
	}{
		{name: "cold", args: common, want: prefixed("built ", allRefs)},
		{name: "warm", args: common, before: sameTimes(dir), want: prefixed("up-to-date ", allRefs)},
		{name: "forced by name", args: append(append([]string{}, common...), "-force", "coredns"), want: []string{"built " + images.CoreDNSRef()}},
		{name: "unknown name", args: append(append([]string{}, common...), "pause", "nope"), wantErr: "unknown image nope; known: pause, coredns, agnhost, local-path-provisioner, busybox, metrics-server, traefik"},
		{name: "no busybox", args: []string{"-bin-dir", binDir, "-out", t.TempDir(), "-busybox", filepath.Join(dir, "none"), "-kubernetes-dir", k8sDir, "agnhost"}, wantErr: images.BusyboxPackage},
		{name: "no porter files", args: []string{"-bin-dir", binDir, "-out", t.TempDir(), "-busybox", busybox, "-kubernetes-dir", dir, "agnhost"}, wantErr: filepath.Join(dir, "test/images/agnhost/porter/localhost.crt")},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before(t)
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), &stdout, &stderr, s.args)
		if s.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), s.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", s.name, err, s.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != len(s.want) {
			t.Fatalf("%s: output %q, want %d lines", s.name, stdout.String(), len(s.want))
		}
		for i, want := range s.want {
			if got := strings.Join(strings.Fields(lines[i]), " "); !strings.HasPrefix(got, want+" sha256:") {
				t.Errorf("%s: line %q, want it to start with %q and the image ID", s.name, lines[i], want)
			}
		}
	}
}

// prefixed returns each of refs after prefix.
func prefixed(prefix string, refs []string) []string {
	var out []string
	for _, r := range refs {
		out = append(out, prefix+r)
	}
	return out
}

// sameTimes gives every file under dir one modification time, as the
// kernel's coarse clock does when a fast build writes its output within the
// tick its inputs were written in.
func sameTimes(dir string) func(t *testing.T) {
	return func(t *testing.T) {
		at := time.Now().Truncate(time.Second)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return os.Chtimes(p, at, at)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestRetag: a reference of an image's repository under another tag makes
// that image under it, once; one it already has, or of a repository no
// image has, makes none; a reference that does not parse is an error.
func TestRetag(t *testing.T) {
	set := []images.Builtin{
		{Name: "agnhost-prev", Ref: "registry.k8s.io/e2e-test-images/agnhost:2.55", Binary: "agnhost-prev", Path: "/agnhost"},
		{Name: "agnhost", Ref: "registry.k8s.io/e2e-test-images/agnhost:2.66.1", Binary: "agnhost", Path: "/agnhost"},
		{Name: "pause", Ref: "registry.k8s.io/pause:3.10.2", Binary: "pause", Path: "/pause"},
		{Name: "glibc-dns-testing", Ref: "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1", Binary: "envsh", Path: "/bin/sh"},
	}
	got, err := retag(set, []string{
		"registry.k8s.io/e2e-test-images/agnhost:2.63.0",
		"registry.k8s.io/e2e-test-images/agnhost:2.63.0", // twice: once
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1", // has it
		"registry.k8s.io/pause:3.10.1",
		"registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7", // renamed glibc-dns-testing
		"registry.k8s.io/e2e-test-images/perl:5.26",           // no image of it
	})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, b := range got {
		refs = append(refs, b.Name+" "+b.Ref+" "+b.Binary)
	}
	want := []string{
		"agnhost-2.63.0 registry.k8s.io/e2e-test-images/agnhost:2.63.0 agnhost",
		"pause-3.10.1 registry.k8s.io/pause:3.10.1 pause",
		"glibc-dns-testing-1.7 registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7 envsh",
	}
	if !slices.Equal(refs, want) {
		t.Errorf("retag = %q, want %q", refs, want)
	}
	if set[1].Ref != "registry.k8s.io/e2e-test-images/agnhost:2.66.1" {
		t.Errorf("retag changed its input: %+v", set[1])
	}
	if _, err := retag(set, []string{"not a ref:"}); err == nil {
		t.Error("retag of a reference that does not parse: no error")
	}
}

func TestModuleDir(t *testing.T) {
	tests := []struct {
		name, json, want, wantErr string
	}{
		{name: "source in the cache", json: `{"Path":"k8s.io/kubernetes","Version":"v1.37.2","Dir":"/mod/k8s.io/kubernetes@v1.37.2"}`, want: "/mod/k8s.io/kubernetes@v1.37.2"},
		{name: "only go.mod in the cache", json: `{"Path":"k8s.io/kubernetes","Version":"v1.37.2","GoMod":"/mod/cache/download/k8s.io/kubernetes/@v/v1.37.2.mod"}`,
			wantErr: "the source of k8s.io/kubernetes v1.37.2 is not in the module cache (GOMODCACHE): run `go mod download k8s.io/kubernetes` in bundle/, or pass -kubernetes-dir"},
		{name: "not JSON", json: "/mod/k8s.io/kubernetes@v1.37.2\n", wantErr: "read the go command's module JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := moduleDir([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("moduleDir = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("moduleDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
