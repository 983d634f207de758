package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/containerd/errdefs"
	"github.com/containerd/log"
	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Target is one node's containerd as an importer reaches it.
type Target struct {
	// Socket is containerd's gRPC socket.
	Socket string
	// Root is containerd's root directory (config.toml's root) as this
	// process sees it. When set, and on the importer's filesystem, blobs
	// are hard-linked into its content store; "" copies them through
	// containerd.
	Root string
}

// contentBlobs is where containerd's local content store (plugin
// io.containerd.content.v1.content, under the root) keeps committed blobs,
// one immutable file per digest: blobs/<algorithm>/<encoded digest>. The
// Importer's own store has the same layout under its directory.
const contentBlobs = "io.containerd.content.v1.content/blobs"

// Importer imports image archives into the containerd of many nodes and
// reads each archive once. The first import of a version of a file (by
// path, size and mtime) reads it into a content store of the importer's
// own, a directory on the nodes' filesystem, checking every layer against
// its image config; then every node, concurrently or later, gets the
// images' blobs as hard links into its content store (containerd's shared
// content policy, its default, then records them without a copy) and its
// image records. Importing into N nodes thus writes and hashes the bytes
// once. Blobs that cannot be linked (another filesystem) are copied
// through containerd.
//
// Images are not unpacked on import: the CRI plugin unpacks an image for
// the node's snapshotter when a container first uses it there, so nodes
// pay only for the images they run.
//
// An Importer is safe for concurrent use. Close removes its store; the
// nodes keep their links.
type Importer struct {
	dir    string
	store  content.Store
	labels *labelStore

	mu      sync.Mutex
	sources map[string]*source // by archive path
}

// source is the first read of one version of an archive.
type source struct {
	size  int64
	mtime time.Time
	done  chan struct{} // closed when named and err are set
	named []images.Image
	err   error
}

// NewImporter returns an Importer whose store is the directory dir, made
// if missing; it must be on the nodes' filesystem for blobs to be linked
// (the cluster's state dir is). The caller owns dir: Close removes it.
func NewImporter(dir string) (*Importer, error) {
	// The store warns through containerd's global logger when the
	// filesystem lacks fs-verity, which it does not need.
	_ = log.SetLevel("error")
	ls := &labelStore{labels: map[digest.Digest]map[string]string{}}
	store, err := local.NewLabeledStore(dir, ls)
	if err != nil {
		return nil, fmt.Errorf("image importer store: %w", err)
	}
	return &Importer{dir: dir, store: store, labels: ls, sources: map[string]*source{}}, nil
}

// Close removes the importer's store. Imports still running fail.
func (im *Importer) Close() error {
	return os.RemoveAll(im.dir)
}

// Import imports the images of the archive at path into the containerd of
// to, as Import does: a docker-archive or OCI layout, compressed or not;
// the host's platform only; each image named created or updated, with
// opts.Labels; all or nothing, the error naming the file; a corrupt layer
// refused. It returns the images sorted by Ref. The archive is read only
// if no import of this version of it succeeded before (see Importer).
func (im *Importer) Import(ctx context.Context, to Target, path string, opts ImportOptions) ([]ImportedImage, error) {
	named, err := im.read(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("import images from %s: %w", path, err)
	}
	out, err := im.replicate(ctx, named, to, opts)
	if err != nil {
		return nil, fmt.Errorf("import images from %s: %w", path, err)
	}
	return out, nil
}

