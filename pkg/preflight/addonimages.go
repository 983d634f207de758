package preflight

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/images"
	"github.com/kubernix/kubernix/pkg/plan"
)

// checkAddonImages returns an error naming each built-in image an enabled
// addon runs (addons.Addon.Images) whose tarball is missing from the
// plan's images dir, and how to get it: without it the addon would never
// become Available and up would wait for nothing.
func checkAddonImages(p *plan.Plan) error {
	var missing []string
	for _, name := range p.Cfg.Addons {
		a, _ := addons.Lookup(name)
		for _, img := range a.Images {
			b, ok := images.Lookup(img)
			if !ok || !fileinfo.Exists(filepath.Join(p.ImagesDir, b.FileName())) {
				missing = append(missing, fmt.Sprintf("%s (addon %s)", b.FileName(), a.Name))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("built-in images missing from %s: %s; run `make images`, or leave the addon out of --addons",
			p.ImagesDir, strings.Join(missing, ", "))
	}
	return nil
}
