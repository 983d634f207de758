package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mkTree creates files (a trailing "/" makes a directory) under dir.
func mkTree(t *testing.T, dir string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(dir, e)
		if strings.HasSuffix(e, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shortTemp is a temporary directory with a short path, so the socket
// paths of a state dir in it stay under MaxSocketPath.
func shortTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestStateDirProblem(t *testing.T) {
	tests := []struct {
		name    string
		entries []string // created in a fresh dir; nil: the dir does not exist
		dir     string   // instead of the fresh dir
		home    bool     // the fresh dir is the user's home
		want    string   // "" means no problem
	}{
		{name: "does not exist", want: ""},
		{name: "empty", entries: []string{}, want: ""},
		{name: "marked", entries: []string{StateMarker, "pki/ca.crt", "etcd/"}, want: ""},
		{name: "older kubernix", entries: []string{"kubernix.toml", "pki/ca.crt", "logs/"}, want: ""},
		{name: "images dropped before up", entries: []string{"images/app.tar", "registries/docker.io/hosts.toml"}, want: ""},
		{name: "fresh file system", entries: []string{"lost+found/"}, want: ""},
		{name: "someone's files", entries: []string{"photos/a.jpg", "images/"}, want: "is not empty and not a kubernix state dir (it has no .kubernix-state or kubernix.toml)"},
		{name: "one foreign file", entries: []string{"notes.txt"}, want: "is not empty and not a kubernix state dir"},
		{name: "home", entries: []string{}, home: true, want: "is a home directory"},
		{name: "root", dir: "/", want: "/ is a system directory"},
		{name: "usr", dir: "/usr", want: "/usr is a system directory"},
		{name: "etc", dir: "/etc", want: "/etc is a system directory"},
		{name: "var/lib", dir: "/var/lib", want: "/var/lib is a system directory"},
		{name: "run via var/run", dir: resolveExisting("/var/run"), want: "is a system directory"},
		{name: "tmp", dir: "/tmp", want: "/tmp is a system directory"},
		{name: "below a system dir", dir: "/var/lib/kubernix-test-does-not-exist/x", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = filepath.Join(t.TempDir(), "state")
				if tt.entries != nil {
					if err := os.Mkdir(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					mkTree(t, dir, tt.entries...)
				}
			}
			var homes []string
			if tt.home {
				homes = []string{dir}
			}
			err := stateDirProblem(dir, homes)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("stateDirProblem(%s) = %v, want nil", dir, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("stateDirProblem(%s) = %v, want it to mention %q", dir, err, tt.want)
			}
		})
	}
}

func TestResolveExisting(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	mkTree(t, real, "sub/")
	for link, target := range map[string]string{"link": real, "rel": "real/sub", "loop": "loop"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ in, want string }{
		{filepath.Join(root, "link"), real},
		{filepath.Join(root, "link", "new", "state"), filepath.Join(real, "new", "state")},
		{filepath.Join(root, "rel", "state"), filepath.Join(real, "sub", "state")},
		{filepath.Join(root, "real", "sub"), filepath.Join(real, "sub")},
		{filepath.Join(root, "absent", "state"), filepath.Join(root, "absent", "state")},
		{filepath.Join(root, "loop", "state"), filepath.Join(root, "loop", "state")},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.in, root), func(t *testing.T) {
			if got := resolveExisting(tt.in); got != tt.want {
				t.Errorf("resolveExisting(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestValidateStateDir runs Validate on state dirs that need a file tree.
func TestValidateStateDir(t *testing.T) {
	root := shortTemp(t)
	mkTree(t, root, "foreign/data.db", "old/kubernix.toml", "old/pki/ca.crt", "seeded/images/app.tar", "open/", "shared/")
	for dir, mode := range map[string]os.FileMode{"open": 0o777, "shared": 0o775} {
		if err := os.Chmod(filepath.Join(root, dir), mode); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"to-usr": "/usr", "to-foreign": filepath.Join(root, "foreign")} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, dir string
		want      string // "" means valid
	}{
		{"foreign", "foreign", "--state-dir: " + filepath.Join(root, "foreign") + " is not empty and not a kubernix state dir"},
		{"link to /usr", "to-usr", "--state-dir: /usr is a system directory"},
		{"link to foreign", "to-foreign", filepath.Join(root, "foreign") + " is not empty"},
		{"below a link to foreign", "to-foreign/state", ""},
		{"older kubernix", "old", ""},
		{"images seeded", "seeded", ""},
		{"writable by others", "open", "--state-dir " + filepath.Join(root, "open") + ": " + filepath.Join(root, "open") +
			" is writable by its group or others (mode 0777); kubernix follows the records in a state dir"},
		{"writable by its group", "shared", "(mode 0775)"},
		{"below a dir writable by others", "open/state", filepath.Join(root, "open") + ", on the way to " + filepath.Join(root, "open", "state") +
			", is writable by its group or others (mode 0777) and not sticky; kubernix follows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, []string{"--state-dir", filepath.Join(root, tt.dir)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

func TestResolveFollowsSymlink(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, "real/")
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	c, err := load(t, []string{"--state-dir", filepath.Join(root, "link", "kx")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "real", "kx"); c.StateDir != want || c.Paths().State != want {
		t.Errorf("StateDir = %s, Paths().State = %s; want %s", c.StateDir, c.Paths().State, want)
	}
}

func TestMakeState(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, "old/kubernix.toml")
	for _, dir := range []string{"new/deep", "old"} {
		p := Paths{State: filepath.Join(root, dir)}
		for range 2 { // idempotent
			if err := p.MakeState(); err != nil {
				t.Fatalf("MakeState(%s): %v", dir, err)
			}
		}
		if _, err := os.Stat(p.Marker()); err != nil {
			t.Errorf("%s has no marker: %v", dir, err)
		}
		if ours, err := isStateDir(p.State); !ours || err != nil {
			t.Errorf("isStateDir(%s) = %v, %v after MakeState", dir, ours, err)
		}
		if st, err := os.Stat(p.State); err != nil || st.Mode().Perm() != StateDirMode {
			t.Errorf("%s has mode %v (%v), want %v", dir, st.Mode().Perm(), err, StateDirMode)
		}
	}
}

func TestPathListProblem(t *testing.T) {
	for _, tt := range []struct {
		dir  string
		want bool
	}{{"/var/lib/kubernix/a", false}, {"", false}, {"/tmp/a:b", true}, {":", true}} {
		if err := pathListProblem("state-dir", tt.dir); (err != nil) != tt.want || (err != nil && !strings.Contains(err.Error(), "--state-dir")) {
			t.Errorf("pathListProblem(%q) = %v, want an error naming --state-dir: %v", tt.dir, err, tt.want)
		}
	}
}

func TestSocketPathProblem(t *testing.T) {
	longest := func(state, name string) string {
		socks := Paths{State: state}.Node(name + "-node-0").Sockets()
		l := ""
		for _, s := range socks {
			if len(s) > len(l) {
				l = s
			}
		}
		return l
	}
	n := func(k int) string { return strings.Repeat("n", k) }
	d := func(k int) string { return "/" + strings.Repeat("d", k-1) }
	tests := []struct {
		name, state, cluster string
		derived              bool
		want, not            []string
	}{
		{"long name, default state dir", "/var/lib/kubernix/" + n(30), n(30), true,
			[]string{`--name "` + n(30) + `" (30 bytes, also part of the default --state-dir /var/lib/kubernix/` + n(30) + `)`, "128 bytes long", "limit of 107 bytes",
				"use a --name of at most 19 bytes, or a --state-dir of at most 27 bytes"},
			[]string{"at most 1 bytes"}},
		{"long state dir", d(82), "kubernix", false,
			[]string{"--state-dir " + d(82) + " (82 bytes)", "140 bytes long", "choose a --state-dir of at most 49 bytes"},
			[]string{"--name"}},
		{"long name, short state dir", "/s", n(63), false,
			[]string{`--name "` + n(63) + `" (63 bytes)`, "115 bytes long", "use a --name of at most 55 bytes"},
			[]string{"--state-dir of"}},
		{"state dir mostly", d(50), n(20), false,
			[]string{"--state-dir " + d(50) + " (50 bytes)", "choose a --state-dir of at most 37 bytes, or a --name of at most 7 bytes"}, nil},
		{"both too long", d(60), n(63), false,
			[]string{"--state-dir " + d(60) + " (60 bytes) and --name", "shorten both, by 66 bytes in all"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := longest(tt.state, tt.cluster)
			err := socketPathProblem(sock, tt.state, tt.cluster, tt.derived)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to mention %q", err, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it not to mention %q", err, w)
				}
			}
		})
	}
}
