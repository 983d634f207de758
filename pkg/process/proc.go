package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// procStat holds the fields of /proc/<pid>/stat this package needs.
type procStat struct {
	state     byte   // field 3: R, S, D, Z, X, ...
	ppid      int    // field 4: parent PID
	startTime uint64 // field 22: start time in clock ticks after boot
}

// readProcStat reads /proc/<pid>/stat (parsed by prometheus/procfs). The
// error wraps fs.ErrNotExist when there is no such process.
func readProcStat(pid int) (procStat, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procStat{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	if len(st.State) != 1 {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: state %q", pid, st.State)
	}
	return procStat{state: st.State[0], ppid: st.PPID, startTime: st.Starttime}, nil
}

// IsAncestor reports whether pid is the parent of this process, its
// parent's parent, and so on up to (not including) init; false when the
// chain cannot be read (/proc/<pid>/stat's PPID field).
func IsAncestor(pid int) bool {
	for p := os.Getppid(); p > 1; {
		if p == pid {
			return true
		}
		st, err := readProcStat(p)
		if err != nil {
			return false
		}
		p = st.ppid
	}
	return false
}

// WithArgs lists, sorted, the PIDs of the processes whose command line
// (/proc/<pid>/cmdline) holds the argument flag immediately followed by the
// argument value, e.g. WithArgs("-address", socket) for the containerd
// shims serving socket. Processes that exit or cannot be read while
// scanning are skipped; the error is that of listing /proc.
func WithArgs(flag, value string) ([]int, error) {
	return WithArgFunc(flag, func(v string) bool { return v == value })
}

// WithArgFunc is WithArgs for the processes where match accepts an
// argument that immediately follows flag, e.g. a socket under a directory.
func WithArgFunc(flag string, match func(value string) bool) ([]int, error) {
	return scan(func(p procfs.Proc) bool {
		args, err := p.CmdLine()
		return err == nil && hasArgPair(args, flag, match)
	})
}

// Children lists, sorted, the PIDs of the processes (zombies included)
// whose parent is pid (the PPID field of /proc/<pid>/stat). Processes that
// exit while scanning are skipped; the error is that of listing /proc.
func Children(pid int) ([]int, error) {
	return scan(func(p procfs.Proc) bool {
		st, err := p.Stat()
		return err == nil && st.PPID == pid
	})
}

// StartTime returns the start time of process pid in clock ticks after
// boot (field 22 of /proc/<pid>/stat), which tells it from a later process
// that reuses its PID (see Alive). The error wraps fs.ErrNotExist when
// there is no such process.
func StartTime(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	return st.startTime, err
}

// Alive reports whether pid is a live (not zombie) process that started at
// startTime (as StartTime returned), not a later one with the same PID.
func Alive(pid int, startTime uint64) bool {
	ok, _ := matches(pid, startTime)
	return ok
}

// Signal sends sig to process pid only while it is the process that
// started at startTime (as StartTime returned), not a later one that
// reuses its PID: the process is pinned by a pidfd (os.FindProcess) before
// its start time is checked, and signalled through it. A process that is
// gone or was replaced gets no signal, and the error wraps ErrNotRunning.
// startTime 0 (unknown) matches no process.
func Signal(pid int, startTime uint64, sig unix.Signal) error {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	defer proc.Release()
	if ok, reason := matches(pid, startTime); !ok || startTime == 0 {
		if startTime == 0 {
			reason = fmt.Sprintf("pid %d: no start time to check it by", pid)
		}
		return fmt.Errorf("signal %s: %w", reason, ErrNotRunning)
	}
	err = proc.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal pid %d: it has exited: %w", pid, ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return nil
}

// scan lists, sorted, the PIDs of the processes in /proc that keep accepts.
func scan(keep func(procfs.Proc) bool) ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, p := range procs {
		if keep(p) {
			pids = append(pids, p.PID)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// hasArgPair reports whether args holds flag immediately followed by an
// argument match accepts.
func hasArgPair(args []string, flag string, match func(string) bool) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && match(args[i+1]) {
			return true
		}
	}
	return false
}

// killPollInterval is how often KillAndWait lists the processes again.
const killPollInterval = 50 * time.Millisecond

// KillAndWait sends SIGKILL to the processes list returns, once, then
// calls list every 50 ms until it returns none, timeout has passed or ctx
// ends. It returns list's first error, or, when processes are still listed
// at the end, an error naming their PIDs. list is the caller's way to find
// the processes (e.g. WithArgs, cgroup.PIDs), so that one that is gone,
// or a zombie no longer listed, no longer counts as alive.
func KillAndWait(ctx context.Context, list func() ([]int, error), timeout time.Duration) error {
	pids, err := list()
	if err != nil || len(pids) == 0 {
		return err
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	// The condition never fails: the poll ends when nothing is listed,
	// or on timeout (or ctx's end), after which list has the last word.
	_ = wait.PollUntilContextTimeout(ctx, killPollInterval, timeout, true, func(context.Context) (bool, error) {
		left, _ := list()
		return len(left) == 0, nil
	})
	if left, _ := list(); len(left) > 0 {
		return fmt.Errorf("processes still alive after SIGKILL: %v", left)
	}
	return nil
}
