package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// patience bounds every wait in these tests; the machine may be busy, and
// nothing asserts on it being short.
const patience = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

// newCommand returns a Command for path and args with its log and run
// directory in a fresh temporary directory.
func newCommand(t *testing.T, name, path string, args ...string) Command {
	t.Helper()
	dir := t.TempDir()
	return Command{
		Name:    name,
		Scope:   "control-plane",
		Path:    path,
		Args:    args,
		LogFile: filepath.Join(dir, "logs", "control-plane", name+".log"),
		RunDir:  filepath.Join(dir, "run", name),
	}
}

func shCommand(t *testing.T, name, script string) Command {
	t.Helper()
	return newCommand(t, name, "/bin/sh", "-c", script)
}

func sleepPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	return p
}

// start starts cmd and makes sure it is killed when the test ends.
func start(t *testing.T, cmd Command) *Process {
	t.Helper()
	p, err := Start(testCtx(t), cmd, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := p.Stop(ctx, 0); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return p
}

// logContains is a Probe that succeeds once the child's output in the log at
// path contains s. The supervisor's "--- kubernix:" lines do not count: the
// starting line quotes the command, and so s.
func logContains(path, s string) Probe {
	return func(context.Context) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(data)) {
			if !strings.HasPrefix(line, "--- kubernix:") && strings.Contains(line, s) {
				return nil
			}
		}
		return fmt.Errorf("%s does not contain %q yet", path, s)
	}
}

// waitLog waits until p's log contains s.
func waitLog(t *testing.T, p *Process, s string) {
	t.Helper()
	if err := p.WaitReady(testCtx(t), logContains(p.Command().LogFile, s), 10*time.Millisecond); err != nil {
		t.Fatalf("waiting for %q in the log: %v", s, err)
	}
}

// waitDone waits until p has exited.
func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(patience):
		t.Fatalf("pid %d did not exit within %s", p.PID(), patience)
	}
}

// logInt finds "<key>=<number>" in the file at path.
func logInt(t *testing.T, path, key string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(regexp.QuoteMeta(key) + `=(\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no %s=<n> in %s:\n%s", key, path, data)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

func readLog(t *testing.T, p *Process) string {
	t.Helper()
	data, err := os.ReadFile(p.Command().LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
