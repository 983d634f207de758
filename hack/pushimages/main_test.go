package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestTarget(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"registry.k8s.io/e2e-test-images/agnhost:2.55", "localhost:5001/e2e-test-images/agnhost:2.55"},
		{"registry.k8s.io/pause:3.10", "localhost:5001/pause:3.10"},
		{"busybox:1.37", "localhost:5001/library/busybox:1.37"},
		{"docker.io/library/nginx:1.27.0-2", "localhost:5001/library/nginx:1.27.0-2"},
		{"quay.io/a/b/c", "localhost:5001/a/b/c:latest"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			src, err := name.NewTag(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Target("localhost:5001", src)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want || got.Scheme() != "http" {
				t.Errorf("Target = %s (%s), want %s over http", got, got.Scheme(), tt.want)
			}
		})
	}
}

// TestRun pushes a tarball of two tagged images to an in-memory registry
// and finds each under its path; a file that is not a docker-archive and
// a missing -registry are errors naming them.
func TestRun(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	a, _ := random.Image(64, 1)
	b, _ := random.Image(64, 1)
	tar := filepath.Join(dir, "images.tar")
	refs := map[name.Reference]v1.Image{
		name.MustParseReference("registry.k8s.io/e2e-test-images/agnhost:2.55"): a,
		name.MustParseReference("busybox:1.37.0-2"):                             b,
	}
	if err := tarball.MultiRefWriteToFile(tar, refs); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.tar")
	if err := os.WriteFile(bad, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		pushed  map[string]v1.Image
	}{
		{"push", []string{"-registry", host, tar}, "", map[string]v1.Image{
			host + "/e2e-test-images/agnhost:2.55": a, host + "/library/busybox:1.37.0-2": b}},
		{"not an archive", []string{"-registry", host, bad}, bad + ": not a docker-archive tarball", nil},
		{"no registry", []string{tar}, "-registry or -state-dir: missing", nil},
		{"state dir without a cluster", []string{"-state-dir", dir, tar}, "-state-dir " + dir + ": the cluster's recorded config", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), &out, &out, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for ref, want := range tt.pushed {
				r, err := name.ParseReference(ref, name.Insecure)
				if err != nil {
					t.Fatal(err)
				}
				got, err := remote.Image(r)
				if err != nil {
					t.Fatalf("%s not in the registry: %v\noutput:\n%s", ref, err, out.String())
				}
				gd, _ := got.Digest()
				wd, _ := want.Digest()
				if gd != wd {
					t.Errorf("%s is %s, want %s", ref, gd, wd)
				}
			}
		})
	}
}
