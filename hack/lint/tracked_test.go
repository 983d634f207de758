package lint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// elfMagic starts every ELF file: the executables `go build` writes.
var elfMagic = []byte("\x7fELF")

// TestNoBuildOutputsTracked fails naming every file git tracks that is an
// ELF executable or object (issue 23: a plain `go build` at the root
// wrote kubernix and bench, and both were committed). Build outputs belong
// under the ignored _output/.
func TestNoBuildOutputsTracked(t *testing.T) {
	root := moduleRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot list the tracked files")
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Skipf("not a git checkout (git ls-files: %s)", bytes.TrimSpace(ee.Stderr))
		}
		t.Fatal(err)
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		path := filepath.Join(root, string(name))
		if isELF(t, path) {
			t.Errorf("%s is a build output (ELF) tracked by git: `git rm --cached %s` and ignore it", name, name)
		}
	}
}

// isELF reports whether the file at path starts with the ELF magic; a
// tracked file deleted in the work tree, or a directory (a submodule), is
// not.
func isELF(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	head := make([]byte, len(elfMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return bytes.Equal(head, elfMagic)
}
