package process

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Defaults of a component log's size cap (Command.LogMaxBytes, LogBackups).
const (
	// DefaultLogMaxBytes is the size, in bytes, past which a log is rotated.
	DefaultLogMaxBytes = 10 << 20
	// DefaultLogBackups is how many rotated logs are kept beside the log.
	DefaultLogBackups = 2
)

func (c Command) logMaxBytes() int64 {
	if c.LogMaxBytes > 0 {
		return c.LogMaxBytes
	}
	return DefaultLogMaxBytes
}

func (c Command) logBackups() int {
	if c.LogBackups > 0 {
		return c.LogBackups
	}
	return DefaultLogBackups
}

// BackupLog is the name of the n-th rotated copy of the log at path (n >= 1,
// 1 the newest): "<path>.<n>".
func BackupLog(path string, n int) string { return fmt.Sprintf("%s.%d", path, n) }

// rotateOversized renames cmd's log to its first backup, shifting the older
// ones, when it is larger than cmd.LogMaxBytes. Start calls it before the
// process opens the log, so nothing writes to the file being renamed.
func rotateOversized(cmd Command) (bool, error) {
	st, err := os.Stat(cmd.LogFile)
	if err != nil || st.Size() <= cmd.logMaxBytes() {
		return false, nil
	}
	if err := shiftBackups(cmd.LogFile, cmd.logBackups()); err != nil {
		return false, err
	}
	return true, os.Rename(cmd.LogFile, BackupLog(cmd.LogFile, 1))
}

// CapLog rotates the log of a running process when it is larger than
// Command.LogMaxBytes: the process writes to its own descriptor of the
// file (it outlives the supervisor), so the log is copied to its first
// backup and then truncated in place (logrotate's copytruncate); the
// process opened it with O_APPEND, so it goes on writing at the new end.
// Lines written between the copy and the truncation, a window of
// microseconds, are lost. It reports whether it rotated; errors name the
// file.
func (p *Process) CapLog() (bool, error) {
	path := p.cmd.LogFile
	st, err := os.Stat(path)
	if err != nil || st.Size() <= p.cmd.logMaxBytes() {
		return false, nil
	}
	if err := shiftBackups(path, p.cmd.logBackups()); err != nil {
		return false, err
	}
	if err := copyFile(path, BackupLog(path, 1), st.Mode().Perm()); err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	if err := os.Truncate(path, 0); err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	return true, nil
}

// shiftBackups renames <path>.<n> to <path>.<n+1> for n from backups-1
// down to 1, dropping the oldest; missing backups are skipped.
func shiftBackups(path string, backups int) error {
	for n := backups - 1; n >= 1; n-- {
		err := os.Rename(BackupLog(path, n), BackupLog(path, n+1))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", path, err)
		}
	}
	return nil
}

// copyFile copies src to dst, created or truncated with mode perm.
func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
