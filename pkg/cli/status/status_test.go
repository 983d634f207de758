package status

import (
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/components"
)

func TestComponentState(t *testing.T) {
	tests := []struct {
		name     string
		running  bool
		recorded components.State
		want     components.State
	}{
		{"running, nothing recorded", true, "", components.StateRunning},
		{"not running, nothing recorded", false, "", components.StateStopped},
		{"recorded running", true, components.StateRunning, components.StateRunning},
		{"recorded running but gone (stopped with its node)", false, components.StateRunning, components.StateStopped},
		{"liveness failing", true, components.StateUnhealthy, components.StateUnhealthy},
		{"liveness failing, then exited", false, components.StateUnhealthy, components.StateStopped},
		{"restarting, its process gone", false, components.StateRestarting, components.StateRestarting},
		{"crash-looping, between two crashes", true, components.StateCrashLooping, components.StateCrashLooping},
		{"crash-looping", false, components.StateCrashLooping, components.StateCrashLooping},
		{"given up", false, components.StateFailed, components.StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := componentState(tt.running, tt.recorded); got != tt.want {
				t.Errorf("componentState(%v, %q) = %q, want %q", tt.running, tt.recorded, got, tt.want)
			}
		})
	}
}

func TestLastFailure(t *testing.T) {
	at := time.Date(2026, 12, 1, 14, 3, 4, 0, time.Local)
	tests := []struct {
		name string
		rec  components.Supervision
		want string
	}{
		{"none", components.Supervision{}, "-"},
		{"an exit", components.Supervision{LastFailure: "exited: exit status 1", LastFailureAt: at}, "14:03:04: exited: exit status 1"},
		{
			"only the first line of a failed restart's log tail",
			components.Supervision{LastFailure: "restart failed: not ready\nlast 20 lines of x.log:\n    boom", LastFailureAt: at},
			"14:03:04: restart failed: not ready",
		},
		{
			"a long line is cut",
			components.Supervision{LastFailure: strings.Repeat("x", 150), LastFailureAt: at},
			"14:03:04: " + strings.Repeat("x", 97) + "...",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lastFailure(tt.rec); got != tt.want {
				t.Errorf("lastFailure = %q, want %q", got, tt.want)
			}
		})
	}
}
