package imagefolder

import (
	"context"
	"fmt"
	"strconv"

	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/cri"
)

// SourcePrefix starts the source label (containerd.LabelSource) of images
// from the folder; the file's name follows.
const SourcePrefix = "folder:"

// SourceLabel is the value of containerd.LabelSource on the images the
// file named name (in the folder) provides, e.g. "folder:app.tar".
func SourceLabel(name string) string { return SourcePrefix + name }

// Runtime is what the folder does on a node's containerd, named by its
// socket. Its methods are those of pkg/components/containerd, and Containerd is the
// Runtime of real nodes; tests use fakes.
type Runtime interface {
	// Import imports the image tarball at path into the node's containerd,
	// as containerd.Import: all or nothing, the error naming the file.
	Import(ctx context.Context, to containerd.Target, path string, opts containerd.ImportOptions) ([]containerd.ImportedImage, error)
	// Pull pulls the normalized reference ref through CRI, as the kubelet
	// would (also when the image is present), and sets labels on it.
	Pull(ctx context.Context, socket, ref string, labels map[string]string) (containerd.ImportedImage, error)
	// List lists the node's images, as containerd.List.
	List(ctx context.Context, socket string, filters ...string) ([]containerd.ImportedImage, error)
	// SetLabels sets (or, with "", removes) labels on the image ref, as
	// containerd.SetLabels; errors match errdefs.ErrNotFound when there is
	// no such image.
	SetLabels(ctx context.Context, socket, ref string, labels map[string]string) error
}

// Containerd is the Runtime of real nodes: pkg/components/containerd's image
// functions, and CRI for pulls.
type Containerd struct {
	// Importer imports tarballs, reading each once for all nodes; nil
	// imports into each node on its own (containerd.Import).
	Importer *containerd.Importer
}

// Import implements Runtime with the Importer, or containerd.Import.
func (c Containerd) Import(ctx context.Context, to containerd.Target, path string, opts containerd.ImportOptions) ([]containerd.ImportedImage, error) {
	if c.Importer == nil {
		return containerd.Import(ctx, to.Socket, path, opts)
	}
	return c.Importer.Import(ctx, to, path, opts)
}

// List implements Runtime with containerd.List.
func (Containerd) List(ctx context.Context, socket string, filters ...string) ([]containerd.ImportedImage, error) {
	return containerd.List(ctx, socket, filters...)
}

// SetLabels implements Runtime with containerd.SetLabels.
func (Containerd) SetLabels(ctx context.Context, socket, ref string, labels map[string]string) error {
	return containerd.SetLabels(ctx, socket, ref, labels)
}

// Pull implements Runtime: CRI PullImage, which resolves ref through the
// registry hosts configured for containerd (hosts.toml), then the labels,
// set with containerd's client, which the CRI plugin picks up.
func (Containerd) Pull(ctx context.Context, socket, ref string, labels map[string]string) (containerd.ImportedImage, error) {
	client, err := cri.Dial(ctx, socket)
	if err != nil {
		return containerd.ImportedImage{}, err
	}
	defer client.Close()
	if _, err := client.Images.PullImage(ctx, &runtime.PullImageRequest{Image: &runtime.ImageSpec{Image: ref}}); err != nil {
		return containerd.ImportedImage{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	if err := containerd.SetLabels(ctx, socket, ref, labels); err != nil {
		return containerd.ImportedImage{}, err
	}
	img, ok, err := lookup(ctx, Containerd{}, socket, ref)
	if err != nil {
		return containerd.ImportedImage{}, err
	}
	if !ok {
		return containerd.ImportedImage{}, fmt.Errorf("pull %s: no image of that name after the pull", ref)
	}
	return img, nil
}

// lookup returns the image named ref on the node, if there is one.
func lookup(ctx context.Context, rt Runtime, socket, ref string) (containerd.ImportedImage, bool, error) {
	imgs, err := rt.List(ctx, socket, "name=="+strconv.Quote(ref))
	if err != nil {
		return containerd.ImportedImage{}, false, err
	}
	for _, img := range imgs {
		if img.Ref == ref {
			return img, true, nil
		}
	}
	return containerd.ImportedImage{}, false, nil
}
