package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/config"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// File names inside a Command's RunDir.
const (
	PidFile = "pid"
	RunFile = "run.json"
)

// RunInfo is the content of <RunDir>/run.json: what Start ran, and how to
// recognise that process again.
type RunInfo struct {
	// Name and Scope are the Command's: component and node (or "control-plane").
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// Argv is the exact argument vector, Wrapper included (Command.Argv).
	Argv []string `json:"argv"`
	// Wrapper is the Command's Wrapper, a prefix of Argv.
	Wrapper []string `json:"wrapper,omitempty"`
	// Env is the process's whole environment, KEY=VALUE entries
	// (Command.Env, or Environ's), with URL passwords redacted
	// (RedactEnv); nil in a record of an older kubernix.
	Env []string `json:"env,omitempty"`
	// Dir is the effective working directory.
	Dir string `json:"dir"`
	// LogFile is the file receiving stdout and stderr.
	LogFile string `json:"log_file"`
	// StopGroup is the Command's: Stop signals the whole process group.
	StopGroup bool `json:"stop_group,omitempty"`
	// PID is the process ID, also in the pidfile.
	PID int `json:"pid"`
	// StartTime is the process start time in clock ticks after boot
	// (field 22 of /proc/<pid>/stat); a different value for the same PID
	// means the PID was reused by another process.
	StartTime uint64 `json:"start_time"`
	// StartedAt is the wall-clock start time, serialised as RFC 3339 with
	// nanoseconds.
	StartedAt time.Time `json:"started_at"`
}

// ReadRun reads <runDir>/run.json. The error wraps fs.ErrNotExist when the
// file is missing, and describes the problem when it is not valid JSON.
func ReadRun(runDir string) (RunInfo, error) {
	var info RunInfo
	data, err := os.ReadFile(filepath.Join(runDir, RunFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("parse %s: %w", filepath.Join(runDir, RunFile), err)
	}
	return info, nil
}

// Running reports the pid recorded in runDir and whether that process is
// alive and is the one that was recorded (its start time matches run.json).
// pid is 0 when ok is false. Running only reads.
func Running(runDir string) (pid int, ok bool) {
	rec := inspect(runDir)
	if !rec.live {
		return 0, false
	}
	return rec.pid, true
}

// record is what inspect found in a run directory.
type record struct {
	info    RunInfo
	pid     int    // from the pidfile; 0 if missing or unreadable
	pidfile bool   // the pidfile exists
	live    bool   // the recorded process is alive and has the recorded start time
	reason  string // why not live, when pidfile is true
}

// inspect reads the pidfile and run.json of runDir and checks the process.
func inspect(runDir string) record {
	var rec record
	pid, err := readPidfile(runDir)
	if errors.Is(err, fs.ErrNotExist) {
		return rec
	}
	rec.pidfile, rec.pid = true, pid
	if err != nil {
		rec.reason = err.Error()
		return rec
	}
	info, err := ReadRun(runDir)
	switch {
	case err != nil:
		rec.reason = err.Error()
	case info.PID != pid:
		rec.reason = fmt.Sprintf("pidfile says %d, %s says %d", pid, RunFile, info.PID)
	default:
		rec.info = info
		rec.live, rec.reason = matches(pid, info.StartTime)
	}
	return rec
}

// matches reports whether pid is a live (not zombie) process started at
// startTime, and if not, why.
func matches(pid int, startTime uint64) (bool, string) {
	st, err := readProcStat(pid)
	switch {
	case err != nil:
		return false, fmt.Sprintf("pid %d: %v", pid, err)
	case st.state == 'Z' || st.state == 'X':
		return false, fmt.Sprintf("pid %d has exited", pid)
	case st.startTime != startTime:
		return false, fmt.Sprintf("pid %d was reused (start time %d, recorded %d)", pid, st.startTime, startTime)
	}
	return true, ""
}

func pidPath(runDir string) string { return filepath.Join(runDir, PidFile) }

func readPidfile(runDir string) (int, error) {
	data, err := os.ReadFile(pidPath(runDir))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pidfile %s: not a pid: %q", pidPath(runDir), bytes.TrimSpace(data))
	}
	return pid, nil
}

// writeRun writes run.json and then the pidfile, each atomically, so a
// pidfile always has its run.json.
func writeRun(runDir string, info RunInfo) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(runDir, RunFile), append(data, '\n')); err != nil {
		return err
	}
	return writeFileAtomic(pidPath(runDir), []byte(strconv.Itoa(info.PID)+"\n"))
}

// writeFileAtomic replaces path by a file with data and mode
// config.StateFileMode, so readers see the old or the new content, never
// a part.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, config.StateFileMode)
}

// removeFile removes path; a missing file is not an error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
