package process

import (
	"fmt"
	"os"
	"time"
)

// RecordSelf writes a pidfile and run.json for the calling process into
// runDir, as Start does for its children, so Running and Adopt recognise it
// (the supervisor records itself this way). It errors wrapping
// ErrAlreadyRunning when another live process is recorded there.
func RecordSelf(runDir, name, scope string) error {
	if pid, ok := Running(runDir); ok && pid != os.Getpid() {
		return fmt.Errorf("%w: %s (pid %d)", ErrAlreadyRunning, name, pid)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
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
