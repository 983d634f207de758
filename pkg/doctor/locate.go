package doctor

import (
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/release"
)

// Locate returns the facts of a plan that starts nothing (down, status,
// logs): the path of each binary a cluster of rel requires the finder finds, else
// /nonexistent/<name>, which names it without being run; the first CNI
// dir (cniDir if set); the default snapshotter. It runs no check and
// executes nothing.
func Locate(finder *bins.Finder, rel release.Release, cniDir string) Facts {
	facts := Facts{Mode: DetectMode(), Paths: map[string]string{}, Snapshotter: SnapshotterOverlayfs, CNIDir: cniDir, Release: rel}
	for _, b := range bins.Required(rel) {
		p, err := finder.Find(b.Name)
		if err != nil {
			p = filepath.Join("/nonexistent", b.Name)
		}
		facts.Paths[b.Name] = p
	}
	if facts.CNIDir == "" {
		facts.CNIDir = bins.CNIDirs[0]
	}
	return facts
}
