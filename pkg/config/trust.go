package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// TrustProblem is what makes a path untrusted (UntrustedError.Problem).
type TrustProblem int

// The problems CheckTrusted finds.
const (
	// OwnedByOther: the entry's owner is another user, who may change it
	// (chmod, rename what is in it) whatever its mode says.
	OwnedByOther TrustProblem = iota + 1
	// WritableByOthers: the directory is writable by its group or by
	// others (and, for an ancestor, not sticky), who may add, rename or
	// remove entries in it.
	WritableByOthers
)

// UntrustedError is the error of CheckTrusted: Path, the directory asked
// about or an entry on the way to it, could be changed by a user other
// than the one who checks.
type UntrustedError struct {
	// Dir is the directory CheckTrusted was asked about.
	Dir string
	// Path is the entry at fault, with the symbolic links before it
	// resolved: Dir itself (Final), one of its ancestors, or a symbolic
	// link on the way.
	Path string
	// Final is true when Path is the directory Dir resolves to.
	Final bool
	// Owner is Path's owner (a uid), and Perm its permission bits with
	// the set-id and sticky bits, as chmod(1) takes them in octal.
	Owner int
	Perm  uint32
	// User is the uid the check was made for.
	User int
	// Problem says what is wrong with Path.
	Problem TrustProblem
}

func (e *UntrustedError) Error() string {
	what := e.Path
	if !e.Final {
		what = fmt.Sprintf("%s, on the way to %s,", e.Path, e.Dir)
	}
	switch {
	case e.Problem == OwnedByOther && e.Final:
		return fmt.Sprintf("%s is owned by %s, not by %s", what, UserName(e.Owner), UserName(e.User))
	case e.Problem == OwnedByOther:
		return fmt.Sprintf("%s is owned by %s, neither root nor %s", what, UserName(e.Owner), UserName(e.User))
	case e.Final:
		return fmt.Sprintf("%s is writable by its group or others (mode %04o)", what, e.Perm)
	}
	return fmt.Sprintf("%s is writable by its group or others (mode %04o) and not sticky", what, e.Perm)
}

// UserName is uid as messages show it: "uid 65534 (nobody)", or
// "uid 1234" for a uid without a passwd entry.
func UserName(uid int) string {
	if name := lookupUserName(uid); name != "" {
		return fmt.Sprintf("uid %d (%s)", uid, name)
	}
	return fmt.Sprintf("uid %d", uid)
}

func lookupUserName(uid int) string {
	u, err := osuser.LookupId(strconv.Itoa(uid))
	if err != nil {
		return ""
	}
	return u.Username
}

// maxLinks is how many symbolic links CheckTrusted follows on one path,
// the kernel's limit before ELOOP.
const maxLinks = 40

// CheckTrusted returns nil when nobody but uid and root can change the
// directory dir (absolute) or what it resolves to, as sshd's StrictModes
// checks ~/.ssh: walking from / and following symbolic links itself,
//   - every entry on the way (directories and symbolic links) is owned by
//     root or uid;
//   - every directory on the way is writable by neither its group nor
//     others, unless it is sticky (such as /tmp): there only an entry's
//     owner may rename or remove it, and those entries are root's or
//     uid's;
//   - the directory dir resolves to is owned by uid itself and writable
//     by neither its group nor others.
//
// When dir or an ancestor does not exist the check ends at the last one
// that does: what is made below it is uid's. The error is an
// *UntrustedError naming the entry at fault; other errors are those of
// lstat(2) and readlink(2), or ELOOP, wrapped in an *fs.PathError.
func CheckTrusted(dir string, uid int) error { return checkTrusted(dir, uid, osLookup{}) }

// entry is what CheckTrusted needs of a directory entry.
type entry struct {
	uid  int
	perm uint32 // permission, set-id and sticky bits
	kind fs.FileMode
}

// lookup is the file system CheckTrusted reads (a fake one in tests).
type lookup interface {
	lstat(path string) (entry, error)
	readlink(path string) (string, error)
}

