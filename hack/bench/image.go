package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imageSeed seeds the random layer content, so every bench imports the
// same image (same digest) and runs compare.
const imageSeed = 7

// imageRef is the tag of the generated image.
const imageRef = "bench.kubernix.local/random:seed7"

// WriteRandomImage writes to path a docker-archive tarball (as `docker
// save` makes, the format `kubernix image load` reads) of a single-layer
// linux image tagged imageRef, whose layer holds one file of size
// pseudo-random bytes from imageSeed. Random bytes do not compress, so the
// gzipped layer, and so the tarball, is about size bytes. The same size
// gives the same bytes, every time. It returns the tarball's size.
func WriteRandomImage(path string, size int64) (int64, error) {
	tag, err := name.NewTag(imageRef)
	if err != nil {
		return 0, err
	}
	layer, err := random.Layer(size, types.DockerLayer, random.WithSource(rand.NewSource(imageSeed)))
	if err != nil {
		return 0, fmt.Errorf("random layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return 0, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return 0, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Cmd = []string{"/no-such-binary"} // data only: never run
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
