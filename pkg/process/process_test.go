package process

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestArgv(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
		want []string
	}{
		{"plain", Command{Path: "/bin/etcd", Args: []string{"--name", "x"}}, []string{"/bin/etcd", "--name", "x"}},
		{"no args", Command{Path: "/bin/etcd"}, []string{"/bin/etcd"}},
		{
			"wrapper",
			Command{Path: "/bin/kubelet", Args: []string{"-v=2"}, Wrapper: []string{"nsenter", "--target", "123", "--net", "--"}},
			[]string{"nsenter", "--target", "123", "--net", "--", "/bin/kubelet", "-v=2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cmd.Argv(); !slices.Equal(got, tt.want) {
				t.Errorf("Argv() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"/bin/sh", "-c", "echo it's", "", "--a=b,c"})
	want := `/bin/sh -c 'echo it'\''s' '' --a=b,c`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

func TestStart(t *testing.T) {
	cmd := shCommand(t, "kube-apiserver", `echo hello from child; echo to stderr >&2; echo ready; exec sleep 1000`)
	p := start(t, cmd)
	waitLog(t, p, "ready")

	pid := p.PID()
	data, err := os.ReadFile(filepath.Join(cmd.RunDir, PidFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != strconv.Itoa(pid)+"\n" {
		t.Errorf("pidfile = %q, want %d", got, pid)
	}

	info, err := ReadRun(cmd.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Argv, []string{"/bin/sh", "-c", cmd.Args[1]}) {
		t.Errorf("run.json argv = %q", info.Argv)
	}
	if info.Name != "kube-apiserver" || info.Scope != "control-plane" || info.PID != pid ||
		info.StartTime != st.startTime || info.Dir != cmd.RunDir || info.LogFile != cmd.LogFile ||
		!slices.Equal(info.Env, RedactEnv(Environ(os.Environ()))) || info.StartedAt.IsZero() {
		t.Errorf("run.json = %+v, want pid %d, start time %d, dir %s", info, pid, st.startTime, cmd.RunDir)
	}

	log := readLog(t, p)
	header := "--- kubernix: starting /bin/sh -c 'echo hello from child; echo to stderr >&2; echo ready; exec sleep 1000' at "
	if !strings.HasPrefix(log, header) {
		t.Errorf("log does not start with %q:\n%s", header, log)
	}
	for _, want := range []string{"hello from child\n", "to stderr\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	if pgid, err := unix.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("process group = %d, %v; want its own, %d", pgid, err, pid)
	}
	if got, ok := Running(cmd.RunDir); !ok || got != pid {
		t.Errorf("Running = %d, %v; want %d, true", got, ok, pid)
	}
	if got := p.ExitErr(); got != nil {
		t.Errorf("ExitErr while running = %v", got)
	}

	if err := p.Stop(testCtx(t), patience); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertSignaled(t, p, unix.SIGTERM)
	if _, err := os.Stat(filepath.Join(cmd.RunDir, PidFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pidfile after Stop: %v, want it removed", err)
	}
	if _, err := ReadRun(cmd.RunDir); err != nil {
		t.Errorf("run.json after Stop: %v, want it kept", err)
	}
	if _, ok := Running(cmd.RunDir); ok {
		t.Error("Running after Stop = true")
	}
	if log := readLog(t, p); !strings.Contains(log, "--- kubernix: kube-apiserver exited (signal: terminated)") {
		t.Errorf("log lacks the exit line:\n%s", log)
	}
}

func assertSignaled(t *testing.T, p *Process, sig syscall.Signal) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(p.ExitErr(), &ee) {
		t.Fatalf("ExitErr = %v, want an *exec.ExitError", p.ExitErr())
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != sig {
		t.Errorf("process ended with %v, want signal %v", ee, sig)
	}
}

// TestStartEnvAndDir checks the environment a process gets and run.json
// records: without Command.Env the defined one (Environ), so a variable
// of the caller's shell such as ETCD_NAME does not reach it while a proxy
// does, recorded with its password redacted; with Command.Env exactly
// that.
func TestStartEnvAndDir(t *testing.T) {
	t.Setenv("ETCD_NAME", "from-the-shell")
	t.Setenv("HTTPS_PROXY", "http://user:secret@127.0.0.1:3128")
	script := `echo "etcd=${ETCD_NAME-unset} proxy=${HTTPS_PROXY-unset} add=${KUBERNIX_TEST_ADD-unset} pwd=$(pwd)"`
	tests := []struct {
		name    string
		env     []string
		want    string
		wantRec []string
	}{
		{"defined environment", nil, "etcd=unset proxy=http://user:secret@127.0.0.1:3128 add=unset",
			RedactEnv(Environ(os.Environ()))},
		{"Command.Env as it is", []string{"KUBERNIX_TEST_ADD=42"}, "etcd=unset proxy=unset add=42",
			[]string{"KUBERNIX_TEST_ADD=42"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := shCommand(t, "env", script)
			cmd.Env = tt.env
			cmd.Dir = t.TempDir()
			p := start(t, cmd)
			waitDone(t, p)
			if err := p.ExitErr(); err != nil {
				t.Fatalf("ExitErr = %v", err)
			}
			if want := tt.want + " pwd=" + cmd.Dir + "\n"; !strings.Contains(readLog(t, p), want) {
				t.Errorf("log lacks %q:\n%s", want, readLog(t, p))
			}
			info, err := ReadRun(cmd.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(info.Env, tt.wantRec) {
				t.Errorf("run.json env = %q, want %q", info.Env, tt.wantRec)
			}
			if b, _ := os.ReadFile(filepath.Join(cmd.RunDir, RunFile)); strings.Contains(string(b), "secret") {
				t.Errorf("run.json holds the proxy's password:\n%s", b)
			}
			if info.Dir != cmd.Dir {
				t.Errorf("run.json dir = %q, want %q", info.Dir, cmd.Dir)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	t.Run("invalid command", func(t *testing.T) {
		_, err := Start(testCtx(t), Command{Path: "sh"}, nil)
		if err == nil {
			t.Fatal("Start succeeded")
		}
		for _, want := range []string{"missing Name", `path "sh" is not absolute`, "missing RunDir", "missing LogFile"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		cmd := newCommand(t, "ghost", "/nonexistent/ghost", "--flag")
		_, err := Start(testCtx(t), cmd, nil)
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/ghost --flag") {
			t.Fatalf("Start = %v, want an error naming the command line", err)
		}
		if _, err := os.Stat(filepath.Join(cmd.RunDir, PidFile)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pidfile: %v, want none", err)
		}
		data, _ := os.ReadFile(cmd.LogFile)
		if !strings.Contains(string(data), "--- kubernix: start failed:") {
			t.Errorf("log lacks the failure:\n%s", data)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Start(ctx, newCommand(t, "x", sleepPath(t), "1000"), nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start = %v, want context.Canceled", err)
		}
	})
}

func TestStartAlreadyRunning(t *testing.T) {
	cmd := newCommand(t, "etcd", sleepPath(t), "1000")
	p := start(t, cmd)

	_, err := Start(testCtx(t), cmd, nil)
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Start = %v, want ErrAlreadyRunning", err)
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(p.PID())) {
		t.Errorf("error does not name pid %d: %v", p.PID(), err)
	}
	if pid, ok := Running(cmd.RunDir); !ok || pid != p.PID() {
		t.Errorf("Running = %d, %v; want the first process, %d", pid, ok, p.PID())
	}
}

func TestStartReplacesStale(t *testing.T) {
	self := os.Getpid()
	selfStat, err := readProcStat(self)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stale func(t *testing.T, cmd Command)
	}{
		{"exited process", func(t *testing.T, cmd Command) {
			exited := cmd
			exited.Path, exited.Args = "/bin/sh", []string{"-c", "exit 0"}
			p, err := Start(testCtx(t), exited, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, p)
		}},
		{"reused pid", func(t *testing.T, cmd Command) {
			writeRecord(t, cmd.RunDir, self, selfStat.startTime+1)
		}},
		{"garbage pidfile", func(t *testing.T, cmd Command) {
			writeFile(t, filepath.Join(cmd.RunDir, PidFile), "not a pid\n")
		}},
		{"pidfile without run.json", func(t *testing.T, cmd Command) {
			writeFile(t, filepath.Join(cmd.RunDir, PidFile), strconv.Itoa(self)+"\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newCommand(t, "etcd", sleepPath(t), "1000")
			if err := os.MkdirAll(cmd.RunDir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.stale(t, cmd)
			if _, ok := Running(cmd.RunDir); ok {
				t.Fatal("Running = true for a stale record")
			}
			p := start(t, cmd)
			if pid, ok := Running(cmd.RunDir); !ok || pid != p.PID() {
				t.Errorf("Running = %d, %v; want the new process, %d", pid, ok, p.PID())
			}
		})
	}
}

// writeRecord writes a pidfile and a run.json for pid with the given start time.
func writeRecord(t *testing.T, runDir string, pid int, startTime uint64) {
	t.Helper()
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	info := RunInfo{Name: "fake", Argv: []string{"/bin/false"}, PID: pid, StartTime: startTime, StartedAt: time.Now()}
	if err := writeRun(runDir, info); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		grace   time.Duration
		wantSig syscall.Signal
		wantLog string
		// stopped: the process is SIGSTOPped (hung) before Stop.
		stopped bool
	}{
		{
			name:    "SIGTERM",
			script:  `echo ready; exec sleep 1000`,
			grace:   patience,
			wantSig: unix.SIGTERM,
		},
		{
			// SIGCONT with SIGTERM: no waiting the grace period for SIGKILL.
			name:    "a stopped process acts on SIGTERM",
			script:  `echo ready; exec sleep 1000`,
			grace:   2 * patience,
			wantSig: unix.SIGTERM,
			stopped: true,
		},
		{
			// Like kube-apiserver without etcd: the first SIGTERM is not enough.
			name:    "second SIGTERM at half the grace period",
			script:  `trap 'echo first TERM; trap - TERM' TERM; echo ready; while :; do sleep 1 & wait $!; done`,
			grace:   2 * time.Second,
			wantSig: unix.SIGTERM,
			wantLog: "first TERM",
		},
		{
			name:    "SIGKILL after the grace period",
			script:  `trap '' TERM; echo ready; exec sleep 1000`,
			grace:   500 * time.Millisecond,
			wantSig: unix.SIGKILL,
		},
		{
			name:    "no grace period",
			script:  `echo ready; exec sleep 1000`,
			grace:   0,
			wantSig: unix.SIGKILL,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, shCommand(t, "stopper", tt.script))
			waitLog(t, p, "ready")
			if tt.stopped {
				if err := unix.Kill(p.PID(), unix.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Stop(testCtx(t), tt.grace); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case <-p.Done():
			default:
				t.Fatal("Done not closed after Stop")
			}
			assertSignaled(t, p, tt.wantSig)
			if tt.wantLog != "" && !strings.Contains(readLog(t, p), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, readLog(t, p))
			}
			if err := p.Stop(testCtx(t), tt.grace); err != nil {
				t.Errorf("second Stop = %v, want nil", err)
			}
		})
	}
}

func TestStopExited(t *testing.T) {
	cmd := shCommand(t, "short", `exit 0`)
	p := start(t, cmd)
	waitDone(t, p)
	if err := p.ExitErr(); err != nil {
		t.Errorf("ExitErr = %v, want nil for exit 0", err)
	}
	if err := p.Stop(testCtx(t), patience); err != nil {
		t.Errorf("Stop of an exited process = %v, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(cmd.RunDir, PidFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pidfile: %v, want it removed", err)
	}
}

func TestStopCancelled(t *testing.T) {
	p := start(t, shCommand(t, "stubborn", `trap '' TERM; echo ready; exec sleep 1000`))
	waitLog(t, p, "ready")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := p.Stop(ctx, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want context.DeadlineExceeded", err)
	}
	waitDone(t, p) // SIGKILL was sent on the way out
	assertSignaled(t, p, unix.SIGKILL)
}

func TestStopGroup(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run("StopGroup="+strconv.FormatBool(group), func(t *testing.T) {
			cmd := shCommand(t, "leader", `sleep 1000 & echo child=$!; wait`)
			cmd.StopGroup = group
			p := start(t, cmd)
			waitLog(t, p, "child=")
			child := logInt(t, cmd.LogFile, "child")
			st, err := readProcStat(child)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if ok, _ := matches(child, st.startTime); ok {
					_ = unix.Kill(child, unix.SIGKILL)
				}
			})

			if err := p.Stop(testCtx(t), patience); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if !group {
				if ok, why := matches(child, st.startTime); !ok {
					t.Errorf("the leader's child is gone (%s); only the leader should be signalled", why)
				}
				return
			}
			// The child is reaped by whoever inherited it, so wait for that.
			err = wait.PollUntilContextCancel(testCtx(t), 10*time.Millisecond, true, func(context.Context) (bool, error) {
				ok, _ := matches(child, st.startTime)
				return !ok, nil
			})
			if err != nil {
				t.Errorf("the leader's child survived Stop with StopGroup: %v", err)
			}
		})
	}
}

func TestWrapper(t *testing.T) {
	for _, wrapper := range []string{"/usr/bin/env", "env"} {
		t.Run(wrapper, func(t *testing.T) {
			cmd := shCommand(t, "kubelet", `echo pid=$$; exec sleep 1000`)
			cmd.Wrapper = []string{wrapper}
			p := start(t, cmd)
			waitLog(t, p, "pid=")
			if got := logInt(t, cmd.LogFile, "pid"); got != p.PID() {
				t.Errorf("the wrapped shell has pid %d, Process.PID() = %d", got, p.PID())
			}
			info, err := ReadRun(cmd.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{wrapper, "/bin/sh", "-c", cmd.Args[1]}; !slices.Equal(info.Argv, want) {
				t.Errorf("run.json argv = %q, want %q", info.Argv, want)
			}
			a, err := Adopt(cmd.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Command(); !slices.Equal(got.Argv(), cmd.Argv()) || got.Path != cmd.Path {
				t.Errorf("adopted Command = %+v, want argv %q", got, cmd.Argv())
			}
		})
	}
}

// TestOpenLog checks that a log is its owner's alone, new or left by an
// older kubernix readable by everyone, and that opening appends.
func TestOpenLog(t *testing.T) {
	tests := []struct {
		name    string
		existed string // content of a log already there, mode 0644; "" for none
	}{
		{name: "new"},
		{name: "left readable by an older kubernix", existed: "old line\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "logs", "scope", "c.log")
			if tt.existed != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.existed), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, err := OpenLog(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("new line\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
			}
			if tt.existed == "" {
				di, err := os.Stat(filepath.Dir(path))
				if err != nil {
					t.Fatal(err)
				}
				if di.Mode().Perm() != 0o700 {
					t.Errorf("new log dir mode %v, want 0700", di.Mode().Perm())
				}
			}
			if b, _ := os.ReadFile(path); string(b) != tt.existed+"new line\n" {
				t.Errorf("log holds %q", b)
			}
		})
	}
}
