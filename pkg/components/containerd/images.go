package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/archive/compression"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
)

// Namespace is the containerd namespace of the CRI plugin: images there are
// the kubelet's.
const Namespace = "k8s.io"

// Labels kubernix sets on images.
const (
	// LabelPinned, set to PinnedValue, keeps the kubelet's image garbage
	// collection from removing an image (CRI reports it as pinned).
	LabelPinned = "io.cri-containerd.pinned"
	// PinnedValue is the value of LabelPinned on a pinned image.
	PinnedValue = "pinned"
	// LabelSource records the tarball an image was imported from.
	LabelSource = "io.kubernix.source"
)

// ImportedImage is an image in containerd's image store.
type ImportedImage struct {
	// Ref is the image's name, a normalized reference such as
	// "registry.k8s.io/pause:3.10.2".
	Ref string
	// Digest is the digest of the image's target (its manifest or index),
	// e.g. "sha256:…".
	Digest string
	// Labels are the image's containerd labels, such as LabelPinned.
	Labels map[string]string
}

// ImportOptions tune Import.
type ImportOptions struct {
	// Labels are set on every imported image (keeping its other labels); a
	// label with an empty value is removed.
	Labels map[string]string
}

// Import imports the images of the tarball at path into the containerd
// listening on socket, in Namespace: a docker-archive ("docker save") or an
// OCI image layout archive, uncompressed or compressed with gzip or zstd
// (told by content, not by name). Only the host's platform is imported.
// Each image named in the archive is created, or updated to the archive's
// content if it exists, with opts.Labels added; images are returned sorted
// by Ref.
//
// Images are not unpacked: the CRI plugin unpacks an image for its
// snapshotter when a container first uses it. Instead every layer is
// checked against the image config's diff IDs, and image records are
// written only after every image checked out, so a corrupt archive or a
// non-image file leaves no new or changed image behind: the error names the
// file, and the content ingested so far is held only by a lease that is
// dropped, for containerd's garbage collector. Archives that name no image
// are an error too. To import one archive into many nodes, use an Importer.
func Import(ctx context.Context, socket, path string, opts ImportOptions) ([]ImportedImage, error) {
	imgs, err := importFile(ctx, socket, path, opts)
	if err != nil {
		return nil, fmt.Errorf("import images from %s: %w", path, err)
	}
	return imgs, nil
}

// importFile is Import without the file name in the error.
func importFile(ctx context.Context, socket, path string, opts ImportOptions) ([]ImportedImage, error) {
	c, ctx, err := connect(ctx, socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []ImportedImage
	err = withLease(ctx, c, func(lctx context.Context) error {
		named, err := readArchive(lctx, c.ContentStore(), path)
		if err != nil {
			return err
		}
		out, err = saveImages(lctx, c.ImageService(), named, opts.Labels)
		return err
	})
	return out, err
}

// readArchive ingests the image archive at path (see Import for the
// formats) into cs and returns its named images for the host's platform,
// sorted by name, their content labelled with its children and their
// layers checked against their configs (checkLayers).
func readArchive(ctx context.Context, cs content.Store, path string) ([]images.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := compression.DecompressStream(f)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	defer r.Close()
	index, err := archive.ImportIndex(ctx, cs, r)
	if err != nil {
		return nil, fmt.Errorf("read image archive (docker-archive or OCI layout): %w", err)
	}
	named, err := namedImages(ctx, cs, index)
	if err != nil {
		return nil, err
	}
	if len(named) == 0 {
		return nil, errors.New("the archive names no image")
	}
	for _, img := range named {
		if err := checkLayers(ctx, cs, img); err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Name, err)
		}
	}
	return named, nil
}