func checkTrusted(dir string, uid int, fsys lookup) error {
	if !filepath.IsAbs(dir) {
		return &fs.PathError{Op: "check owner", Path: dir, Err: errors.New("not an absolute path")}
	}
	w := &trustWalk{dir: dir, uid: uid, fsys: fsys}
	if err := w.moveTo("/"); err != nil {
		return err
	}
	todo := strings.Split(dir, "/")
	for len(todo) > 0 {
		var (
			missing bool
			err     error
		)
		if todo, missing, err = w.step(todo[0], todo[1:]); err != nil || missing {
			return err
		}
	}
	return w.final()
}

// trustWalk is one CheckTrusted: cur is the directory reached so far,
// symbolic links resolved; it is checked as an ancestor whenever an entry
// is looked up in it, and at the end as the directory dir resolves to.
type trustWalk struct {
	dir      string
	uid      int
	fsys     lookup
	cur      string
	curEntry entry
	links    int
}

// moveTo makes path, resolved, the directory reached.
func (w *trustWalk) moveTo(path string) error {
	e, err := w.fsys.lstat(path)
	if err != nil {
		return err
	}
	w.cur, w.curEntry = path, e
	return nil
}

// step looks name up in the directory reached and returns what is left
// to walk: rest, after a link's target when name is a link. missing is
// true when name does not exist: what is below is the caller's to make.
func (w *trustWalk) step(name string, rest []string) (todo []string, missing bool, err error) {
	switch name {
	case "", ".":
		return rest, false, nil
	case "..":
		return rest, false, w.moveTo(filepath.Dir(w.cur))
	}
	if err := w.ancestor(w.cur, w.curEntry); err != nil {
		return nil, false, err
	}
	next := filepath.Join(w.cur, name)
	e, err := w.fsys.lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	switch e.kind {
	case fs.ModeDir:
		w.cur, w.curEntry = next, e
		return rest, false, nil
	case fs.ModeSymlink:
		return w.follow(next, e, rest)
	}
	return nil, false, &fs.PathError{Op: "check owner", Path: next, Err: unix.ENOTDIR}
}

// follow checks the link at path and returns its target's names before
// rest.
func (w *trustWalk) follow(path string, e entry, rest []string) ([]string, bool, error) {
	if err := w.ancestor(path, e); err != nil {
		return nil, false, err
	}
	if w.links++; w.links > maxLinks {
		return nil, false, &fs.PathError{Op: "check owner", Path: w.dir, Err: unix.ELOOP}
	}
	target, err := w.fsys.readlink(path)
	if err != nil {
		return nil, false, err
	}
	if filepath.IsAbs(target) {
		if err := w.moveTo("/"); err != nil {
			return nil, false, err
		}
	}
	return append(strings.Split(target, "/"), rest...), false, nil
}

// ancestor checks a directory or link on the way.
func (w *trustWalk) ancestor(path string, e entry) error {
	switch {
	case e.uid != 0 && e.uid != w.uid:
		return w.untrusted(path, e, false, OwnedByOther)
	case e.kind == fs.ModeDir && e.perm&0o022 != 0 && e.perm&unix.S_ISVTX == 0:
		return w.untrusted(path, e, false, WritableByOthers)
	}
	return nil
}

// final checks the directory dir resolves to.
func (w *trustWalk) final() error {
	switch {
	case w.curEntry.uid != w.uid:
		return w.untrusted(w.cur, w.curEntry, true, OwnedByOther)
	case w.curEntry.perm&0o022 != 0:
		return w.untrusted(w.cur, w.curEntry, true, WritableByOthers)
	}
	return nil
}

func (w *trustWalk) untrusted(path string, e entry, final bool, p TrustProblem) error {
	return &UntrustedError{Dir: w.dir, Path: path, Final: final, Owner: e.uid, Perm: e.perm, User: w.uid, Problem: p}
}

// osLookup is the machine's file system.
type osLookup struct{}

func (osLookup) lstat(path string) (entry, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return entry{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	e := entry{uid: int(st.Uid), perm: st.Mode & 0o7777}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.kind = fs.ModeDir
	case unix.S_IFLNK:
		e.kind = fs.ModeSymlink
	}
	return e, nil
}

func (osLookup) readlink(path string) (string, error) { return os.Readlink(path) }
