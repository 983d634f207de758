package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeFS is a file system of directories and links, by absolute path.
type fakeFS map[string]fakeEntry

type fakeEntry struct {
	uid  int
	perm uint32
	link string // a symbolic link to this target when set
	file bool   // a regular file
}

func (f fakeFS) lstat(path string) (entry, error) {
	e, ok := f[path]
	if !ok {
		return entry{}, &fs.PathError{Op: "lstat", Path: path, Err: fs.ErrNotExist}
	}
	if e.link != "" {
		return entry{uid: e.uid, perm: 0o777, kind: fs.ModeSymlink}, nil
	}
	if e.file {
		return entry{uid: e.uid, perm: e.perm}, nil
	}
	return entry{uid: e.uid, perm: e.perm, kind: fs.ModeDir}, nil
}

func (f fakeFS) readlink(path string) (string, error) { return f[path].link, nil }

// base is a host: / and the usual directories root's, /tmp sticky, and a
// user 1000's home.
func base(more fakeFS) fakeFS {
	f := fakeFS{
		"/": {perm: 0o755}, "/var": {perm: 0o755}, "/var/lib": {perm: 0o755}, "/tmp": {perm: 0o1777},
		"/home": {perm: 0o755}, "/home/u": {uid: 1000, perm: 0o750}, "/home/u/.local": {uid: 1000, perm: 0o755},
	}
	for k, v := range more {
		f[k] = v
	}
	return f
}

func TestCheckTrusted(t *testing.T) {
	tests := []struct {
		name string
		fs   fakeFS
		dir  string
		uid  int
		// want is the UntrustedError's Path and Problem; "" for nil.
		want    string
		problem TrustProblem
		final   bool
	}{
		{name: "root's state dir", fs: base(fakeFS{"/var/lib/kubernix": {perm: 0o755}, "/var/lib/kubernix/c": {perm: 0o700}}), dir: "/var/lib/kubernix/c"},
		{name: "missing state dir below a trusted parent", fs: base(nil), dir: "/var/lib/kubernix/c"},
		{name: "owned by another user", fs: base(fakeFS{"/srv": {perm: 0o755}, "/srv/c": {uid: 65534, perm: 0o755}}), dir: "/srv/c",
			want: "/srv/c", problem: OwnedByOther, final: true},
		{name: "empty and owned by another user in /tmp", fs: base(fakeFS{"/tmp/c": {uid: 65534, perm: 0o700}}), dir: "/tmp/c",
			want: "/tmp/c", problem: OwnedByOther, final: true},
		{name: "world-writable", fs: base(fakeFS{"/srv": {perm: 0o755}, "/srv/c": {perm: 0o777}}), dir: "/srv/c",
			want: "/srv/c", problem: WritableByOthers, final: true},
		{name: "group-writable", fs: base(fakeFS{"/srv": {perm: 0o755}, "/srv/c": {perm: 0o770}}), dir: "/srv/c",
			want: "/srv/c", problem: WritableByOthers, final: true},
		{name: "sticky and world-writable itself", fs: base(fakeFS{"/srv": {perm: 0o755}, "/srv/c": {perm: 0o1777}}), dir: "/srv/c",
			want: "/srv/c", problem: WritableByOthers, final: true},
		{name: "in sticky /tmp", fs: base(fakeFS{"/tmp/c": {perm: 0o700}}), dir: "/tmp/c"},
		{name: "below a root-owned dir in sticky /tmp", fs: base(fakeFS{"/tmp/t": {perm: 0o700}, "/tmp/t/c": {perm: 0o755}}), dir: "/tmp/t/c"},
		{name: "below another user's dir in /tmp", fs: base(fakeFS{"/tmp/t": {uid: 65534, perm: 0o755}, "/tmp/t/c": {perm: 0o755}}), dir: "/tmp/t/c",
			want: "/tmp/t", problem: OwnedByOther},
		{name: "missing, below another user's dir", fs: base(fakeFS{"/tmp/t": {uid: 65534, perm: 0o755}}), dir: "/tmp/t/c",
			want: "/tmp/t", problem: OwnedByOther},
		{name: "below a world-writable ancestor", fs: base(fakeFS{"/srv": {perm: 0o777}, "/srv/c": {perm: 0o755}}), dir: "/srv/c",
			want: "/srv", problem: WritableByOthers},
		{name: "missing, below a world-writable ancestor", fs: base(fakeFS{"/srv": {perm: 0o777}}), dir: "/srv/a/c",
			want: "/srv", problem: WritableByOthers},
		{name: "below a user's home, for root", fs: base(fakeFS{"/home/u/c": {perm: 0o700}}), dir: "/home/u/c",
			want: "/home/u", problem: OwnedByOther},
		{name: "world-writable /", fs: base(fakeFS{"/": {perm: 0o777}}), dir: "/var/lib",
			want: "/", problem: WritableByOthers},
		{name: "the user's own", fs: base(fakeFS{"/home/u/.local/c": {uid: 1000, perm: 0o700}}), dir: "/home/u/.local/c", uid: 1000},
		{name: "root's dir, for a user", fs: base(fakeFS{"/home/u/.local/c": {perm: 0o700}}), dir: "/home/u/.local/c", uid: 1000,
			want: "/home/u/.local/c", problem: OwnedByOther, final: true},
		{name: "another user's home, for a user", fs: base(fakeFS{"/home/v": {uid: 1001, perm: 0o755}, "/home/v/c": {uid: 1000, perm: 0o700}}),
			dir: "/home/v/c", uid: 1000, want: "/home/v", problem: OwnedByOther},
		{name: "a root-owned link in /tmp to a trusted dir", fs: base(fakeFS{"/tmp/l": {link: "/var/lib/c"}, "/var/lib/c": {perm: 0o700}}), dir: "/tmp/l"},
		{name: "another user's link in /tmp", fs: base(fakeFS{"/tmp/l": {uid: 65534, link: "/var/lib/c"}, "/var/lib/c": {perm: 0o700}}), dir: "/tmp/l",
			want: "/tmp/l", problem: OwnedByOther},
		{name: "a link to another user's dir", fs: base(fakeFS{"/tmp/l": {link: "/srv/c"}, "/srv": {perm: 0o755}, "/srv/c": {uid: 65534, perm: 0o700}}), dir: "/tmp/l",
			want: "/srv/c", problem: OwnedByOther, final: true},
		{name: "a link to below a world-writable dir", fs: base(fakeFS{"/var/lib/l": {link: "../../srv/c"}, "/srv": {perm: 0o777}, "/srv/c": {perm: 0o700}}), dir: "/var/lib/l",
			want: "/srv", problem: WritableByOthers},
		{name: "a relative link", fs: base(fakeFS{"/var/lib/l": {link: "k/c"}, "/var/lib/k": {perm: 0o755}, "/var/lib/k/c": {perm: 0o700}}), dir: "/var/lib/l"},
		{name: "a linked ancestor", fs: base(fakeFS{"/var/lib/l": {link: "/srv"}, "/srv": {perm: 0o755}, "/srv/c": {uid: 65534, perm: 0o700}}), dir: "/var/lib/l/c",
			want: "/srv/c", problem: OwnedByOther, final: true},
		{name: "a link ending in ..", fs: base(fakeFS{"/var/lib/l": {link: "/srv/c/.."}, "/srv": {uid: 65534, perm: 0o755}, "/srv/c": {perm: 0o700}}), dir: "/var/lib/l",
			want: "/srv", problem: OwnedByOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkTrusted(tt.dir, tt.uid, tt.fs)
			var ue *UntrustedError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkTrusted(%s) = %v, want nil", tt.dir, err)
			case tt.want == "":
			case !errors.As(err, &ue):
				t.Fatalf("checkTrusted(%s) = %v, want an UntrustedError for %s", tt.dir, err, tt.want)
			case ue.Path != tt.want || ue.Problem != tt.problem || ue.Final != tt.final || ue.Dir != tt.dir:
				t.Fatalf("checkTrusted(%s) = %+v, want path %s, problem %d, final %v", tt.dir, ue, tt.want, tt.problem, tt.final)
			}
		})
	}
}

