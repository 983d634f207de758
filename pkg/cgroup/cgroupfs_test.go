package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/internal/fileinfo"
)

// TestCgroupPIDs mounts a named cgroup v1 hierarchy at a path with a space
// (escaped as \040 in mountinfo), puts a process in a nested cgroup there
// and checks that Mounts lists the mount, PIDs finds the
// process from the parent cgroup, and RemoveEmpty leaves a cgroup
// that still has children.
func TestCgroupPIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	// In the host's own hierarchies, as kubernix makes its nodes': a
	// hierarchy mounted for the test would outlive it in the kernel
	// (every process belongs to it) once unmounted lazily, and break
	// containerd's cgroup v1 lookups on this machine.
	parent := fmt.Sprintf("/kubernix-unit-test-%d", os.Getpid())
	child := parent + "/a"
	if err := Ensure(child); err != nil {
		t.Skipf("cannot make cgroups here: %v", err)
	}
	t.Cleanup(func() { _ = Remove(parent) })
	dirs, err := Existing(child)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("Existing(%s) = %v, %v", child, dirs, err)
	}
	if pids, err := PIDs(parent); err != nil || len(pids) != 0 {
		t.Fatalf("PIDs of an empty cgroup = %v, %v; want none", pids, err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	if err := os.WriteFile(filepath.Join(dirs[0], "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	pids, err := PIDs(parent)
	if err != nil || !slices.Equal(pids, []int{sleep.Process.Pid}) {
		t.Errorf("PIDs(%s) = %v, %v; want [%d]", parent, pids, err, sleep.Process.Pid)
	}
	if pids, err := PIDs("/kubernix-unit-test-missing"); err != nil || len(pids) != 0 {
		t.Errorf("PIDs of a missing cgroup = %v, %v; want none, no error", pids, err)
	}

	RemoveEmpty(parent)
	if !fileinfo.Exists(dirs[0]) {
		t.Errorf("RemoveEmpty removed %s, which has a child", parent)
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if err := Remove(parent); err != nil {
		t.Fatal(err)
	}
	if left, _ := Existing(parent); len(left) > 0 {
		t.Errorf("Remove left %v", left)
	}
}

// TestEnsureParentRemovedMeanwhile: when another cluster's down removes
// the shared parent ("kubernix", empty) between Ensure's check of it and
// the mkdir of the child, Ensure makes the path again rather than fail
// with ENOENT (seen with four clusters going up and down at once).
func TestEnsureParentRemovedMeanwhile(t *testing.T) {
	tests := []struct {
		name     string
		removals int // how many times the parent goes just before the child's mkdir
		wantErr  bool
	}{
		{"no race", 0, false},
		{"the parent removed once", 1, false},
		{"removed at every try: the error, named", 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			parts := []string{"kubernix", "node-0"}
			left := tt.removals
			mkdir := func(dir string, mode os.FileMode) error {
				if filepath.Base(dir) == "node-0" && left > 0 {
					left--
					if err := os.Remove(filepath.Dir(dir)); err != nil {
						t.Fatal(err)
					}
				}
				return os.Mkdir(dir, mode)
			}
			if err := ensureIn(root, []string{"kubernix"}, os.Mkdir); err != nil {
				t.Fatal(err)
			}
			err := ensureRetrying(root, parts, mkdir)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "kubernix", "node-0")) {
					t.Errorf("err %v, want one naming the cgroup", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if fi, err := os.Stat(filepath.Join(root, "kubernix", "node-0")); err != nil || !fi.IsDir() {
				t.Errorf("node-0 not made: %v", err)
			}
		})
	}
}
