// Command mkimage builds kubernix's built-in container images (see
// pkg/images) from the static binaries in a bin dir:
//
//	go run ./hack/mkimage -bin-dir _output/bin -out _output/images [names...]
//
// or, with -set conformance, the other images that the upstream
// [Conformance] specs of the pinned Kubernetes run (conformance.go), for
// `make conformance` to load into a cluster; they are neither installed nor
// imported by up:
//
//	go run ./hack/mkimage -set conformance -out _output/conformance/images [names...]
//
// With -refs FILE (one reference a line, as `e2e.test --list-images`
// prints those of another Kubernetes release's specs), it also makes, for
// each reference whose repository is one of an image of the set or of the
// built-in images under another tag, that image under that reference
// (retag): a release's specs run the images of the default release's
// content under their own tags.
//
// It builds the programs those images need that the bin dir lacks with the
// go command, in the bundle and test/conformance modules (run it from the
// repository root), and unpacks the Debian packages they take files from
// without the host installing them (apt-get download, dpkg-deb -x), into
// -work-dir.
//
// With no names it builds every image of the set. An image whose tarball
// is newer than its inputs (binary and extra files) and carries the right
// tag is left alone, so a warm run does nothing. It prints one line per
// image: what it did, the ref, the image ID (config digest), the tarball's
// size and path.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kubernix/kubernix/internal/toolmain"
	"github.com/kubernix/kubernix/pkg/images"
)

func main() { toolmain.Main("mkimage", run) }

// options are mkimage's flags.
type options struct {
	set     string
	binDir  string
	workDir string
	outDir  string
	busybox string
	k8sDir  string
	refs    string
	module  string
	force   bool
}

// The image sets of -set.
const (
	setBuiltin     = "builtin"
	setConformance = "conformance"
	setGateway     = "gateway"
)

// run is mkimage: it parses args, then builds the images they name.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var o options
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.set, "set", setBuiltin, "image set: "+setBuiltin+" (pkg/images Builtins), "+setConformance+" (the upstream conformance specs' other images) or "+setGateway+" (the Gateway API conformance suite's)")
	fs.StringVar(&o.binDir, "bin-dir", "_output/bin", "directory holding the static binaries")
	fs.StringVar(&o.workDir, "work-dir", "_output/conformance/image-work", "directory for the programs and Debian packages the conformance images are made from (-set "+setConformance+")")
	fs.StringVar(&o.outDir, "out", "_output/images", "directory to write the image tarballs to")
	fs.StringVar(&o.busybox, "busybox", images.BusyboxSource, "static busybox binary for the agnhost image (Debian package "+images.BusyboxPackage+")")
	fs.StringVar(&o.k8sDir, "kubernetes-dir", "", "source tree of the pinned Kubernetes module (default: what go list -m k8s.io/kubernetes gives in ./bundle)")
	fs.StringVar(&o.refs, "refs", "", "file of image references, one a line (e2e.test --list-images): also make each image of the set or the built-in ones whose repository one names under that reference")
	fs.StringVar(&o.module, "module", "", "Go module the conformance set's Kubernetes programs (etcd, nonewprivs, sample-apiserver) are built in, e.g. a release's bundle/releases/v1.35 (default: bundle, and test/conformance for sample-apiserver)")
	fs.BoolVar(&o.force, "force", false, "rebuild images that are up to date")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	all, err := imageSet(o)
	if err != nil {
		return err
	}
	selected, err := selectImages(all, fs.Args())
	if err != nil {
		return err
	}
	if o.refs != "" {
		refs, err := os.ReadFile(o.refs)
		if err != nil {
			return fmt.Errorf("-refs: %w", err)
		}
		retagged, err := retag(append(slices.Clone(selected), images.Builtins()...), strings.Fields(string(refs)))
		if err != nil {
			return fmt.Errorf("-refs %s: %w", o.refs, err)
		}
		selected = append(selected, retagged...)
	}
	if o.k8sDir == "" {
		if o.k8sDir, err = kubernetesDir(ctx, true); err != nil {
			return err
		}
	}
	if err := prepare(ctx, selected, o.binDir, o.workDir, o.module); err != nil {
		return err
	}
	for _, b := range selected {
		if err := ctx.Err(); err != nil {
			return err
		}
		b = b.WithSource(images.BusyboxSource, o.busybox).WithKubernetesDir(o.k8sDir)
		if err := makeImage(b, o, stdout); err != nil {
			return err
		}
	}
	return nil
}

// usage prints mkimage's usage: the image sets and fs's flags.
func usage(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), "usage: mkimage [flags] [name...]\n  -set %s: %s\n  -set %s: %s\n  -set %s: %s\n",
		setBuiltin, strings.Join(names(images.Builtins()), " "),
		setConformance, strings.Join(names(conformanceBuiltins(conformanceImages(""))), " "),
		setGateway, strings.Join(names(gatewayImages("")), " "))
	fs.PrintDefaults()
}

