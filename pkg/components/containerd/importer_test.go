package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/cri"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/platforms"

	kimages "github.com/kubernix/kubernix/pkg/images"
)

// TestImporter imports into two real containerds with one Importer: the
// archive is read once, the second node's blobs are hard links to the
// first's, and the second node runs a container from them (unpacked by the
// CRI plugin on first use).
func TestImporter(t *testing.T) {
	needContainerd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pause, other, unique := buildImages(t)
	nodes := []*testNode{startContainerd(t), startContainerd(t)}
	targets := make([]Target, len(nodes))
	for i, n := range nodes {
		targets[i] = Target{Socket: n.cfg.Address, Root: n.cfg.Root}
	}
	dir, err := os.MkdirTemp("/tmp", "kbxtest-importer-") // on the nodes' filesystem
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	im, err := NewImporter(dir)
	if err != nil {
		t.Fatal(err)
	}

	// importAll imports path into every node at once, as `image load` does.
	importAll := func(t *testing.T, path string) ([][]ImportedImage, []error) {
		t.Helper()
		results, errs := make([][]ImportedImage, len(targets)), make([]error, len(targets))
		var wg sync.WaitGroup
		for i, to := range targets {
			wg.Go(func() {
				results[i], errs[i] = im.Import(ctx, to, path, ImportOptions{Labels: map[string]string{LabelSource: path}})
			})
		}
		wg.Wait()
		return results, errs
	}

	t.Run("shared blobs", func(t *testing.T) {
		for _, path := range []string{pause, unique} {
			results, errs := importAll(t, path)
			for i := range targets {
				if errs[i] != nil {
					t.Fatalf("node %d: %v", i, errs[i])
				}
				if len(results[i]) != 1 || results[i][0].Digest != results[0][0].Digest || results[i][0].Labels[LabelSource] != path {
					t.Errorf("node %d imported %+v, want what node 0 did: %+v", i, results[i], results[0])
				}
			}
		}
		// Every blob of the nodes' is the importer's file.
		for i, n := range nodes {
			nodeBlobs := filepath.Join(n.cfg.Root, contentBlobs)
			linked := 0
			err := filepath.WalkDir(nodeBlobs, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(nodeBlobs, p)
				a, err := os.Stat(filepath.Join(dir, "blobs", rel))
				if err != nil {
					return fmt.Errorf("blob %s not from the importer: %w", rel, err)
				}
				b, err := os.Stat(p)
				if err != nil {
					return err
				}
				if !os.SameFile(a, b) {
					t.Errorf("node %d: blob %s is a copy, not a link", i, rel)
				}
				linked++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if linked < 4 { // two manifests and configs, at least
				t.Errorf("node %d has %d blobs, want every blob of both images", i, linked)
			}
		}
	})

	t.Run("run replicated image", func(t *testing.T) {
		for i, n := range nodes {
			client, err := cri.Dial(ctx, n.cfg.Address)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			waitPinned(ctx, t, client, n.cfg.SandboxImage, true)
			if i == 1 {
				runPod(ctx, t, client, n, "example.com/kbxtest/unique:1")
				if err := client.RemoveAll(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	})

	t.Run("corrupt archive", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "badlayer.tar")
		if err := os.WriteFile(path, corruptLayer(t, other), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errs := importAll(t, path)
		for i, to := range targets {
			if errs[i] == nil || !strings.Contains(errs[i].Error(), path) {
				t.Errorf("node %d: error %v, want one naming %s", i, errs[i], path)
			}
			if list, err := List(ctx, to.Socket); err != nil {
				t.Fatal(err)
			} else if _, ok := find(list, otherRef); ok {
				t.Errorf("node %d has %s after a failed import", i, otherRef)
			}
		}
	})

	t.Run("read once per version", func(t *testing.T) {
		// After node 0's import, the file's bytes go bad with its size and
		// mtime kept: node 1 still gets the images, since the archive is
		// not read again. A new mtime makes it a new version, read anew.
		path := extraImage(t, "example.com/kbxtest/once:1", "read once")
		if _, err := im.Import(ctx, targets[0], path, ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, fi.Size()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if got, err := im.Import(ctx, targets[1], path, ImportOptions{}); err != nil || len(got) != 1 {
			t.Fatalf("second node: %+v, %v; want the image from the first read", got, err)
		}
		later := fi.ModTime().Add(time.Second)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
		if _, err := im.Import(ctx, targets[1], path, ImportOptions{}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("changed file: %v, want an error naming %s", err, path)
		}
	})

	t.Run("copied without a root", func(t *testing.T) {
		path := extraImage(t, "example.com/kbxtest/copied:1", "copied, not linked")
		to := Target{Socket: targets[1].Socket} // no Root: blobs go through containerd
		got, err := im.Import(ctx, to, path, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Ref != "example.com/kbxtest/copied:1" {
			t.Fatalf("imported %+v", got)
		}
		// Its layer is in node 1's store as a file of its own.
		c, cctx, err := connect(ctx, to.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		img, err := c.GetImage(cctx, got[0].Ref)
		if err != nil {
			t.Fatal(err)
		}
		m, err := images.Manifest(cctx, c.ContentStore(), img.Target(), platforms.Default())
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.Join("sha256", m.Layers[0].Digest.Encoded())
		a, errA := os.Stat(filepath.Join(dir, "blobs", rel))
		b, errB := os.Stat(filepath.Join(nodes[1].cfg.Root, contentBlobs, rel))
		if errA != nil || errB != nil || os.SameFile(a, b) {
			t.Errorf("layer: importer %v, node %v, same file %v; want two files", errA, errB, errA == nil && errB == nil && os.SameFile(a, b))
		}
	})

	t.Run("close", func(t *testing.T) {
		if err := im.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("store still there after Close: %v", err)
		}
		// The nodes keep their images.
		client, err := cri.Dial(ctx, targets[0].Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		runPod(ctx, t, client, nodes[0], "example.com/kbxtest/unique:1")
		if err := client.RemoveAll(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// extraImage builds a docker-archive of the pause binary plus a file with
// content, tagged ref, and returns its path.
func extraImage(t *testing.T, ref, content string) string {
	t.Helper()
	b, _ := kimages.Lookup("pause")
	b.Name, b.Ref = "extra", ref
	b.Extra = []kimages.File{{Path: "/extra", Content: []byte(content)}}
	if _, err := os.Stat(filepath.Join(binDir, b.Binary)); err != nil {
		t.Skipf("needs %s (make bins)", filepath.Join(binDir, b.Binary))
	}
	out := filepath.Join(t.TempDir(), b.FileName())
	if err := kimages.Build(b, binDir, out); err != nil {
		t.Fatal(err)
	}
	return out
}
