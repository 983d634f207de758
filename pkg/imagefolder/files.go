package imagefolder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// Kind is what a file in the folder is, told by its name.
type Kind int

// The kinds of files.
const (
	// Ignored files are not images: other extensions, hidden files
	// (editors' and rsync's temporary files), directories.
	Ignored Kind = iota
	// Tarball is an image archive, imported.
	Tarball
	// List is a text file of image references, pulled.
	List
)

func (k Kind) String() string {
	switch k {
	case Tarball:
		return "tarball"
	case List:
		return "list"
	}
	return "ignored"
}

// TarballExtensions are the file name endings of image tarballs, as
// `kubernix image load` and the folder accept them. The compression is told
// by content, not by name.
var TarballExtensions = []string{".tar", ".tar.gz", ".tgz", ".tar.zst", ".tzst"}

// ListExtension is the file name ending of image lists.
const ListExtension = ".txt"

// KindOf tells what the file named name (a base name) is.
func KindOf(name string) Kind {
	if name == "" || strings.HasPrefix(name, ".") || strings.ContainsRune(name, filepath.Separator) {
		return Ignored
	}
	lower := strings.ToLower(name)
	if strings.HasSuffix(lower, ListExtension) && len(lower) > len(ListExtension) {
		return List
	}
	if isTarballName(name) {
		return Tarball
	}
	return Ignored
}

// isTarballName reports whether name ends in one of TarballExtensions
// (case-insensitively) and has something before it.
func isTarballName(name string) bool {
	lower := strings.ToLower(name)
	return slices.ContainsFunc(TarballExtensions, func(ext string) bool {
		return strings.HasSuffix(lower, ext) && len(lower) > len(ext)
	})
}

// FileState is what change detection compares: a file's size and mtime. A
// file whose FileState changed is imported again.
type FileState struct {
	// Size is in bytes.
	Size int64 `json:"size"`
	// ModTime is the last modification time.
	ModTime time.Time `json:"mtime"`
}

// Equal reports whether s and o describe the same version of a file.
func (s FileState) Equal(o FileState) bool { return s.Size == o.Size && s.ModTime.Equal(o.ModTime) }

func (s FileState) String() string {
	return fmt.Sprintf("%d bytes, modified %s", s.Size, s.ModTime.Format(time.RFC3339Nano))
}

// errNotFile is returned by stat for a name that is not a regular file.
var errNotFile = errors.New("not a regular file")

// stat returns the state of the regular file at path, following symlinks.
// It returns an error matching fs.ErrNotExist when there is none, and
// errNotFile for a directory or device.
func stat(path string) (FileState, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileState{}, err
	}
	if !fi.Mode().IsRegular() {
		return FileState{}, fmt.Errorf("%s: %w", path, errNotFile)
	}
	return FileState{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// scan lists the names of the image files (Tarball or List) in dir, sorted.
// A missing dir has none.
func scan(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if KindOf(e.Name()) == Ignored || e.IsDir() {
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil
}

// ParseList reads an image list: one reference per line, surrounding
// blanks trimmed; '#' starts a comment (whole line or after the reference);
// blank lines are ignored. References are normalized as the kubelet does
// ("busybox" is "docker.io/library/busybox:latest") and deduplicated, in
// order of first appearance. Every invalid line is reported at once, with
// its line number, joined; then no references are returned.
func ParseList(r io.Reader) ([]string, error) {
	var (
		refs []string
		errs []error
		seen = map[string]bool{}
	)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			errs = append(errs, fmt.Errorf("line %d: %q: one image reference per line", n, line))
			continue
		}
		named, err := reference.ParseDockerRef(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %q: %w", n, line, err))
			continue
		}
		if ref := named.String(); !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return refs, nil
}

// readList parses the image list at path; the error names the file. An
// empty list is valid: it provides no images.
func readList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	refs, err := ParseList(f)
	if err != nil {
		return nil, fmt.Errorf("image list %s: %w", path, err)
	}
	return refs, nil
}
