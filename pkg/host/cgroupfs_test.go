package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCgroupPIDs mounts a named cgroup v1 hierarchy at a path with a space
// (escaped as \040 in mountinfo), puts a process in a nested cgroup there
// and checks that CgroupMounts lists the mount, CgroupPIDs finds the
// process from the parent cgroup, and RemoveEmptyCgroup leaves a cgroup
// that still has children.
func TestCgroupPIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a cgroup hierarchy")
	}
	mnt := filepath.Join(t.TempDir(), "with space")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("cgroup", mnt, "cgroup", 0, "none,name=kubernix-unit-test"); err != nil {
		t.Skipf("cannot mount a named cgroup v1 hierarchy: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })

	mounts, err := CgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mounts, mnt) {
		t.Fatalf("CgroupMounts = %v, want it to hold %q", mounts, mnt)
	}

	const parent = "/kubernix-unit-test"
	child := filepath.Join(mnt, parent, "a")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveCgroup(parent) })
	if pids, err := CgroupPIDs(parent); err != nil || len(pids) != 0 {
		t.Fatalf("CgroupPIDs of an empty cgroup = %v, %v; want none", pids, err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	if err := os.WriteFile(filepath.Join(child, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	pids, err := CgroupPIDs(parent)
	if err != nil || !slices.Equal(pids, []int{sleep.Process.Pid}) {
		t.Errorf("CgroupPIDs(%s) = %v, %v; want [%d]", parent, pids, err, sleep.Process.Pid)
	}
	if pids, err := CgroupPIDs("/kubernix-unit-test-missing"); err != nil || len(pids) != 0 {
		t.Errorf("CgroupPIDs of a missing cgroup = %v, %v; want none, no error", pids, err)
	}

	RemoveEmptyCgroup(parent)
	if !Exists(child) {
		t.Errorf("RemoveEmptyCgroup removed %s, which has a child", parent)
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if err := RemoveCgroup(parent); err != nil {
		t.Fatal(err)
	}
	if Exists(filepath.Join(mnt, parent)) {
		t.Errorf("RemoveCgroup left %s", parent)
	}
}
