package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestWriteRandomImageIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	const size = 64 << 10
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	na, err := WriteRandomImage(a, size)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := WriteRandomImage(b, size)
	if err != nil {
		t.Fatal(err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if na != nb || !bytes.Equal(ba, bb) {
		t.Fatalf("two images of the same size differ (%d and %d bytes)", na, nb)
	}
	// Random content does not compress: the tarball is at least the layer.
	if na < size {
		t.Errorf("tarball is %d bytes, want at least %d", na, size)
	}
	tag, err := name.NewTag(imageRef)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(a, &tag)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s (containerd imports by platform)", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
}
