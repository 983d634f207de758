package images

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/containerd/v2/plugins/content/local"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestContainerdImport feeds each built tarball to containerd's own importer
// (the code behind client.Import and ctr image import) with a local content
// store, and checks that it names the image after the builtin's ref and keeps
// its config, so the image ID is the one Inspect reports.
func TestContainerdImport(t *testing.T) {
	binDir, builtins := fakeInputs(t)
	outDir := t.TempDir()
	ctx := context.Background()

	for _, b := range builtins {
		t.Run(b.Name, func(t *testing.T) {
			out := filepath.Join(outDir, b.FileName())
			if err := Build(b, binDir, out); err != nil {
				t.Fatal(err)
			}
			info, err := Inspect(out)
			if err != nil {
				t.Fatal(err)
			}

			store, err := local.NewStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			desc, err := archive.ImportIndex(ctx, store, f)
			if err != nil {
				t.Fatalf("containerd import: %v", err)
			}

			var idx ocispec.Index
			readJSON(t, ctx, store, desc, &idx)
			if len(idx.Manifests) != 1 {
				t.Fatalf("index has %d manifests, want 1", len(idx.Manifests))
			}
			m := idx.Manifests[0]
			if got := m.Annotations[images.AnnotationImageName]; got != b.Ref {
				t.Errorf("image name %q, want %q", got, b.Ref)
			}
			if m.Platform == nil || m.Platform.OS != "linux" || m.Platform.Architecture != "amd64" {
				t.Errorf("platform %+v, want linux/amd64", m.Platform)
			}
			var manifest ocispec.Manifest
			readJSON(t, ctx, store, m, &manifest)
			if got := manifest.Config.Digest.String(); got != info.ID {
				t.Errorf("imported config %s, want image ID %s", got, info.ID)
			}
			if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != images.MediaTypeDockerSchema2Layer {
				t.Errorf("layers %+v, want one uncompressed layer", manifest.Layers)
			}
			// Uncompressed, the layer's digest is its diff ID.
			var config ocispec.Image
			readJSON(t, ctx, store, manifest.Config, &config)
			if len(manifest.Layers) == 1 && (len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != manifest.Layers[0].Digest) {
				t.Errorf("diff IDs %v, want the layer digest %s", config.RootFS.DiffIDs, manifest.Layers[0].Digest)
			}
		})
	}
}

func readJSON(t *testing.T, ctx context.Context, store content.Provider, desc ocispec.Descriptor, v any) {
	t.Helper()
	data, err := content.ReadBlob(ctx, store, desc)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
