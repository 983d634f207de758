// Package bins finds the upstream binaries kubernix runs and reports their
// versions. The search order is: the --bin-dir, the directory of the kubernix
// executable and its _output/bin, then PATH.
package bins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubernix/kubernix/internal/atomicfile"
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

// Finder looks binaries up in a fixed order of directories.
type Finder struct {
	// Dirs are searched in order before PATH.
	Dirs []string
	// Path is the PATH list searched last (os.Getenv("PATH") by default).
	Path string
}

// NewFinder returns the Finder for a --bin-dir (may be empty): binDir, then
// the directory holding the running executable and its _output/bin, then PATH.
func NewFinder(binDir string) *Finder {
	f := &Finder{Path: os.Getenv("PATH")}
	if binDir != "" {
		f.Dirs = append(f.Dirs, binDir)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dir := filepath.Dir(exe)
			f.Dirs = append(f.Dirs, dir, filepath.Join(dir, "_output", "bin"))
		}
	}
	return f
}

// Searched lists every directory Find looks in, in order.
func (f *Finder) Searched() []string {
	return append(append([]string{}, f.Dirs...), filepath.SplitList(f.Path)...)
}

// Where describes the search order briefly: the directories, then "$PATH".
func (f *Finder) Where() string {
	return strings.Join(append(append([]string{}, f.Dirs...), "$PATH"), ", ")
}

// Find returns the absolute path of the executable name. The error wraps
// ErrNotFound and lists where it looked.
func (f *Finder) Find(name string) (string, error) {
	for _, dir := range f.Searched() {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			abs, err := filepath.Abs(p)
			if err != nil {
				return p, nil
			}
			return abs, nil
		}
	}
	return "", fmt.Errorf("%w: %s (looked in %s)", ErrNotFound, name, f.Where())
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
// tarballs (pause.tar): "images" beside each searched bin dir's parent
// (so _output/images for _output/bin), then <dir>/_output/images.
func (f *Finder) ImagesDir() (string, error) {
	var tried []string
	for _, dir := range f.Dirs {
		for _, cand := range []string{filepath.Join(filepath.Dir(dir), "images"), filepath.Join(dir, "_output", "images")} {
			tried = append(tried, cand)
			if st, err := os.Stat(filepath.Join(cand, "pause.tar")); err == nil && st.Mode().IsRegular() {
				return cand, nil
			}
		}
	}
	return "", fmt.Errorf("built-in images (pause.tar, coredns.tar, ...) not found in %s: run `make images`", strings.Join(tried, ", "))
}
