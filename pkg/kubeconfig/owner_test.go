package kubeconfig

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// fileState is what Merge must keep or set: owner, group and mode.
type fileState struct {
	uid, gid int
	mode     fs.FileMode
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fileState{uid: int(st.Uid), gid: int(st.Gid), mode: fi.Mode().Perm()}
}

func setState(t *testing.T, path string, s fileState) {
	t.Helper()
	if err := os.Chown(path, s.uid, s.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, s.mode); err != nil {
		t.Fatal(err)
	}
}

// TestMergeOwnership checks who owns what Merge creates, and that an
// existing kubeconfig keeps its owner and mode through Merge and Remove
// (as root, as under sudo, a plain atomic write would hand it to root).
func TestMergeOwnership(t *testing.T) {
	b := newPKI(t)
	root := os.Geteuid() == 0
	self := fileState{uid: os.Geteuid(), gid: os.Getegid()}
	sudoUser := &Owner{UID: 4321, GID: 4322}
	other := fileState{uid: 4323, gid: 4324, mode: 0o640}
	tests := []struct {
		name     string
		needRoot bool // to give files to other users
		path     string
		owner    *Owner
		// setup prepares home (the existing directory above path) and
		// returns path's file, which may differ through a symlink.
		setup func(t *testing.T, home, dst string) string
		want  map[string]fileState // relative to home; "." is home itself
	}{
		{
			name: "new file and directory for the sudo user", needRoot: true,
			path: ".kube/config", owner: sudoUser,
			want: map[string]fileState{
				".":            {uid: 0, gid: 0, mode: 0o755},
				".kube":        {uid: 4321, gid: 4322, mode: 0o700},
				".kube/config": {uid: 4321, gid: 4322, mode: 0o600},
			},
		},
		{
			name: "new file in new directories of a KUBECONFIG", needRoot: true,
			path: "a/b/config", owner: sudoUser,
			want: map[string]fileState{
				".":          {uid: 0, gid: 0, mode: 0o755},
				"a":          {uid: 4321, gid: 4322, mode: 0o700},
				"a/b":        {uid: 4321, gid: 4322, mode: 0o700},
				"a/b/config": {uid: 4321, gid: 4322, mode: 0o600},
			},
		},
		{
			name: "new file for the process",
			path: ".kube/config",
			want: map[string]fileState{
				".kube":        {uid: self.uid, gid: self.gid, mode: 0o700},
				".kube/config": {uid: self.uid, gid: self.gid, mode: 0o600},
			},
		},
		{
			name: "existing file keeps its mode",
			path: ".kube/config",
			setup: func(t *testing.T, home, dst string) string {
				writeOtherAt(t, dst)
				if err := os.Chmod(dst, 0o640); err != nil {
					t.Fatal(err)
				}
				return dst
			},
			want: map[string]fileState{".kube/config": {uid: self.uid, gid: self.gid, mode: 0o640}},
		},
		{
			name: "existing file keeps its owner, not the sudo user's", needRoot: true,
			path: ".kube/config", owner: sudoUser,
			setup: func(t *testing.T, home, dst string) string {
				writeOtherAt(t, dst)
				setState(t, filepath.Dir(dst), fileState{uid: 4323, gid: 4324, mode: 0o750})
				setState(t, dst, other)
				return dst
			},
			want: map[string]fileState{".kube": {uid: 4323, gid: 4324, mode: 0o750}, ".kube/config": other},
		},
		{
			name: "symlink target keeps its owner and mode", needRoot: true,
			path: ".kube/config", owner: sudoUser,
			setup: func(t *testing.T, home, dst string) string {
				target := filepath.Join(home, "dotfiles", "kubeconfig")
				writeOtherAt(t, target)
				setState(t, target, other)
				if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, dst); err != nil {
					t.Fatal(err)
				}
				return target
			},
			want: map[string]fileState{"dotfiles/kubeconfig": other},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needRoot && !root {
				t.Skip("needs root (CAP_CHOWN) to give files to another user")
			}
			home := filepath.Join(t.TempDir(), "home")
			if err := os.Mkdir(home, 0o755); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(home, tt.path)
			file := dst
			if tt.setup != nil {
				file = tt.setup(t, home, dst)
			}
			check := func(when string) {
				t.Helper()
				for rel, want := range tt.want {
					if got := stateOf(t, filepath.Join(home, rel)); got != want {
						t.Errorf("after %s: %s: owner %d:%d mode %v, want %d:%d %v",
							when, rel, got.uid, got.gid, got.mode, want.uid, want.gid, want.mode)
					}
				}
				checkNoLock(t, dst)
				checkNoTemp(t, filepath.Dir(file))
			}
			if err := Merge(Target{Path: dst, Owner: tt.owner}, writeSrc(t, b, testContext, testServer), testContext, nil); err != nil {
				t.Fatal(err)
			}
			checkContext(t, file, testContext, testServer, b)
			check("Merge")
			if err := Remove(dst, testContext, nil); err != nil {
				t.Fatal(err)
			}
			check("Remove")
			if cfg, err := clientcmd.LoadFromFile(file); err != nil || cfg.Contexts[testContext] != nil {
				t.Errorf("context left after Remove (%v)", err)
			}
		})
	}
}

