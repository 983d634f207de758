package process

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRotateAtStart: Start rotates a log over the cap before the process
// writes to it, keeping LogBackups older logs, and leaves one under the cap.
func TestRotateAtStart(t *testing.T) {
	tests := []struct {
		name string
		// before are the contents of the log and its backups (index 0 the
		// log, n the n-th backup) before Start; "" for none.
		before []string
		// want are the contents expected after Start: the log's own
		// starting with what it had ("" for a fresh log), then the backups.
		want []string
	}{
		{"under the cap: appended", []string{"0123456789"}, []string{"0123456789", ""}},
		{"over the cap: rotated", []string{"0123456789abcdef"}, []string{"", "0123456789abcdef"}},
		{
			"over the cap with backups: shifted, the oldest dropped",
			[]string{"0123456789abcdef", "first backup", "second backup"},
			[]string{"", "0123456789abcdef", "first backup"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := shCommand(t, "writer", "echo from-the-child")
			cmd.LogMaxBytes, cmd.LogBackups = 12, 2
			if err := os.MkdirAll(filepath.Dir(cmd.LogFile), 0o755); err != nil {
				t.Fatal(err)
			}
			for i, c := range tt.before {
				if c == "" {
					continue
				}
				path := cmd.LogFile
				if i > 0 {
					path = BackupLog(cmd.LogFile, i)
				}
				if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := start(t, cmd)
			waitDone(t, p)
			log := readLog(t, p)
			if !strings.HasPrefix(log, tt.want[0]) || !strings.Contains(log, "from-the-child") {
				t.Errorf("log = %q, want it to start with %q and hold the child's output", log, tt.want[0])
			}
			for n := 1; n < len(tt.want); n++ {
				b, err := os.ReadFile(BackupLog(cmd.LogFile, n))
				if tt.want[n] == "" {
					if err == nil {
						t.Errorf("backup %d exists: %q", n, b)
					}
					continue
				}
				if string(b) != tt.want[n] {
					t.Errorf("backup %d = %q (%v), want %q", n, b, err, tt.want[n])
				}
			}
			if _, err := os.Stat(BackupLog(cmd.LogFile, 3)); err == nil {
				t.Error("a third backup is kept; LogBackups is 2")
			}
		})
	}
}

// TestCapLogRunning: CapLog copies a running process's oversized log to
// its backup and truncates it in place; the process, which writes to its
// own descriptor, goes on writing at the start of the file, not at its
// old offset (which would leave a hole of zero bytes).
func TestCapLogRunning(t *testing.T) {
	cmd := shCommand(t, "chatty", `i=0; while :; do i=$((i+1)); echo "line $i"; sleep 0.01; done`)
	cmd.LogMaxBytes = 200
	p := start(t, cmd)
	waitLog(t, p, "line 30")
	rotated, err := p.CapLog()
	if err != nil || !rotated {
		t.Fatalf("CapLog = %v, %v; want a rotation of a %d-byte cap", rotated, err, cmd.LogMaxBytes)
	}
	backup, err := os.ReadFile(BackupLog(cmd.LogFile, 1))
	if err != nil || !strings.Contains(string(backup), "line 30") {
		t.Fatalf("backup holds %q (%v), want the lines up to the rotation", backup, err)
	}
	waitLog(t, p, "line 40") // written after the rotation: only in the log
	log := readLog(t, p)
	if bytes.IndexByte([]byte(log), 0) >= 0 {
		t.Errorf("the log has zero bytes: the child wrote at its old offset:\n%q", log)
	}
	if strings.Contains(log, "line 1\n") {
		t.Errorf("the log still holds the lines before the rotation:\n%s", log)
	}
}