// read returns the images of the archive at path in the importer's store,
// reading the archive unless this version of it was read before. Callers
// for one version wait for the first; if that one was cancelled, the next
// reads it.
func (im *Importer) read(ctx context.Context, path string) ([]images.Image, error) {
	for {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		im.mu.Lock()
		s := im.sources[path]
		if s == nil || s.size != fi.Size() || !s.mtime.Equal(fi.ModTime()) {
			s = &source{size: fi.Size(), mtime: fi.ModTime(), done: make(chan struct{})}
			im.sources[path] = s
			im.mu.Unlock()
			s.named, s.err = readArchive(ctx, im.store, path)
			if s.err != nil {
				im.forget(path, s) // the next import tries again
			}
			close(s.done)
			return s.named, s.err
		}
		im.mu.Unlock()
		select {
		case <-s.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s.err != nil && (errors.Is(s.err, context.Canceled) || errors.Is(s.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			continue // the first reader gave up, not the archive
		}
		return s.named, s.err
	}
}

// forget drops s as the source of path unless a newer one replaced it.
func (im *Importer) forget(path string, s *source) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.sources[path] == s {
		delete(im.sources, path)
	}
}

// replicate gives to the images named, which the importer's store holds:
// every blob of theirs for the host's platform is linked (or copied) into
// to's content store with the store's labels, then the image records are
// created or updated with opts.Labels. On failure nothing new is
// referenced in to, and its lease is dropped for the garbage collector.
func (im *Importer) replicate(ctx context.Context, named []images.Image, to Target, opts ImportOptions) ([]ImportedImage, error) {
	dst, dctx, err := connect(ctx, to.Socket)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	var out []ImportedImage
	err = withLease(dctx, dst, func(lctx context.Context) error {
		dcs := dst.ContentStore()
		seen := map[digest.Digest]bool{}
		var handler images.HandlerFunc = func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
			if seen[desc.Digest] {
				return nil, nil
			}
			seen[desc.Digest] = true
			if err := im.copyBlob(ctx, lctx, dcs, to.Root, desc); err != nil {
				return nil, err
			}
			return images.Children(ctx, im.store, desc)
		}
		for _, img := range named {
			if err := images.Walk(ctx, images.FilterPlatforms(handler, platforms.Default()), img.Target); err != nil {
				return fmt.Errorf("image %s: %w", img.Name, err)
			}
		}
		out, err = saveImages(lctx, dst.ImageService(), named, opts.Labels)
		return err
	})
	return out, err
}

// copyBlob gives dcs the blob desc of the importer's store, with the
// store's labels for it. With droot set, the blob file is hard-linked
// first; otherwise, or when the link fails, the bytes are copied through
// containerd.
func (im *Importer) copyBlob(ctx, dctx context.Context, dcs content.Store, droot string, desc ocispec.Descriptor) error {
	info, err := im.store.Info(ctx, desc.Digest)
	if err != nil {
		return fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	if droot != "" {
		_ = im.linkBlob(droot, desc.Digest) // on failure, copied below
	}
	w, err := content.OpenWriter(dctx, dcs, content.WithRef("kubernix-import-"+desc.Digest.String()), content.WithDescriptor(desc))
	if errdefs.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	defer w.Close()
	ra, err := im.store.ReaderAt(ctx, desc)
	if err != nil {
		return fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	defer ra.Close()
	// A section reader seeks: a linked blob, which the writer reports as
	// written in full, is committed without reading it.
	if err := content.Copy(dctx, w, io.NewSectionReader(ra, 0, desc.Size), desc.Size, desc.Digest, content.WithLabels(info.Labels)); err != nil && !errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	return nil
}

// linkBlob hard-links the blob d of the importer's store into the content
// store of the containerd whose root is root. A blob already there is left
// as it is.
func (im *Importer) linkBlob(root string, d digest.Digest) error {
	rel := filepath.Join(d.Algorithm().String(), d.Encoded())
	dst := filepath.Join(root, contentBlobs, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	err := os.Link(filepath.Join(im.dir, "blobs", rel), dst)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// labelStore keeps the labels of the importer's store in memory
// (local.LabelStore): the children references SetChildrenLabels sets,
// which each node's copy of a blob gets so that its garbage collector
// keeps an image's content.
type labelStore struct {
	mu     sync.Mutex
	labels map[digest.Digest]map[string]string
}

func (s *labelStore) Get(d digest.Digest) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.labels[d]), nil
}

func (s *labelStore) Set(d digest.Digest, labels map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels[d] = maps.Clone(labels)
	return nil
}

func (s *labelStore) Update(d digest.Digest, update map[string]string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.labels[d]
	if cur == nil {
		cur = map[string]string{}
	}
	for k, v := range update {
		if v == "" {
			delete(cur, k)
		} else {
			cur[k] = v
		}
	}
	s.labels[d] = cur
	return maps.Clone(cur), nil
}
