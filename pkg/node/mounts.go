package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/internal/made"
)

// Bind is a host path bind-mounted into a node's sandbox (a
// config.Mount): the node's containerd and kubelet, and so a pod's
// hostPath volume on the node, see Source's content at Target.
type Bind struct {
	// Source is the host file or directory, absolute.
	Source string `json:"source"`
	// Target is where the node sees it, absolute.
	Target string `json:"target"`
	// ReadOnly makes the mount, and every mount below it, read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// String is b as sandbox-init's --bind takes it: JSON.
func (b Bind) String() string {
	out, _ := json.Marshal(b)
	return string(out)
}

// ParseBind parses a --bind value (Bind.String).
func ParseBind(s string) (Bind, error) {
	var b Bind
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		return b, fmt.Errorf("--bind %s: %w", s, err)
	}
	if !filepath.IsAbs(b.Source) || !filepath.IsAbs(b.Target) {
		return b, fmt.Errorf("--bind %s: source and target must be absolute", s)
	}
	return b, nil
}

// under reports whether path is dir or lies below it.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// sandboxOwn reports whether path lies in what the sandbox covers with a
// tmpfs of its own (/run and the private dirs): a mount point there is
// made inside the sandbox and never touches the host.
func sandboxOwn(path string, private []string) bool {
	return slices.ContainsFunc(append([]string{"/run"}, private...), func(d string) bool { return under(path, d) })
}

// MakeMountPoints creates on the host the mount point of each bind that
// is missing (its missing parent directories, then a directory, or an
// empty file for a file source), except those in the sandbox's own
// tmpfs (SandboxInit makes them). Every path is recorded in record (a
// JSON list) before it is made, so RemoveMountPoints finds it even after
// a crash in between. What an earlier run recorded stays recorded.
func MakeMountPoints(binds []Bind, private []string, record string) error {
	points, err := made.Read(record)
	if err != nil {
		return err
	}
	for _, b := range binds {
		if sandboxOwn(b.Target, private) {
			continue
		}
		st, err := os.Stat(b.Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", b.Source, err)
		}
		missing, err := missingPaths(b.Target)
		if err != nil {
			return fmt.Errorf("mount point %s: %w", b.Target, err)
		}
		if len(missing) == 0 {
			continue
		}
		for _, p := range missing {
			if !slices.Contains(points, p) {
				points = append(points, p)
			}
		}
		if err := made.Write(record, points); err != nil {
			return err
		}
		if err := makeMountPoint(b.Target, st.IsDir()); err != nil {
			return fmt.Errorf("mount point %s: %w", b.Target, err)
		}
	}
	return nil
}

// missingPaths lists path and those of its parents that do not exist,
// outermost first.
func missingPaths(path string) ([]string, error) {
	var missing []string
	for p := filepath.Clean(path); p != filepath.Dir(p); p = filepath.Dir(p) {
		_, err := os.Lstat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		missing = append([]string{p}, missing...)
	}
	return missing, nil
}

// makeMountPoint creates path's parents and path: a directory, or an
// empty file when dir is false.
func makeMountPoint(path string, dir bool) error {
	if dir {
		return os.MkdirAll(path, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// RemoveMountPoints removes the paths record lists (MakeMountPoints),
// innermost first, each only while it is still what kubernix made: an
// empty directory or an empty file (one the user has since filled stays
// and is theirs: it is no longer recorded),
// and then record. The node's sandbox must be gone: its mounts went with
// it. A missing record is no error.
func RemoveMountPoints(record string) error {
	points, err := made.Read(record)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range slices.Backward(points) {
		if !removable(p) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
			errs = append(errs, fmt.Errorf("remove mount point %s: %w", p, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(record); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// MountPointsLeft lists the paths record lists that still exist.
func MountPointsLeft(record string) []string {
	points, _ := made.Read(record)
	var out []string
	for _, p := range points {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// removable reports whether path is an empty directory or empty regular
// file (or gone).
func removable(path string) bool {
	st, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		return err == nil && len(entries) == 0
	}
	return st.Mode().IsRegular() && st.Size() == 0
}

// bindMounts mounts each bind inside the sandbox (SandboxInit): the
// mount point is made if missing (in the sandbox's own tmpfs; on the
// host MakeMountPoints made it), Source is bound recursively at Target,
// and a read-only bind is made read-only with every mount below it.
func bindMounts(binds []Bind) error {
	for _, b := range binds {
		st, err := os.Stat(b.Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", b.Source, err)
		}
		if _, err := os.Lstat(b.Target); errors.Is(err, os.ErrNotExist) {
			if err := makeMountPoint(b.Target, st.IsDir()); err != nil {
				return fmt.Errorf("mount point %s: %w", b.Target, err)
			}
		}
		if err := unix.Mount(b.Source, b.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s at %s: %w", b.Source, b.Target, err)
		}
		if !b.ReadOnly {
			continue
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(-1, b.Target, unix.AT_RECURSIVE, attr); err != nil {
			return fmt.Errorf("make %s read-only: %w", b.Target, err)
		}
	}
	return nil
}