// kubernetesDir returns the directory of the pinned Kubernetes module's
// source tree in Go's module cache, as the bundle module (./bundle)
// resolves it. With fetch, the go command downloads the module into the
// cache first if it is not there (`go mod download`); without, a module
// whose source is not in the cache is an error, which tests take as a
// reason to skip.
func kubernetesDir(ctx context.Context, fetch bool) (string, error) {
	args := []string{"list", "-m", "-json", images.KubernetesModule}
	if fetch {
		args = []string{"mod", "download", "-json", images.KubernetesModule}
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = "bundle"
	out, err := output(cmd)
	if err != nil {
		return "", fmt.Errorf("find the Kubernetes module: %w; or pass -kubernetes-dir", err)
	}
	return moduleDir(out)
}

// moduleDir is the source directory in the JSON that `go list -m -json`
// or `go mod download -json` printed for one module. The go command
// leaves Dir out when the module's source is not in the module cache
// (only its go.mod is): that is an error naming the module and the cache.
func moduleDir(goJSON []byte) (string, error) {
	var m struct{ Path, Version, Dir string }
	if err := json.Unmarshal(goJSON, &m); err != nil {
		return "", fmt.Errorf("read the go command's module JSON: %w", err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("the source of %s %s is not in the module cache (GOMODCACHE): run `go mod download %s` in bundle/, or pass -kubernetes-dir", m.Path, m.Version, m.Path)
	}
	return m.Dir, nil
}

// makeImage builds one image unless it is up to date, and prints its line.
func makeImage(b images.Builtin, o options, stdout io.Writer) error {
	out := filepath.Join(o.outDir, b.FileName())
	verb := "up-to-date"
	fresh, err := images.UpToDate(b, o.binDir, out)
	if err != nil {
		return fmt.Errorf("image %s: %w", b.Name, err)
	}
	if o.force || !fresh {
		if err := images.Build(b, o.binDir, out); err != nil {
			return err
		}
		verb = "built"
	}
	info, err := images.Inspect(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-10s %-50s %s %7.1f MiB %s\n", verb, b.Ref, info.ID, float64(info.Size)/(1<<20), out)
	return nil
}

// imageSet returns the images of the set o.set names. It fails for an
// unknown set, naming the flag.
func imageSet(o options) ([]images.Builtin, error) {
	switch o.set {
	case setBuiltin:
		return images.Builtins(), nil
	case setConformance:
		return conformanceBuiltins(conformanceImages(o.workDir)), nil
	case setGateway:
		return gatewayImages(o.workDir), nil
	}
	return nil, fmt.Errorf("-set %q: unknown image set; known: %s, %s, %s", o.set, setBuiltin, setConformance, setGateway)
}

// selectImages returns the images of all with the given names, in the
// order given, or all of them for no names.
func selectImages(all []images.Builtin, args []string) ([]images.Builtin, error) {
	if len(args) == 0 {
		return all, nil
	}
	var selected []images.Builtin
	var unknown []string
	for _, n := range args {
		i := slices.IndexFunc(all, func(b images.Builtin) bool { return b.Name == n })
		if i < 0 {
			unknown = append(unknown, n)
			continue
		}
		selected = append(selected, all[i])
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown image %s; known: %s", strings.Join(unknown, ", "), strings.Join(names(all), ", "))
	}
	return selected, nil
}

// retag returns, for each of refs whose repository (the reference less
// its tag) is that of an image of set under another tag, that image made
// under the reference, named <name>-<tag> (its tarball's name): the first
// image of the repository named as its last element (agnhost, not
// agnhost-prev, for .../agnhost), else the first of it; a repository
// upstream renamed (formerRepositories) counts as its new one; once per
// reference, in the order of refs. A reference that does not parse is an
// error; one an image of set has, or of another repository, is left out.
func retag(set []images.Builtin, refs []string) ([]images.Builtin, error) {
	var out []images.Builtin
	seen := map[string]bool{}
	for _, ref := range refs {
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return nil, err
		}
		if seen[tag.String()] || slices.ContainsFunc(set, func(b images.Builtin) bool { return b.Ref == tag.String() }) {
			continue
		}
		seen[tag.String()] = true
		repo := tag.Context().String()
		if now, ok := formerRepositories[repo]; ok {
			repo = now
		}
		var match *images.Builtin
		for i, b := range set {
			have, err := b.Tag()
			if err != nil {
				return nil, err
			}
			if have.Context().String() != repo {
				continue
			}
			if match == nil || b.Name == path.Base(tag.RepositoryStr()) && match.Name != b.Name {
				match = &set[i]
			}
		}
		if match != nil {
			b := *match
			b.Ref, b.Name = tag.String(), b.Name+"-"+tag.TagStr()
			out = append(out, b)
		}
	}
	return out, nil
}

// formerRepositories maps a repository that an older release's specs
// name to the one upstream renamed it to, whose image of the set retag
// makes under the old references. Upstream's
// test/utils/image/manifest.go of v1.36: "GlibcDnsTesting image
// (formerly JessieDnsutils)"; v1.35's DNS specs run jessie-dnsutils:1.7
// with the commands glibc-dns-testing has (a shell, dig, getent).
var formerRepositories = map[string]string{
	"registry.k8s.io/e2e-test-images/jessie-dnsutils": "registry.k8s.io/e2e-test-images/glibc-dns-testing",
}

func names(bs []images.Builtin) []string {
	var ns []string
	for _, b := range bs {
		ns = append(ns, b.Name)
	}
	return ns
}
