// Package bins finds the upstream binaries kubernix runs and the built-in
// images, and reports the binaries' versions. The search order is: the
// bin dir of the Kubernetes release asked for, when it is not the default
// (<bundle>/releases/<version>/bin, see Finder.UseRelease); the
// --bin-dir; the bundle (--bundle-dir, else the one beside the kubernix
// executable: <exe dir>/../lib/kubernix as installed, or the source
// tree's _output); $PATH; then /usr/sbin and /sbin.
package bins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/release"
)

// ErrNotFound is returned (wrapped) by Finder.Find for a binary found nowhere.
var ErrNotFound = errors.New("binary not found")

// Binary describes one binary kubernix needs.
type Binary struct {
	// Name of the executable file.
	Name string
	// VersionArgs make the binary print its version (e.g. "--version");
	// none: the binary is not run, only found.
	VersionArgs []string
	// Want is a substring the version output must contain, e.g. "v1.37.2"; empty accepts any.
	Want string
	// Optional binaries only enable extras (crun, crictl); their absence is not an error.
	Optional bool
	// Hint says how to get the binary when it is missing.
	Hint string
}

// How a bundle was located (Bundle.How).
const (
	// HowGiven: the bundle_dir setting (--bundle-dir or $KUBERNIX_BUNDLE_DIR).
	HowGiven = "--bundle-dir / $KUBERNIX_BUNDLE_DIR"
	// HowInstalled: <exe dir>/../lib/kubernix, as `make install` lays it out.
	HowInstalled = "installed layout"
	// HowSourceTree: the source tree's _output, where `make` builds it.
	HowSourceTree = "source tree"
)

// Bundle is the set of component binaries and built-in images one
// kubernix runs with: `make install` puts it in PREFIX/lib/kubernix/{bin,images},
// `make` in the source tree's _output/{bin,images}.
type Bundle struct {
	// Dir is the bundle's root; "" when no bundle was found.
	Dir string
	// Bin holds the component binaries (kube-apiserver, kubectl, containerd, ...).
	Bin string
	// Images holds the built-in image tarballs (pause.tar, coredns.tar, ...).
	Images string
	// How it was found: HowGiven, HowInstalled or HowSourceTree.
	How string
}

// bundleMarker is the binary whose presence in a candidate's bin dir makes
// it the bundle.
const bundleMarker = "kube-apiserver"

// DefaultSystemDirs are searched after $PATH: system tools (iptables,
// nft, ip, nsenter, unshare) are often only there, and an ordinary
// user's PATH on Debian lacks them.
var DefaultSystemDirs = []string{"/usr/sbin", "/sbin"}

// GivenBundle is the bundle of the bundle_dir setting dir: dir/bin and dir/images.
func GivenBundle(dir string) Bundle {
	return Bundle{Dir: dir, Bin: filepath.Join(dir, "bin"), Images: filepath.Join(dir, "images"), How: HowGiven}
}

// BundleCandidates are the bundles an executable at exe (an absolute,
// symlink-resolved path) may have, in the order they are tried: the
// installed layout <exe dir>/../lib/kubernix, then the source tree's
// layouts: kubernix in _output/bin (bin <exe dir>, images <exe dir>/../images)
// and kubernix at the top of the tree (<exe dir>/_output).
func BundleCandidates(exe string) []Bundle {
	dir := filepath.Dir(exe)
	parent := filepath.Dir(dir)
	lib := filepath.Join(parent, "lib", "kubernix")
	out := filepath.Join(dir, "_output")
	return []Bundle{
		{Dir: lib, Bin: filepath.Join(lib, "bin"), Images: filepath.Join(lib, "images"), How: HowInstalled},
		{Dir: parent, Bin: dir, Images: filepath.Join(parent, "images"), How: HowSourceTree},
		{Dir: out, Bin: filepath.Join(out, "bin"), Images: filepath.Join(out, "images"), How: HowSourceTree},
	}
}

// LocateBundle returns GivenBundle(given) when given is not empty, else
// the first of BundleCandidates(exe) whose bin dir holds kube-apiserver,
// else the zero Bundle (exe "" finds none).
func LocateBundle(given, exe string) Bundle {
	if given != "" {
		return GivenBundle(given)
	}
	if exe == "" {
		return Bundle{}
	}
	for _, b := range BundleCandidates(exe) {
		if isExecutable(filepath.Join(b.Bin, bundleMarker)) {
			return b
		}
	}
	return Bundle{}
}

