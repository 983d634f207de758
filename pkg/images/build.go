package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubernix/kubernix/internal/atomicfile"
)

// epoch is the fixed time of every layer entry and of the image config, so
// that builds are reproducible.
var epoch = time.Unix(0, 0).UTC()

// LabelFormat is the image config label holding the Format a built-in
// image was built with.
const LabelFormat = "io.kubernix.image-format"

// LabelDefinition is the image config label holding the digest of the
// Builtin an image was built from (see UpToDate).
const LabelDefinition = "io.kubernix.image-definition"

// Format versions how Build lays images out; UpToDate rebuilds images of
// another. "2": one uncompressed layer (before: gzip-compressed).
const Format = "2"

// imagePath is the PATH every built-in image's config sets.
const imagePath = "/bin"

// Build builds the image b from the static binary binDir/b.Binary and b.Extra,
// and writes it to out as a docker-archive tarball tagged b.Ref, which
// containerd imports as a named image. The image is one uncompressed linux/amd64 layer;
// every entry is owned by root with a fixed mtime, so the same inputs give the
// same digest. out is written atomically (temp file and rename) and its
// directory is created if needed.
//
// Build returns an error naming the missing file and where it looked when a
// binary or an Extra Source is missing (matching fs.ErrNotExist), naming the
// Debian package for Extra files that have one.
func Build(b Builtin, binDir string, out string) error {
	if err := b.Validate(); err != nil {
		return err
	}
	tag, err := b.Tag()
	if err != nil {
		return err
	}
	img, err := buildImage(b, binDir)
	if err != nil {
		return fmt.Errorf("build image %q: %w", b.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("build image %q: %w", b.Name, err)
	}
	err = atomicfile.WriteFunc(out, 0o644, func(w io.Writer) error { return tarball.Write(tag, img, w) })
	if err != nil {
		return fmt.Errorf("build image %q: write %s: %w", b.Name, out, err)
	}
	return nil
}

// buildImage returns the image b, its one layer held in memory.
func buildImage(b Builtin, binDir string) (v1.Image, error) {
	entries, err := layerEntries(b, binDir)
	if err != nil {
		return nil, err
	}
	// The layer stays uncompressed, as `docker save` writes them: the
	// tarball is larger, but importing it hashes it once (the layer digest
	// is its diff ID) and unpacking it decompresses nothing, which is what
	// a cluster start pays for on every node.
	var layer bytes.Buffer
	if err := writeLayer(&layer, entries); err != nil {
		return nil, fmt.Errorf("write layer: %w", err)
	}
	return image(b, static.NewLayer(layer.Bytes(), types.DockerUncompressedLayer))
}

// image returns the single-layer image with b's config.
func image(b Builtin, layer v1.Layer) (v1.Image, error) {
	cfg := &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		Config: v1.Config{
			Entrypoint: slices.Clone(b.Entrypoint),
			Cmd:        slices.Clone(b.Cmd),
			Env:        env(b),
			WorkingDir: "/",
			Labels:     map[string]string{LabelFormat: Format, LabelDefinition: definition(b)},
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "kubernix: built-in image " + b.Name,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return img, nil
}

// env is b's environment: b.Env, or PATH=imagePath.
func env(b Builtin) []string {
	if len(b.Env) > 0 {
		return slices.Clone(b.Env)
	}
	return []string{"PATH=" + imagePath}
}

// entry is one tar entry of the layer; src, if set, is the host file with the
// content of a regular file.
type entry struct {
	hdr  tar.Header
	src  string
	data []byte
}

// layerEntries returns the layer's entries sorted by path, with the parent
// directories that b does not list itself. It checks that every source file
// exists and is a regular file.
func layerEntries(b Builtin, binDir string) ([]entry, error) {
	byName := map[string]*entry{}

	files := b.Extra
	if b.Binary != "" {
		files = append([]File{{Path: b.Path, Binary: b.Binary}}, b.Extra...)
	}
	for _, f := range files {
		e, err := fileEntry(f, binDir)
		if err != nil {
			return nil, err
		}
		byName[layerName(f.Path)] = e
	}
	if err := addLibraries(byName, files); err != nil {
		return nil, err
	}

	for n := range byName {
		for dir := path.Dir(n); dir != "."; dir = path.Dir(dir) {
			parent, ok := byName[dir]
			if !ok {
				byName[dir] = &entry{hdr: header(dir, tar.TypeDir, 0o755, 0, "")}
			} else if parent.hdr.Typeflag != tar.TypeDir {
				return nil, fmt.Errorf("/%s: parent /%s is not a directory", n, dir)
			}
		}
	}

	entries := make([]entry, 0, len(byName))
	for _, e := range byName {
		entries = append(entries, *e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
	return entries, nil
}

// addLibraries adds the shared libraries of the files with Libraries to
// byName, each at its host path unless byName has that path already.
func addLibraries(byName map[string]*entry, files []File) error {
	for _, f := range files {
		if !f.Libraries {
			continue
		}
		libs, err := SharedLibraries(f.Source)
		if err != nil {
			return fmt.Errorf("%s (for %s in the image): shared libraries: %w", f.Source, f.Path, err)
		}
		for _, lib := range libs {
			n := layerName(lib)
			if _, ok := byName[n]; ok {
				continue
			}
			e, err := fileEntry(File{Path: lib, Source: lib}, "")
			if err != nil {
				return err
			}
			byName[n] = e
		}
	}
	return nil
}

// fileEntry turns a file into a layer entry.
func fileEntry(f File, binDir string) (*entry, error) {
	n := layerName(f.Path)
	mode := f.Mode
	if mode == 0 {
		mode = 0o755
	}
	switch {
	case f.Dir:
		return &entry{hdr: header(n, tar.TypeDir, mode, 0, "")}, nil
	case f.Link != "":
		return &entry{hdr: header(n, tar.TypeSymlink, 0o777, 0, f.Link)}, nil
	case f.Binary != "":
		binPath := filepath.Join(binDir, f.Binary)
		size, err := regularSize(binPath)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("binary %q not found in bin dir %s (looked for %s): %w", f.Binary, binDir, binPath, err)
		}
		if err != nil {
			return nil, fmt.Errorf("binary %q in bin dir %s: %w", f.Binary, binDir, err)
		}
		return &entry{hdr: header(n, tar.TypeReg, mode, size, ""), src: binPath}, nil
	case f.Source != "":
		size, err := regularSize(f.Source)
		if err != nil {
			msg := fmt.Sprintf("%s (for %s in the image) not usable", f.Source, f.Path)
			if errors.Is(err, fs.ErrNotExist) {
				msg = fmt.Sprintf("%s (for %s in the image) not found", f.Source, f.Path)
			}
			if f.Package != "" {
				msg += fmt.Sprintf("; install the Debian package %s (apt-get install -y %s)", f.Package, f.Package)
			}
			return nil, fmt.Errorf("%s: %w", msg, err)
		}
		return &entry{hdr: header(n, tar.TypeReg, mode, size, ""), src: f.Source}, nil
	default:
		return &entry{hdr: header(n, tar.TypeReg, mode, int64(len(f.Content)), ""), data: f.Content}, nil
	}
}

// regularSize returns the size in bytes of the regular file at p, following
// symlinks.
func regularSize(p string) (int64, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file (mode %v)", p, fi.Mode())
	}
	return fi.Size(), nil
}

// layerName is the tar entry name of an absolute image path.
func layerName(p string) string {
	return strings.TrimPrefix(path.Clean(p), "/")
}

// header returns a root-owned tar header with the fixed mtime.
func header(name string, typ byte, mode fs.FileMode, size int64, link string) tar.Header {
	tarMode := int64(mode.Perm())
	if mode&fs.ModeSticky != 0 {
		tarMode |= 0o1000
	}
	if mode&fs.ModeSetgid != 0 {
		tarMode |= 0o2000
	}
	if mode&fs.ModeSetuid != 0 {
		tarMode |= 0o4000
	}
	if typ == tar.TypeDir {
		name += "/"
	}
	return tar.Header{
		Typeflag: typ,
		Name:     name,
		Linkname: link,
		Mode:     tarMode,
		Size:     size,
		ModTime:  epoch,
	}
}

// writeLayer writes entries as an uncompressed tar to w.
func writeLayer(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	for i := range entries {
		if err := writeEntry(tw, &entries[i]); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, e *entry) error {
	if err := tw.WriteHeader(&e.hdr); err != nil {
		return fmt.Errorf("%s: %w", e.hdr.Name, err)
	}
	switch {
	case e.src != "":
		f, err := os.Open(e.src)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyN(tw, f, e.hdr.Size)
		if err != nil {
			return fmt.Errorf("copy %s (%d of %d bytes): %w", e.src, n, e.hdr.Size, err)
		}
		// The file must not have grown while it was copied.
		if extra, _ := io.Copy(io.Discard, io.LimitReader(f, 1)); extra != 0 {
			return fmt.Errorf("copy %s: %w", e.src, errors.New("file changed size while being copied"))
		}
	case e.data != nil:
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("%s: %w", e.hdr.Name, err)
		}
	}
	return nil
}
