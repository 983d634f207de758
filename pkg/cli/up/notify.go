package up

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

// A supervisor that `kubernix up` starts (detached, or inside rootlesskit)
// reports to the kubernix that started it through a pipe or FIFO: one
// notice per line, each a JSON object with exactly one field set. Progress
// notices come first, then one final notice, ready or error; anything the
// supervisor writes after it is dropped.

// notice is one notification on the wire.
type notice struct {
	Progress *progressNotice `json:"progress,omitempty"`
	Ready    *readyNotice    `json:"ready,omitempty"`
	Error    *errorNotice    `json:"error,omitempty"`
}

// progressNotice is one line of the supervisor's progress output (a phase
// done, the final summary), without its newline.
type progressNotice struct {
	Line string `json:"line"`
}

// readyNotice says the cluster is Ready and the supervisor supervises it.
type readyNotice struct{}

// errorNotice is why the supervisor failed. Code is the exit code the
// supervisor exits with (common.ExitCode of its error), so the kubernix that
// started it can exit with the same.
type errorNotice struct {
	Message string `json:"message"`
	// Class is classInvalid when the error wraps config.ErrInvalid.
	Class string `json:"class,omitempty"`
	Code  int    `json:"code"`
}

// classInvalid marks an errorNotice for bad input: the error wraps
// config.ErrInvalid.
const classInvalid = "invalid"

// errNoNotice is returned by awaitReady when the notices end (the
// supervisor exited) before a final one.
var errNoNotice = errors.New("the supervisor stopped reporting before the cluster was ready")

// notifier writes notices to the kubernix that started this supervisor.
// A nil *notifier writes nothing. Its methods are safe for concurrent use.
type notifier struct {
	mu  sync.Mutex
	w   io.WriteCloser
	enc *json.Encoder
	// final: ready or error was sent; the reader has stopped reading.
	final bool
}

func newNotifier(w io.WriteCloser) *notifier { return &notifier{w: w, enc: json.NewEncoder(w)} }

// openNotifier opens the notices' channel the flags name: the inherited
// file descriptor --notify-fd (a detaching parent's pipe) or the FIFO
// --notify-path (the rootless parent's). It returns nil when neither is
// set. The descriptor is not inherited by the processes the supervisor
// starts, so the pipe ends when the supervisor exits.
func openNotifier(f *flags) (*notifier, error) {
	switch {
	case f.notifyFD > 0:
		unix.CloseOnExec(f.notifyFD)
		return newNotifier(os.NewFile(uintptr(f.notifyFD), "notify")), nil
	case f.notifyPath != "":
		w, err := os.OpenFile(f.notifyPath, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("open notify FIFO: %w", err)
		}
		return newNotifier(w), nil
	}
	return nil, nil
}

func (n *notifier) send(m notice, final bool) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.final {
		return nil
	}
	n.final = final
	return n.enc.Encode(m)
}

// Write sends each line of b as a progress notice, so a notifier can take
// progress output. It implements io.Writer.
func (n *notifier) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if err := n.send(notice{Progress: &progressNotice{Line: strings.TrimSuffix(line, "\n")}}, false); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// ready sends the ready notice.
func (n *notifier) ready() error { return n.send(notice{Ready: &readyNotice{}}, true) }

// fail sends err as the error notice, with its exit code and class; a nil
// err sends nothing. It is a no-op after ready.
func (n *notifier) fail(err error) {
	if err == nil {
		return
	}
	e := &errorNotice{Message: err.Error(), Code: common.ExitCode(err)}
	if errors.Is(err, config.ErrInvalid) {
		e.Class = classInvalid
	}
	_ = n.send(notice{Error: e}, true)
}

// Close closes the channel.
func (n *notifier) Close() error {
	if n == nil {
		return nil
	}
	return n.w.Close()
}

// reportedError is the error a supervisor reported in its error notice.
// It matches config.ErrInvalid (errors.Is) when the supervisor's did.
type reportedError struct{ notice errorNotice }

func (e *reportedError) Error() string { return e.notice.Message }

// Is reports whether target is config.ErrInvalid and the supervisor's
// error was of that class.
func (e *reportedError) Is(target error) bool {
	return target == config.ErrInvalid && e.notice.Class == classInvalid
}

// err is the error that the kubernix that started the supervisor returns:
// the supervisor's message and class, exiting with its code (at least 1).
func (e errorNotice) err() error {
	code := max(e.Code, 1)
	return &common.ExitError{Code: code, Err: &reportedError{notice: e}}
}

// awaitReady reads notices from r, printing progress lines to progress
// (nil: nowhere), until the supervisor reports ready (nil) or an error (see
// errorNotice.err). It returns errNoNotice when r ends first, and an error
// when r holds something other than notices.
func awaitReady(r io.Reader, progress io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m notice
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return errNoNotice
		} else if err != nil {
			return fmt.Errorf("read the supervisor's notices: %w", err)
		}
		switch {
		case m.Progress != nil:
			if progress != nil {
				common.Fprintf(progress, "%s\n", m.Progress.Line)
			}
		case m.Ready != nil:
			return nil
		case m.Error != nil:
			return m.Error.err()
		}
	}
}

// started is a process this kubernix started to run the supervisor: the
// supervisor itself (detach) or rootlesskit running it.
type started struct {
	cmd  *exec.Cmd
	name string // for messages: "supervisor", "rootlesskit"
	done chan struct{}
	// err is how it exited, set once done is closed.
	err error
}

// start starts cmd and waits for it in the background (started.done).
func start(cmd *exec.Cmd, name string) (*started, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &started{cmd: cmd, name: name, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// waitReady relays the supervisor's notices from r to progress (see
// awaitReady) until it reports ready (nil) or fails; r must end when the
// process exits. A failing supervisor removes what it started, then
// exits: its error is returned once the process has exited, as is
// errNoNotice when the notices end without a final one. A process whose
// notices cannot be read is stopped (SIGTERM) first. Interrupted (ctx
// done), it asks the process to stop (SIGTERM): the supervisor aborts and
// reports that.
func (s *started) waitReady(ctx context.Context, env *common.Env, r io.Reader, progress io.Writer) error {
	stop := context.AfterFunc(ctx, func() {
		common.Fprintf(env.Streams.Err, "interrupted: stopping the %s (pid %d), which removes what it started\n", s.name, s.cmd.Process.Pid)
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	})
	defer stop()
	err := awaitReady(r, progress)
	if err != nil {
		var reported *reportedError
		if !errors.As(err, &reported) && !errors.Is(err, errNoNotice) {
			_ = s.cmd.Process.Signal(syscall.SIGTERM) // it cannot report: stop it
		}
		<-s.done
	}
	return err
}

// withLogTail adds the last lines of the log at logPath to err.
func withLogTail(err error, logPath string) error {
	tail, _ := process.Tail(logPath, 20)
	if len(tail) == 0 {
		return err
	}
	return fmt.Errorf("%w; last lines of %s:\n%s", err, logPath, strings.Join(tail, "\n"))
}