// Releases lists the Kubernetes releases b holds, newest first: the
// default release (release.Default, its binaries in b.Bin), then each
// other release kubernix builds (release.Known) whose bin dir
// b.Dir/releases/<version>/bin has kube-apiserver, as `make bins
// KUBERNETES_VERSION=<version>` and `make install` lay them out. The
// default is listed even without a bundle: its binaries are then found
// in --bin-dir and $PATH.
func (b Bundle) Releases() []release.Release { return (&Finder{Bundle: b}).Releases() }

// Finder looks binaries up in a fixed order of directories: ReleaseBin,
// BinDir, the Bundle's bin dir, Path, then SystemDirs.
type Finder struct {
	// ReleaseBin holds the Kubernetes binaries of the release a cluster
	// runs when it is not the default (release.Release.Bin, set by
	// UseRelease), searched first; "" for none.
	ReleaseBin string
	// BinDir (the --bin-dir) is searched next; "" for none.
	BinDir string
	// Bundle's Bin is searched next, so its kubectl wins over an older one
	// on PATH; its Images are the built-in images. Zero when none was found.
	Bundle Bundle
	// Exe is the kubernix executable whose bundle NewFinder looked for
	// (symlinks resolved); "" when unknown.
	Exe string
	// Path is the PATH list searched after the bundle (os.Getenv("PATH") by default).
	Path string
	// SystemDirs are searched last (DefaultSystemDirs by default).
	SystemDirs []string
}

// NewFinder returns the Finder for a --bin-dir and a --bundle-dir (either
// may be empty): binDir, then the bundle (bundleDir, else the one
// LocateBundle finds from the running executable's own path), then PATH,
// then DefaultSystemDirs.
func NewFinder(binDir, bundleDir string) *Finder {
	f := &Finder{BinDir: binDir, Path: os.Getenv("PATH"), SystemDirs: DefaultSystemDirs}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			f.Exe = exe
		}
	}
	f.Bundle = LocateBundle(bundleDir, f.Exe)
	return f
}

// Releases lists the Kubernetes releases f can run, newest first: the
// default release (its binaries in f's bundle's bin dir), then each other
// release kubernix builds (release.Known) whose bin dir
// <dir>/releases/<version>/bin has kube-apiserver, dir being the parent of
// the --bin-dir (as `make` lays out _output/bin and _output/releases),
// else f's bundle.
func (f *Finder) Releases() []release.Release {
	def := release.Default()
	def.Bin = f.Bundle.Bin
	out := []release.Release{def}
	var dirs []string
	if f.BinDir != "" {
		dirs = append(dirs, filepath.Dir(f.BinDir))
	}
	if f.Bundle.Dir != "" {
		dirs = append(dirs, f.Bundle.Dir)
	}
	for _, v := range release.Known()[1:] {
		for _, dir := range dirs {
			if bin := filepath.Join(dir, "releases", v, "bin"); isExecutable(filepath.Join(bin, bundleMarker)) {
				out = append(out, release.Of(v, bin))
				break
			}
		}
	}
	return out
}

// UseRelease looks the Kubernetes version (as release.Lookup reads it;
// "" for the default) up among f's Releases and, for another release
// than the default, makes Find search its bin dir first: a release asked
// for by name wins over --bin-dir. The error is Lookup's, and leaves f as
// it was.
func (f *Finder) UseRelease(version string) (release.Release, error) {
	rel, err := release.Lookup(f.Releases(), version)
	if err != nil {
		return rel, err
	}
	f.ReleaseBin = ""
	if rel.Kubernetes != release.Default().Kubernetes {
		f.ReleaseBin = rel.Bin
	}
	return rel, nil
}

// ReleaseFinder is NewFinder(binDir, bundleDir) after UseRelease(version):
// the Finder, the release and UseRelease's error. On an error the release
// is still the one version names (release.Named: its binaries are found
// as any other), for the verbs that start nothing (down, status,
// logs) to go on with; up refuses the error.
func ReleaseFinder(binDir, bundleDir, version string) (*Finder, release.Release, error) {
	f := NewFinder(binDir, bundleDir)
	rel, err := f.UseRelease(version)
	if err == nil {
		return f, rel, nil
	}
	rel, _ = release.Named(version)
	return f, rel, err
}

