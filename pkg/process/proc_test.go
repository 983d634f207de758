package process

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReadProcStat(t *testing.T) {
	self, err := readProcStat(os.Getpid())
	if err != nil || self.startTime == 0 || self.ppid != os.Getppid() || (self.state != 'R' && self.state != 'S') {
		t.Errorf("readProcStat(self) = %+v, %v; want state R or S, parent %d, a start time", self, err, os.Getppid())
	}
	if _, err := readProcStat(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readProcStat(no such pid) = %v, want fs.ErrNotExist", err)
	}
}

func TestHasArgPair(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"shim", "-namespace", "k8s.io", "-address", "/run/a.sock", "start"}, true},
		{[]string{"shim", "-address", "/run/a.sock"}, true},
		{[]string{"shim", "-address", "/run/a.sock.other"}, false},
		{[]string{"shim", "-address"}, false},
		{[]string{"shim", "/run/a.sock", "-address"}, false},
		{[]string{"shim", "--address", "/run/a.sock"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		is := func(v string) bool { return v == "/run/a.sock" }
		if got := hasArgPair(tt.args, "-address", is); got != tt.want {
			t.Errorf("hasArgPair(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestIsAncestor(t *testing.T) {
	child := exec.Command(sleepPath(t), "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"parent", os.Getppid(), true},
		{"self", os.Getpid(), false},
		{"child", child.Process.Pid, false},
		{"no such process", 1 << 30, false},
	}
	for _, tt := range tests {
		if got := IsAncestor(tt.pid); got != tt.want {
			t.Errorf("IsAncestor(%s, %d) = %v, want %v", tt.name, tt.pid, got, tt.want)
		}
	}
	if pp, err := readProcStat(os.Getppid()); err == nil && pp.ppid > 1 && !IsAncestor(pp.ppid) {
		t.Errorf("IsAncestor(grandparent %d) = false", pp.ppid)
	}
}

// startMarked starts n shell processes whose command lines hold
// "-address" followed by a value unique to the test, and returns that value.
func startMarked(t *testing.T, n int) (string, []*exec.Cmd) {
	t.Helper()
	marker := t.TempDir() + "/containerd.sock"
	var cmds []*exec.Cmd
	for range n {
		// The shell waits on its builtin read of a pipe that stays open,
		// so no child of its own outlives it.
		c := exec.Command("/bin/sh", "-c", "read x", "shim", "-address", marker)
		stdin, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// Referenced until the end, so no finalizer closes the pipe early.
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait(); _ = stdin.Close() })
		cmds = append(cmds, c)
	}
	return marker, cmds
}

func TestWithArgs(t *testing.T) {
	marker, cmds := startMarked(t, 2)
	var want []int
	for _, c := range cmds {
		want = append(want, c.Process.Pid)
	}
	slices.Sort(want)
	got, err := WithArgs("-address", marker)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("WithArgs(-address, %s) = %v, %v; want %v", marker, got, err, want)
	}
	if got, err := WithArgs("-address", marker+".other"); err != nil || len(got) != 0 {
		t.Errorf("WithArgs(other socket) = %v, %v; want none", got, err)
	}
	dir := filepath.Dir(marker) + "/"
	got, err = WithArgFunc("-address", func(v string) bool { return strings.HasPrefix(v, dir) })
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("WithArgFunc(-address, under %s) = %v, %v; want %v", dir, got, err, want)
	}
}

func TestChildrenStartTimeAlive(t *testing.T) {
	child := exec.Command(sleepPath(t), "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	kids, err := Children(os.Getpid())
	if err != nil || !slices.Contains(kids, pid) {
		t.Fatalf("Children(self) = %v, %v; want it to hold %d", kids, err, pid)
	}
	if kids, err := Children(pid); err != nil || len(kids) != 0 {
		t.Errorf("Children(sleep) = %v, %v; want none", kids, err)
	}
	start, err := StartTime(pid)
	if err != nil || start == 0 {
		t.Fatalf("StartTime(child) = %d, %v", start, err)
	}
	if !Alive(pid, start) {
		t.Error("Alive(child) = false")
	}
	if Alive(pid, start+1) {
		t.Error("Alive(child, another start time) = true: a reused PID would pass")
	}
	_ = child.Process.Kill()
	_, _ = child.Process.Wait() // reaped: gone
	if Alive(pid, start) {
		t.Error("Alive(killed child) = true")
	}
	if _, err := StartTime(pid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("StartTime(reaped child) = %v, want fs.ErrNotExist", err)
	}
}

func TestKillAndWait(t *testing.T) {
	t.Run("kills what list finds", func(t *testing.T) {
		marker, cmds := startMarked(t, 2)
		list := func() ([]int, error) { return WithArgs("-address", marker) }
		// The processes stay unreaped children of the test: as zombies
		// their command line is empty, so list no longer finds them.
		if err := KillAndWait(testCtx(t), list, patience); err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Errorf("pid %d: wait = %v, want killed", c.Process.Pid, err)
			}
		}
	})
	t.Run("names survivors", func(t *testing.T) {
		survivor := 1 << 30 // no such process: SIGKILL cannot remove it from the list
		list := func() ([]int, error) { return []int{survivor}, nil }
		err := KillAndWait(testCtx(t), list, 100*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "1073741824") {
			t.Errorf("KillAndWait = %v, want an error naming pid %d", err, survivor)
		}
	})
	t.Run("list error", func(t *testing.T) {
		boom := errors.New("boom")
		if err := KillAndWait(testCtx(t), func() ([]int, error) { return nil, boom }, patience); !errors.Is(err, boom) {
			t.Errorf("KillAndWait = %v, want %v", err, boom)
		}
	})
	t.Run("nothing listed", func(t *testing.T) {
		if err := KillAndWait(testCtx(t), func() ([]int, error) { return nil, nil }, patience); err != nil {
			t.Errorf("KillAndWait = %v, want nil", err)
		}
	})
}

// TestSignal: a process is signalled only with its own start time; another
// (a reused PID), none, or a process that is gone get nothing, and
// ErrNotRunning.
func TestSignal(t *testing.T) {
	child := exec.Command(sleepPath(t), "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	start, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []uint64{start + 1, 0} {
		if err := Signal(pid, st, unix.SIGKILL); !errors.Is(err, ErrNotRunning) {
			t.Errorf("Signal(start time %d, not %d) = %v, want ErrNotRunning", st, start, err)
		}
	}
	if !Alive(pid, start) {
		t.Fatal("the child was signalled with another start time")
	}
	if err := Signal(pid, start, unix.SIGKILL); err != nil {
		t.Fatalf("Signal with its start time: %v", err)
	}
	if err := child.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("child exited with %v, want killed", err)
	}
	if err := Signal(pid, start, unix.SIGKILL); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Signal of a reaped process = %v, want ErrNotRunning", err)
	}
}
