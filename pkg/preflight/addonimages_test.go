package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// TestCheckAddonImages checks that a missing tarball of an enabled
// addon's image is named, and that one of a disabled addon is not needed.
func TestCheckAddonImages(t *testing.T) {
	pl := plantest.Plan(t, 1)
	pl.ImagesDir = t.TempDir()
	pl.Cfg.Addons = []string{"coredns"}
	err := checkAddonImages(pl)
	if err == nil || !strings.Contains(err.Error(), "coredns.tar (addon coredns)") {
		t.Fatalf("checkAddonImages without coredns.tar = %v, want it named", err)
	}
	if err := os.WriteFile(filepath.Join(pl.ImagesDir, "coredns.tar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkAddonImages(pl); err != nil {
		t.Errorf("checkAddonImages with coredns.tar = %v, want nil (metrics-server is not enabled)", err)
	}
}