// dirs lists ReleaseBin, BinDir and the bundle's bin dir, those that are set.
func (f *Finder) dirs() []string {
	var out []string
	for _, d := range []string{f.ReleaseBin, f.BinDir, f.Bundle.Bin} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Searched lists every directory Find looks in, in order, each once.
func (f *Finder) Searched() []string {
	var out []string
	seen := map[string]bool{"": true}
	for _, list := range [][]string{f.dirs(), filepath.SplitList(f.Path), f.SystemDirs} {
		for _, d := range list {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// Where describes the search order briefly: the directories, "$PATH",
// then the system dirs.
func (f *Finder) Where() string {
	return strings.Join(append(append(f.dirs(), "$PATH"), f.SystemDirs...), ", ")
}

// Find returns the absolute path of the executable name. The error wraps
// ErrNotFound and lists where it looked.
func (f *Finder) Find(name string) (string, error) {
	for _, dir := range f.Searched() {
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return p, nil
			}
			return abs, nil
		}
	}
	return "", fmt.Errorf("%w: %s (looked in %s)", ErrNotFound, name, f.Where())
}

// isExecutable reports whether p is a regular file (after symlinks) with
// an execute bit.
func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// SystemPath returns the PATH list path with each of DefaultSystemDirs it
// lacks appended, for the processes kubernix starts: containerd, the CNI
// plugins and the kubelet run iptables, ip and mount by name.
func SystemPath(path string) string {
	have := filepath.SplitList(path)
	for _, d := range DefaultSystemDirs {
		if !slices.Contains(have, d) {
			have = append(have, d)
		}
	}
	return strings.Join(slices.DeleteFunc(have, func(d string) bool { return d == "" }), string(os.PathListSeparator))
}

// SystemEnviron returns environ (KEY=VALUE strings, as from os.Environ)
// with its PATH passed through SystemPath (PATH=/usr/sbin:/sbin added when
// it has none), for children that run system tools by name.
func SystemEnviron(environ []string) []string {
	out := make([]string, 0, len(environ)+1)
	found := false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv, found = "PATH="+SystemPath(v), true
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "PATH="+SystemPath(""))
	}
	return out
}

// VersionCache is where CachedVersion records versions: in /run, so a
// reboot clears it.
const VersionCache = "/run/kubernix/versions"

// CachedVersion is Version, remembered in dir per binary: a binary whose
// path, size, mtime and args match the record is not run again. Starting
// the big Kubernetes binaries to ask their version takes a noticeable part
// of a second each, on every `up`. Failures are not recorded; a record
// that cannot be written is skipped silently.
func CachedVersion(ctx context.Context, dir, path string, args ...string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s %d %d %q", path, st.Size(), st.ModTime().UnixNano(), args)
	file := filepath.Join(dir, strings.ReplaceAll(strings.Trim(path, "/"), "/", "_"))
	if b, err := os.ReadFile(file); err == nil {
		if k, v, ok := strings.Cut(string(b), "\n"); ok && k == key {
			return v, nil
		}
	}
	v, err := Version(ctx, path, args...)
	if err != nil {
		return "", err
	}
	if os.MkdirAll(dir, 0o755) == nil {
		_ = atomicfile.Write(file, []byte(key+"\n"+v), 0o644)
	}
	return v, nil
}

// Version runs path with args and returns its output (stdout, else
// stderr) on one line, whitespace collapsed, at most 120 bytes, with a 10 s
// limit.
func Version(ctx context.Context, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	text := out.String()
	if strings.TrimSpace(text) == "" {
		text = errOut.String()
	}
	line := strings.Join(strings.Fields(text), " ")
	if len(line) > 120 {
		line = line[:120]
	}
	return line, nil
}

// ImagesDir returns the first directory holding the built-in image
// tarballs (pause.tar): "images" beside the --bin-dir (so _output/images
// for _output/bin), then the bundle's images dir. The error lists where it
// looked and how to get them.
func (f *Finder) ImagesDir() (string, error) {
	var tried []string
	if f.BinDir != "" {
		tried = append(tried, filepath.Join(filepath.Dir(f.BinDir), "images"))
	}
	if f.Bundle.Images != "" {
		tried = append(tried, f.Bundle.Images)
	}
	for _, cand := range tried {
		if st, err := os.Stat(filepath.Join(cand, "pause.tar")); err == nil && st.Mode().IsRegular() {
			return cand, nil
		}
	}
	where := "no --bin-dir, no bundle beside kubernix (see `kubernix doctor`)"
	if len(tried) > 0 {
		where = "not found in " + strings.Join(tried, ", ")
	}
	return "", fmt.Errorf("built-in images (pause.tar, coredns.tar, ...): %s: run `make images` in the source tree, or pass --bundle-dir", where)
}
