package process

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestAdopt(t *testing.T) {
	for _, tt := range []struct {
		name     string
		usePidfd bool
	}{{"pidfd", true}, {"proc polling", false}} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := shCommand(t, "containerd", `echo ready; exec sleep 1000`)
			cmd.Scope = "node-1"
			started := start(t, cmd)
			waitLog(t, started, "ready")
			pid := started.PID()
			st, err := readProcStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			started = nil // the supervisor is gone; only RunDir is left

			p, err := adopt(cmd.RunDir, tt.usePidfd)
			if err != nil {
				t.Fatalf("Adopt: %v", err)
			}
			if tt.usePidfd && p.pidfd == nil {
				t.Skip("pidfd_open is not available here; the /proc case covers adoption")
			}
			got := p.Command()
			if p.PID() != pid || got.Name != "containerd" || got.Scope != "node-1" ||
				!slices.Equal(got.Argv(), cmd.Argv()) || got.LogFile != cmd.LogFile || got.RunDir != cmd.RunDir {
				t.Errorf("adopted pid %d, Command %+v; want pid %d, %+v", p.PID(), got, pid, cmd)
			}
			if err := p.WaitReady(testCtx(t), logContains(cmd.LogFile, "ready"), 0); err != nil {
				t.Errorf("WaitReady on the adopted process: %v", err)
			}

			if err := p.Stop(testCtx(t), patience); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case <-p.Done():
			default:
				t.Fatal("Done not closed after Stop")
			}
			if p.ExitErr() != nil {
				t.Errorf("ExitErr of an adopted process = %v, want nil", p.ExitErr())
			}
			if ok, _ := matches(pid, st.startTime); ok {
				t.Errorf("pid %d still alive after Stop", pid)
			}
			if _, ok := Running(cmd.RunDir); ok {
				t.Error("Running after Stop = true")
			}
			if _, err := os.Stat(filepath.Join(cmd.RunDir, PidFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("pidfile: %v, want it removed", err)
			}
			if err := p.Stop(testCtx(t), patience); err != nil {
				t.Errorf("second Stop = %v, want nil", err)
			}
		})
	}
}

func TestAdoptExitedWhileAdopted(t *testing.T) {
	cmd := shCommand(t, "etcd", `echo ready; exec sleep 1000`)
	started := start(t, cmd)
	waitLog(t, started, "ready")
	p, err := Adopt(cmd.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else ends the process, e.g. the OOM killer.
	if err := started.Stop(testCtx(t), 0); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	err = p.WaitReady(testCtx(t), logContains(cmd.LogFile, "never printed"), 0)
	if !errors.Is(err, ErrExited) {
		t.Errorf("WaitReady = %v, want ErrExited", err)
	}
	if err := p.Stop(testCtx(t), patience); err != nil {
		t.Errorf("Stop of an exited adopted process = %v, want nil", err)
	}
}

func TestAdoptNotRunning(t *testing.T) {
	self := os.Getpid()
	selfStat, err := readProcStat(self)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, runDir string)
	}{
		{"no pidfile", func(t *testing.T, runDir string) {}},
		{"process exited", func(t *testing.T, runDir string) {
			cmd := shCommand(t, "short", `exit 0`)
			cmd.RunDir = runDir
			p, err := Start(testCtx(t), cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, p)
		}},
		{"pid reused", func(t *testing.T, runDir string) {
			// A live pid (this test) whose start time is not the recorded one.
			writeRecord(t, runDir, self, selfStat.startTime+1)
		}},
		{"pidfile and run.json disagree", func(t *testing.T, runDir string) {
			writeRecord(t, runDir, self, selfStat.startTime)
			writeFile(t, filepath.Join(runDir, PidFile), "1\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runDir := filepath.Join(t.TempDir(), "run")
			if err := os.MkdirAll(runDir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, runDir)
			p, err := Adopt(runDir)
			if !errors.Is(err, ErrNotRunning) {
				t.Fatalf("Adopt = %v, %v; want ErrNotRunning", p, err)
			}
			if _, err := os.Stat(filepath.Join(runDir, PidFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("pidfile: %v, want the stale one removed", err)
			}
			if _, ok := Running(runDir); ok {
				t.Error("Running = true")
			}
		})
	}
}