// checkLayers checks that the layers of img's manifest for the host's
// platform are those its config lists by diff ID (the digest of the
// uncompressed layer), decompressing the compressed ones: what unpacking
// would find wrong with the content, found without writing a snapshot.
func checkLayers(ctx context.Context, cs content.Store, img images.Image) error {
	m, err := images.Manifest(ctx, cs, img.Target, platforms.Default())
	if err != nil {
		return err
	}
	diffIDs, err := images.RootFS(ctx, cs, m.Config)
	if err != nil {
		return err
	}
	if len(diffIDs) != len(m.Layers) {
		return fmt.Errorf("the manifest has %d layers, the config %d diff IDs: the archive is corrupt", len(m.Layers), len(diffIDs))
	}
	for i, l := range m.Layers {
		got, err := diffID(ctx, cs, l)
		if err != nil {
			return fmt.Errorf("layer %d (%s): %w", i+1, l.Digest, err)
		}
		if got != diffIDs[i] {
			return fmt.Errorf("layer %d (%s) is not the config's diff ID %s (it has %s): the archive is corrupt", i+1, l.Digest, diffIDs[i], got)
		}
	}
	return nil
}

// diffID returns the digest of layer l uncompressed: its own digest when it
// is stored uncompressed, by its media type or, for media types that leave
// it open (Docker's plain "diff.tar"), by its first bytes.
func diffID(ctx context.Context, cs content.Store, l ocispec.Descriptor) (digest.Digest, error) {
	compressed, err := images.DiffCompression(ctx, l.MediaType)
	if err != nil {
		return "", err
	}
	if compressed == "" {
		return l.Digest, nil
	}
	ra, err := cs.ReaderAt(ctx, l)
	if err != nil {
		return "", err
	}
	defer ra.Close()
	head := make([]byte, 16)
	n, err := ra.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if compression.DetectCompression(head[:n]) == compression.Uncompressed {
		return l.Digest, nil
	}
	r, err := compression.DecompressStream(io.NewSectionReader(ra, 0, l.Size))
	if err != nil {
		return "", fmt.Errorf("decompress: %w", err)
	}
	defer r.Close()
	d := digest.Canonical.Digester()
	if _, err := io.Copy(d.Hash(), r); err != nil {
		return "", fmt.Errorf("decompress: %w", err)
	}
	return d.Digest(), nil
}

// withLease runs f with a context holding a new lease of c's, which keeps
// what f ingests (content, ingests) until image records reference it. The
// lease is deleted after f: synchronously when f failed, so that the
// garbage collector has removed what only the lease held, partial ingests
// included, which would otherwise break the next import of an archive with
// the same file names.
func withLease(ctx context.Context, c *client.Client, f func(lctx context.Context) error) (err error) {
	ls := c.LeasesService()
	lease, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(time.Hour))
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	defer func() {
		var deleteOpts []leases.DeleteOpt
		if err != nil {
			deleteOpts = append(deleteOpts, leases.SynchronousDelete)
		}
		if derr := ls.Delete(context.WithoutCancel(ctx), lease, deleteOpts...); derr != nil && err == nil {
			err = fmt.Errorf("release lease: %w", derr)
		}
	}()
	return f(leases.WithLease(ctx, lease.ID))
}

