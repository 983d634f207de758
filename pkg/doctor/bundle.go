package doctor

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/bins"
)

// checkBundle reports where finder's bundle is and how it was found
// (bins.Bundle.How), or where it was looked for; and the built-in images
// directory, which up needs (a failure when there is none).
func checkBundle(finder *bins.Finder) Report {
	bundle := Result{Group: "binaries", Name: "bundle", Status: StatusOK,
		Detail: fmt.Sprintf("%s  (%s)", finder.Bundle.Dir, finder.Bundle.How)}
	if finder.Bundle.Dir != "" && !fileinfo.Exists(finder.Bundle.Bin) {
		bundle.Status, bundle.Detail = StatusFail, fmt.Sprintf("%s: no bin directory (%s)", finder.Bundle.Dir, finder.Bundle.How)
		bundle.Fix = "a bundle holds bin/ and images/, as `make install` lays out PREFIX/lib/kubernix"
	}
	if finder.Bundle.Dir == "" {
		var tried []string
		if finder.Exe != "" {
			for _, b := range bins.BundleCandidates(finder.Exe) {
				tried = append(tried, b.Bin)
			}
		}
		bundle.Status = StatusInfo
		bundle.Detail = "none (no kube-apiserver in " + strings.Join(tried, ", ") + "): binaries from --bin-dir and $PATH"
		bundle.Fix = "`make install` puts kubernix and its bundle into PREFIX/bin and PREFIX/lib/kubernix; or pass --bundle-dir"
	}
	images := Result{Group: "binaries", Name: "built-in images", Status: StatusOK}
	dir, err := finder.ImagesDir()
	if err != nil {
		images.Status, images.Detail = StatusFail, err.Error()
	} else {
		names, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
		for i, n := range names {
			names[i] = filepath.Base(n)
		}
		images.Detail = fmt.Sprintf("%s  (%s)", dir, strings.Join(names, ", "))
	}
	return Report{bundle, images}
}
