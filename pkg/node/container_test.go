package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestHolderReady(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	sleep, _ = filepath.EvalSymlinks(sleep)
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	runDir := t.TempDir()
	ready := filepath.Join(runDir, "ready")
	other, _ := os.Executable() // the test binary: not what the holder runs

	tests := []struct {
		name    string
		written bool
		pause   string
		wantErr string
	}{
		{"no ready file", false, "", "not set up yet"},
		{"ready, no pause", true, "", ""},
		{"ready, running pause", true, sleep, ""},
		{"ready, pause not exec'd yet", true, other, "has not exec'd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(ready)
			if tt.written {
				if err := os.WriteFile(ready, []byte("ready\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := &Container{RunDir: runDir, Pause: tt.pause}
			err := c.HolderReady(pid)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("HolderReady = %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("HolderReady = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
