package doctor

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/release"
)

// checkBundle reports where finder's bundle is and how it was found
// (bins.Bundle.How), or where it was looked for; the built-in images
// directory, which up needs (a failure when there is none); and the
// Kubernetes releases it holds (describeReleases).
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
	releases := Result{Group: "binaries", Name: "Kubernetes releases", Status: StatusInfo, Detail: describeReleases(finder.Releases())}
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
	return Report{bundle, images, releases}
}

// describeReleases words the releases found (bins.Finder.Releases, the
// default first): each version, the default marked, the others' bin
// dirs, and the make command of each release kubernix builds that is
// missing.
func describeReleases(found []release.Release) string {
	var have, missing []string
	for i, r := range found {
		if i == 0 {
			have = append(have, r.Kubernetes+" (default)")
			continue
		}
		have = append(have, fmt.Sprintf("%s (%s)", r.Kubernetes, r.Bin))
	}
	for _, v := range release.Known() {
		if !slices.ContainsFunc(found, func(r release.Release) bool { return r.Kubernetes == v }) {
			missing = append(missing, v)
		}
	}
	out := strings.Join(have, ", ")
	if len(missing) > 0 {
		out += fmt.Sprintf("; not built: %s (`make bins KUBERNETES_VERSION=<version>` builds one)", strings.Join(missing, ", "))
	}
	return out
}