// writeOtherAt writes the "other" kubeconfig at path, creating its
// directory.
func writeOtherAt(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeOther(t, path, "other")
}

// checkNoTemp fails if dir holds a temporary file of an atomic write.
func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

// TestUnwritable checks that a kubeconfig Merge or Remove cannot change
// is reported, naming the file, and left exactly as it was.
func TestUnwritable(t *testing.T) {
	b := newPKI(t)
	src := writeSrc(t, b, testContext, testServer)
	const lockWait = 100 * time.Millisecond
	tests := []struct {
		name string
		// setup makes dst unwritable (dst's directory exists); good
		// writes a kubeconfig with the "other" context and testContext,
		// so that Merge and Remove both have to write.
		setup func(t *testing.T, dst string, good func())
		// want is what the error wraps; nil: any error, whose message
		// contains wantMsg.
		want     []error
		wantMsg  string
		keepLock bool // the lock file is someone else's and stays
	}{
		{
			name: "malformed YAML",
			setup: func(t *testing.T, dst string, _ func()) {
				writeBytes(t, dst, "apiVersion: v1\nclusters: [\n  - name: x\n")
			},
			wantMsg: "kubeconfig: load " + "{dst}",
		},
		{
			name:    "not a kubeconfig",
			setup:   func(t *testing.T, dst string, _ func()) { writeBytes(t, dst, "- just\n- a list\n") },
			wantMsg: "kubeconfig: load " + "{dst}",
		},
		{
			name: "stale lock of kubectl",
			setup: func(t *testing.T, dst string, good func()) {
				good()
				writeBytes(t, dst+".lock", "")
			},
			want: []error{ErrLocked}, wantMsg: "{dst}.lock existed", keepLock: true,
		},
		{
			name: "read-only file",
			setup: func(t *testing.T, dst string, good func()) {
				good()
				if err := os.Chmod(dst, 0o444); err != nil {
					t.Fatal(err)
				}
			},
			want: []error{ErrReadOnly}, wantMsg: "{dst}",
		},
		{
			name: "read-only directory",
			setup: func(t *testing.T, dst string, good func()) {
				good()
				readOnlyDir(t, filepath.Dir(dst))
			},
			// As root the mode is checked; otherwise the kernel refuses
			// the lock file.
			want: []error{ErrReadOnly, fs.ErrPermission}, wantMsg: "{dst}",
		},
	}
	ops := []struct {
		name string
		run  func(dst string) error
	}{
		{"Merge", func(dst string) error { return merge(Target{Path: dst}, src, testContext, lockWait, nil) }},
		{"Remove", func(dst string) error { return remove(dst, testContext, lockWait, nil) }},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "kube")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(dir, "config")
				tt.setup(t, dst, func() {
					writeOther(t, dst, "other")
					if err := Merge(Target{Path: dst}, src, testContext, nil); err != nil {
						t.Fatal(err)
					}
				})
				before, _ := os.ReadFile(dst)
				beforeState := stateOf(t, dst)

				err := op.run(dst)
				if err == nil {
					t.Fatal("no error")
				}
				if msg := strings.ReplaceAll(tt.wantMsg, "{dst}", dst); !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q does not contain %q", err, msg)
				}
				if tt.want != nil {
					found := false
					for _, w := range tt.want {
						found = found || errors.Is(err, w)
					}
					if !found {
						t.Errorf("error %q wraps none of %v", err, tt.want)
					}
				}
				after, _ := os.ReadFile(dst)
				if !bytes.Equal(before, after) || stateOf(t, dst) != beforeState {
					t.Error("the file was changed")
				}
				checkNoTemp(t, dir)
				if tt.keepLock {
					if _, err := os.Stat(dst + ".lock"); err != nil {
						t.Errorf("someone else's lock file was removed: %v", err)
					}
				} else {
					checkNoLock(t, dst)
				}
			})
		}
	}
}

// TestMergeReadOnlyDirectoryCreatesNothing: Merge into a missing file of a
// read-only directory fails and creates nothing.
func TestMergeReadOnlyDirectoryCreatesNothing(t *testing.T) {
	b := newPKI(t)
	dir := filepath.Join(t.TempDir(), "kube")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	readOnlyDir(t, dir)
	dst := filepath.Join(dir, "config")
	err := Merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, nil)
	if !errors.Is(err, ErrReadOnly) && !errors.Is(err, fs.ErrPermission) {
		t.Errorf("error %v, want ErrReadOnly or a permission error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("created %v", entries)
	}
}

func writeBytes(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// readOnlyDir makes dir mode 0500 until the test ends.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
}
