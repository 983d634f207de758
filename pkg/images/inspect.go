package images

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Info describes an image tarball written by Build.
type Info struct {
	// Tags are the references the tarball's image is tagged with.
	Tags []string
	// ID is the digest of the image config ("sha256:…"). It is the image ID
	// that containerd and crictl show, and it survives import unchanged,
	// unlike the manifest digest, which containerd computes anew when it
	// imports a docker-archive.
	ID string
	// Size is the size of the tarball in bytes.
	Size int64
}

// Inspect reads the manifest of the single-image docker-archive tarball at
// p without reading its layers. It returns an error if p cannot be read or
// does not hold exactly one image.
func Inspect(p string) (Info, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return Info{}, fmt.Errorf("inspect image tarball: %w", err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(p) })
	if err != nil {
		return Info{}, fmt.Errorf("inspect image tarball %s: %w", p, err)
	}
	if len(m) != 1 {
		return Info{}, fmt.Errorf("inspect image tarball %s: %d images, want 1", p, len(m))
	}
	return Info{Tags: m[0].RepoTags, ID: m[0].Config, Size: fi.Size()}, nil
}

// UpToDate reports whether out holds b (tagged b.Ref, in the current
// Format, from the same definition of b) and is not older than
// any input of b (see Builtin.Inputs), so that Build can be skipped. Equal
// times count as up to date, as in make: file times come from the kernel's
// coarse clock, so an output written right after its inputs often carries
// the same time. A missing
// out or input gives false and no error, leaving Build to report it; other
// errors are returned.
func UpToDate(b Builtin, binDir, out string) (bool, error) {
	outInfo, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, in := range b.Inputs(binDir) {
		fi, err := os.Stat(in)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if outInfo.ModTime().Before(fi.ModTime()) {
			return false, nil
		}
	}
	info, err := Inspect(out)
	if err != nil {
		return false, nil // unreadable or foreign: rebuild it
	}
	if !slices.Equal(info.Tags, []string{b.Ref}) {
		return false, nil
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		return false, nil
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return false, nil
	}
	// Else built by an older Build, or from another definition of b.
	return cfg.Config.Labels[LabelFormat] == Format && cfg.Config.Labels[LabelDefinition] == definition(b), nil
}

// definition is the digest of b, the definition an image is built from
// ("sha256:" and the hex SHA-256 of b printed as a Go value: fields in
// order, no maps), so that a changed definition rebuilds the image even
// when no input file changed.
func definition(b Builtin) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(fmt.Appendf(nil, "%#v", b)))
}
