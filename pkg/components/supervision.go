package components

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/config"
)

// State is a supervised component's state as `kubernix status` shows it.
type State string

// The states of a supervised component.
const (
	// StateStarting: the first start has not finished.
	StateStarting State = "starting"
	// StateRunning: the process runs and its last liveness check passed.
	StateRunning State = "running"
	// StateUnhealthy: the process runs but its liveness checks fail,
	// fewer times in a row than the threshold that restarts it.
	StateUnhealthy State = "unhealthy"
	// StateRestarting: it failed once (exited, hung, or a restart
	// failed) and is being restarted.
	StateRestarting State = "restarting"
	// StateCrashLooping: it failed at least twice in a row, without
	// running stable in between, and is being restarted with backoff.
	StateCrashLooping State = "crash-looping"
	// StateFailed: the supervisor gave up on it (Proc.GiveUpAfter).
	StateFailed State = "failed"
	// StateStopped is not recorded: `kubernix status` shows it for a
	// process that does not run, outside of the states above.
	StateStopped State = "stopped"
)

// Supervision is what the supervisor records about a component, in
// <RunDir>/supervision.json (see SupervisionFile), at every change, for
// `kubernix status`.
type Supervision struct {
	State State `json:"state"`
	// Restarts counts the restarts since the supervisor started the
	// component, failed ones included.
	Restarts int `json:"restarts"`
	// Failures counts the failures in a row, as of the last one: a
	// failure after the component ran for Proc.StableAfter counts as the
	// first again.
	Failures int `json:"failures"`
	// LastFailure says how the component last failed: its exit status,
	// the liveness error that had it restarted, or why a restart failed.
	LastFailure   string    `json:"last_failure,omitempty"`
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
	// NextRestart is when the pending restart is due (restarting and
	// crash-looping only).
	NextRestart time.Time `json:"next_restart,omitzero"`
}

// SupervisionFile is where the supervisor records a component's
// Supervision: beside its pidfile and run.json.
func SupervisionFile(runDir string) string { return filepath.Join(runDir, "supervision.json") }

// ReadSupervision reads a component's record from its run directory. The
// error wraps os.ErrNotExist when none was written (a component of an
// older kubernix, or one not started yet).
func ReadSupervision(runDir string) (Supervision, error) {
	var s Supervision
	b, err := os.ReadFile(SupervisionFile(runDir))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// WriteSupervision records s as a component's Supervision in its run
// directory runDir (made if missing), replacing the last record
// atomically. The supervisor records the deployment of an addon it
// deploys after the cluster is Ready the same way. Errors are the file
// system's.
func WriteSupervision(runDir string, s Supervision) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, config.StateDirMode); err != nil {
		return err
	}
	return atomicfile.Write(SupervisionFile(runDir), append(b, '\n'), config.StateFileMode)
}

// crashLoop counts a component's failures in a row and spaces its
// restarts: the backoff grows by the policy's Factor from its Duration up
// to its Cap and stays there, for ever; a failure after the component ran
// for stable starts over. It is the kubelet's CrashLoopBackOff rule (its
// client-go flowcontrol.Backoff resets after twice the cap), with the
// delays of a wait.Backoff.
type crashLoop struct {
	policy   wait.Backoff
	stable   time.Duration
	backoff  wait.Backoff
	failures int
}

func newCrashLoop(policy wait.Backoff, stable time.Duration) *crashLoop {
	return &crashLoop{policy: policy, stable: stable}
}

// failed records a failure of a process that had run, ready, for ran (0
// for a restart that failed before it was ready), and returns the delay
// before the next restart and the number of failures in a row.
func (c *crashLoop) failed(ran time.Duration) (time.Duration, int) {
	if c.failures == 0 || ran >= c.stable {
		c.backoff = c.policy
		// wait.Backoff.Step grows the delay while Steps last, and once
		// it reaches Cap sets Steps to 0 and returns Cap from then on.
		c.backoff.Steps = math.MaxInt32
		c.failures = 0
	}
	c.failures++
	return c.backoff.Step(), c.failures
}

// liveness counts failed liveness checks in a row.
type liveness struct {
	threshold int
	failures  int
}

// observe records the result of one check and reports whether the
// process now counts as hung: threshold failures in a row.
func (l *liveness) observe(err error) bool {
	if err == nil {
		l.failures = 0
		return false
	}
	l.failures++
	return l.failures >= l.threshold
}