func TestCheckTrustedLoop(t *testing.T) {
	f := base(fakeFS{"/var/lib/a": {link: "b"}, "/var/lib/b": {link: "a"}})
	if err := checkTrusted("/var/lib/a", 0, f); !errors.Is(err, unix.ELOOP) {
		t.Fatalf("checkTrusted of a link loop = %v, want ELOOP", err)
	}
}

func TestCheckTrustedFile(t *testing.T) {
	f := base(fakeFS{"/var/lib/f": {file: true, perm: 0o600}})
	for _, dir := range []string{"/var/lib/f", "/var/lib/f/c"} {
		if err := checkTrusted(dir, 0, f); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("checkTrusted(%s) = %v, want ENOTDIR", dir, err)
		}
	}
}

func TestCheckTrustedErrorNamesPath(t *testing.T) {
	f := base(fakeFS{"/srv": {perm: 0o777}, "/srv/c": {perm: 0o700}})
	err := checkTrusted("/srv/c", 0, f)
	want := "/srv, on the way to /srv/c, is writable by its group or others (mode 0777) and not sticky"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

// TestCheckTrustedOnDisk checks the real file system: a directory of the
// calling user's in a temporary directory, then with group and other write
// permission.
func TestCheckTrustedOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(dir, os.Geteuid()); err != nil {
		t.Skipf("the temporary directory is not trusted here, so this check cannot run: %v", err)
	}
	link := dir + "-link"
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(link, os.Geteuid()); err != nil {
		t.Errorf("through a link: %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var ue *UntrustedError
	if err := CheckTrusted(link, os.Geteuid()); !errors.As(err, &ue) || ue.Path != dir || ue.Problem != WritableByOthers {
		t.Errorf("mode 0777 through a link: %v, want %s writable by others", err, dir)
	}
}
