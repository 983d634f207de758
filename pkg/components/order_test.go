package components

import (
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/config"
)

// TestStartOrder checks the order descriptions start and stop in: after
// what they need, phase by phase, ties in the given order; an addon-like
// component after every earlier phase; and the errors for a need that is
// not described and for a cycle.
func TestStartOrder(t *testing.T) {
	d := func(name string, ph boot.Phase, needs ...string) Description {
		return Description{Name: name, Scope: config.ControlPlaneScope, Kind: KindProcess, Phase: ph, Needs: needs}
	}
	wait := d("wait", boot.Addons, "apply")
	wait.AfterEarlierPhases = true
	tests := []struct {
		name      string
		ds        []Description
		want, err string
	}{
		{"needs first", []Description{d("b", boot.Controller, "a"), d("a", boot.Controller)}, "a b", ""},
		{"phases in order", []Description{d("late", boot.NodeAgent), d("early", boot.Infrastructure)}, "early late", ""},
		{"ties keep order", []Description{d("x", boot.Controller), d("y", boot.Controller)}, "x y", ""},
		{"after earlier phases", []Description{wait, d("apply", boot.Addons), d("agent", boot.NodeAgent)}, "agent apply wait", ""},
		{"unknown need", []Description{d("a", boot.Controller, "ghost")}, "", "a needs ghost, which is not described"},
		{"cycle", []Description{d("a", boot.Controller, "b"), d("b", boot.Controller, "a")}, "", "cycle: a -> b -> a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StartOrder(tt.ds)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("StartOrder error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range got {
				ids = append(ids, d.ID())
			}
			if strings.Join(ids, " ") != tt.want {
				t.Errorf("StartOrder = %v, want %s", ids, tt.want)
			}
			if len(got) > 0 && got[len(got)-1].AfterEarlierPhases && len(got[len(got)-1].Needs) != 1 {
				t.Errorf("StartOrder resolved the needs of its result: %v", got[len(got)-1].Needs)
			}
			stop, _ := StopOrder(tt.ds)
			if len(stop) != len(got) || stop[0].ID() != got[len(got)-1].ID() {
				t.Errorf("StopOrder = %v, want the start order reversed", stop)
			}
		})
	}
}