// connect returns a containerd client for socket (with opts), and ctx in
// Namespace. The
// client library logs through the context's logger (by default logrus'
// global one, to stderr); ctx gets one that discards, since every failure
// it would log is also returned.
func connect(ctx context.Context, socket string, opts ...client.Opt) (*client.Client, context.Context, error) {
	c, err := client.New(socket, append([]client.Opt{client.WithDefaultNamespace(Namespace)}, opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to containerd at %s: %w", socket, err)
	}
	discard := logrus.New()
	discard.SetOutput(io.Discard)
	ctx = log.WithLogger(ctx, logrus.NewEntry(discard))
	return c, namespaces.WithNamespace(ctx, Namespace), nil
}

// namedImages walks the imported index for the host's platform, labels the
// content so it is kept once an image references the top, and returns an
// image for each name in the index, sorted by name. A docker-archive's tags
// arrive as full names; an OCI layout's org.opencontainers.image.ref.name is
// used when it is a full reference (with a repository, not only a tag).
func namedImages(ctx context.Context, cs content.Store, index ocispec.Descriptor) ([]images.Image, error) {
	named := map[string]images.Image{}
	var handler images.HandlerFunc = func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		if desc.Digest != index.Digest {
			return images.Children(ctx, cs, desc)
		}
		b, err := content.ReadBlob(ctx, cs, desc)
		if err != nil {
			return nil, err
		}
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		for _, m := range idx.Manifests {
			if _, ok := m.Annotations[images.AnnotationManifestSubject]; ok {
				continue // a referrer (signature, SBOM), not an image
			}
			if name := imageName(m.Annotations); name != "" {
				named[name] = images.Image{Name: name, Target: m}
			}
		}
		return idx.Manifests, nil
	}
	h := images.SetChildrenLabels(cs, images.FilterPlatforms(handler, platforms.Default()))
	if err := images.WalkNotEmpty(ctx, h, index); err != nil {
		return nil, fmt.Errorf("read archive content: %w", err)
	}
	out := slices.Collect(maps.Values(named))
	slices.SortFunc(out, func(a, b images.Image) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// imageName returns the image name an index entry's annotations give, or
// "" if none.
func imageName(annotations map[string]string) string {
	if name := annotations[images.AnnotationImageName]; name != "" {
		return name
	}
	name := annotations[ocispec.AnnotationRefName]
	if !strings.ContainsAny(name, "/:@") {
		return "" // a bare tag names no repository
	}
	ref, err := reference.ParseDockerRef(name)
	if err != nil {
		return ""
	}
	return ref.String()
}

// saveImages creates or updates the image records named with labels added,
// and on failure deletes those it created.
func saveImages(ctx context.Context, is images.Store, named []images.Image, labels map[string]string) ([]ImportedImage, error) {
	fields := []string{"target"}
	for k := range labels {
		fields = append(fields, "labels."+k)
	}
	var (
		out     []ImportedImage
		created []string
	)
	for _, img := range named {
		img.Labels = maps.Clone(labels)
		got, err := is.Update(ctx, img, fields...)
		if errdefs.IsNotFound(err) {
			for k, v := range img.Labels {
				if v == "" {
					delete(img.Labels, k)
				}
			}
			got, err = is.Create(ctx, img)
			if err == nil {
				created = append(created, img.Name)
			}
		}
		if err != nil {
			for _, name := range created {
				if derr := is.Delete(context.WithoutCancel(ctx), name); derr != nil {
					err = errors.Join(err, fmt.Errorf("roll back %s: %w", name, derr))
				}
			}
			return nil, fmt.Errorf("store image %s: %w", img.Name, err)
		}
		out = append(out, imported(got))
	}
	return out, nil
}

func imported(img images.Image) ImportedImage {
	return ImportedImage{Ref: img.Name, Digest: img.Target.Digest.String(), Labels: img.Labels}
}

// List returns the images in Namespace of the containerd listening on
// socket, sorted by Ref. filters are containerd image filters, ANDed within
// one and ORed between several, e.g. `labels."io.kubernix.source"==/x.tar`;
// none lists all.
func List(ctx context.Context, socket string, filters ...string) ([]ImportedImage, error) {
	c, ctx, err := connect(ctx, socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	imgs, err := c.ImageService().List(ctx, filters...)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]ImportedImage, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, imported(img))
	}
	slices.SortFunc(out, func(a, b ImportedImage) int { return strings.Compare(a.Ref, b.Ref) })
	return out, nil
}

// SetLabels sets labels on the image ref in Namespace, keeping its other
// labels; a label with an empty value is removed. It returns an error
// matching errdefs.ErrNotFound when there is no such image.
func SetLabels(ctx context.Context, socket, ref string, labels map[string]string) error {
	c, ctx, err := connect(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	fields := make([]string, 0, len(labels))
	for k := range labels {
		fields = append(fields, "labels."+k)
	}
	if len(fields) == 0 {
		return nil
	}
	if _, err := c.ImageService().Update(ctx, images.Image{Name: ref, Labels: labels}, fields...); err != nil {
		return fmt.Errorf("set labels of image %s: %w", ref, err)
	}
	return nil
}

// Pin marks the image ref pinned, so the kubelet never garbage-collects it.
// It returns an error matching errdefs.ErrNotFound when there is no such
// image.
func Pin(ctx context.Context, socket, ref string) error {
	return SetLabels(ctx, socket, ref, map[string]string{LabelPinned: PinnedValue})
}

// Unpin removes the pinned mark of the image ref. It returns an error
// matching errdefs.ErrNotFound when there is no such image.
func Unpin(ctx context.Context, socket, ref string) error {
	return SetLabels(ctx, socket, ref, map[string]string{LabelPinned: ""})
}
