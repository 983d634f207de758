package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPauseExitsOnSignal builds the pause program as it is shipped, starts
// it, and checks that SIGTERM and SIGINT make it exit 0.
func TestPauseExitsOnSignal(t *testing.T) {
	bin := buildPause(t)
	tests := []struct {
		name string
		sig  syscall.Signal
	}{
		{"SIGTERM", syscall.SIGTERM},
		{"SIGINT", syscall.SIGINT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd, exited := startPause(ctx, t, bin, 0)
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("pause after %s: %v, want exit 0", tt.name, err)
				}
			case <-ctx.Done():
				t.Fatalf("pause did not exit after %s: %v", tt.name, ctx.Err())
			}
		})
	}
}

// TestPauseReapsOrphans runs pause as PID 1 of a new PID namespace, as in a
// pod sandbox, orphans a process into it, kills that process, and checks
// that pause reaps the zombie. It needs root, nsenter and sh.
func TestPauseReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a PID namespace")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skipf("needs nsenter (util-linux) to enter the PID namespace: %v", err)
	}
	bin := buildPause(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, exited := startPause(ctx, t, bin, syscall.CLONE_NEWPID)
	pid := cmd.Process.Pid

	// sh starts sleep in the background and exits; sleep is orphaned and
	// reparented to the namespace's init, pause. sleep must not hold on to
	// the output pipe, or CombinedOutput waits for it.
	orphan := exec.CommandContext(ctx, nsenter, "--target", strconv.Itoa(pid), "--pid", "--",
		"sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & exit 0")
	if out, err := orphan.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", orphan, err, out)
	}
	var child int
	err = poll(ctx, exited, func() (bool, error) {
		children, err := childrenOf(pid)
		if len(children) > 0 {
			child = children[0]
		}
		return child != 0, err
	})
	if err != nil {
		t.Fatalf("waiting for the orphan to become a child of pause: %v", err)
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// An unreaped zombie stays in /proc; a reaped child is gone.
	err = poll(ctx, exited, func() (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", child))
		return errors.Is(err, fs.ErrNotExist), nil
	})
	if err != nil {
		state := "gone"
		if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", child)); err == nil {
			for line := range strings.Lines(string(status)) {
				if s, ok := strings.CutPrefix(line, "State:"); ok {
					state = strings.TrimSpace(s)
				}
			}
		}
		t.Fatalf("waiting for pause to reap its killed child %d (state %s): %v", child, state, err)
	}
}

// buildPause builds the pause program into a temporary directory the way it
// is shipped, and returns its path. It skips the test without go on PATH.
func buildPause(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go on PATH to build the pause program: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.Command(goBin, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	return bin
}

// startPause starts bin with the given clone flags and waits until it
// handles signals. The returned channel yields the result of cmd.Wait.
//
// The pause program may be signalled only once it has called signal.Notify;
// before that, SIGTERM kills it. Starting it with SIGINT ignored makes that
// moment visible: the Go runtime leaves an inherited SIG_IGN for SIGINT alone
// until Notify installs a handler, which /proc/PID/status shows in SigCgt.
// Notify lists SIGTERM first, so it is handled by then too.
func startPause(ctx context.Context, t *testing.T, bin string, cloneflags uintptr) (*exec.Cmd, <-chan error) {
	t.Helper()
	signal.Ignore(syscall.SIGINT) // inherited by the child
	defer signal.Reset(syscall.SIGINT)
	cmd := exec.CommandContext(ctx, bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: cloneflags}
	if err := cmd.Start(); err != nil {
		if cloneflags != 0 && errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot create namespaces here: %v", err)
		}
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	err := poll(ctx, exited, func() (bool, error) { return catches(cmd.Process.Pid, syscall.SIGINT) })
	if err != nil {
		t.Fatalf("waiting for pause to handle signals: %v", err)
	}
	return cmd, exited
}

// poll calls done every millisecond until it returns true or an error. It
// fails if pause exits first or ctx ends.
func poll(ctx context.Context, exited <-chan error, done func() (bool, error)) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case err := <-exited:
			return fmt.Errorf("pause exited early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// childrenOf returns the PIDs of the processes whose parent is pid.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var children []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue // gone meanwhile
		}
		for line := range strings.Lines(string(status)) {
			if ppid, ok := strings.CutPrefix(line, "PPid:"); ok && strings.TrimSpace(ppid) == strconv.Itoa(pid) {
				children = append(children, p)
			}
		}
	}
	return children, nil
}

// catches reports whether process pid has a handler for sig, from the SigCgt
// mask in /proc/PID/status.
func catches(pid int, sig syscall.Signal) (bool, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, err
	}
	for line := range strings.Lines(string(status)) {
		mask, ok := strings.CutPrefix(line, "SigCgt:")
		if !ok {
			continue
		}
		bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
		if err != nil {
			return false, fmt.Errorf("parse SigCgt %q: %w", mask, err)
		}
		return bits&(1<<(uint(sig)-1)) != 0, nil
	}
	return false, errors.New("no SigCgt in /proc/PID/status")
}
