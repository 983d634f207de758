package process

import (
	"fmt"
	"os"
	"time"

	"github.com/kubernix/kubernix/pkg/config"
)

// RecordSelf writes a pidfile and run.json for the calling process into
// runDir, as Start does for its children, so Running and Adopt recognise it
// (the supervisor records itself this way). It errors wrapping
// ErrAlreadyRunning when another live process is recorded there.
func RecordSelf(runDir, name, scope string) error {
	if pid, ok := Running(runDir); ok && pid != os.Getpid() {
		return fmt.Errorf("%w: %s (pid %d)", ErrAlreadyRunning, name, pid)
	}
	if err := os.MkdirAll(runDir, config.StateDirMode); err != nil {
		return err
	}
	st, err := readProcStat(os.Getpid())
	if err != nil {
		return err
	}
	exe, _ := os.Executable()
	dir, _ := os.Getwd()
	info := RunInfo{
		Name: name, Scope: scope, Argv: append([]string{exe}, os.Args[1:]...), Dir: dir,
		PID: os.Getpid(), StartTime: st.startTime, StartedAt: time.Now(),
	}
	return writeRun(runDir, info)
}

// Record writes a pidfile and run.json for a live process the caller
// started itself by other means (os/exec), e.g. rootlesskit, so Running,
// Adopt and Stop find it like a component. argv is its command line and
// logFile where its output goes ("" if nowhere).
func Record(runDir, name, scope string, pid int, argv []string, logFile string) error {
	if err := os.MkdirAll(runDir, config.StateDirMode); err != nil {
		return err
	}
	st, err := readProcStat(pid)
	if err != nil {
		return fmt.Errorf("record %s (pid %d): %w", name, pid, err)
	}
	dir, _ := os.Getwd()
	info := RunInfo{
		Name: name, Scope: scope, Argv: argv, Dir: dir, LogFile: logFile,
		PID: pid, StartTime: st.startTime, StartedAt: time.Now(),
	}
	return writeRun(runDir, info)
}
