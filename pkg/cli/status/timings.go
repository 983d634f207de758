package status

import (
	"io"
	"sort"
	"time"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/state"
)

// Timings is what `kubernix status --timings` reports (-o json|yaml), and
// what its table shows: how long the last up took, and when each
// component started and became ready.
type Timings struct {
	// TotalSeconds is the time up took, in seconds (to the millisecond,
	// as are the other durations).
	TotalSeconds float64 `json:"totalSeconds"`
	// PrepareSeconds is the host preparation before the first component
	// (network, PKI, kubeconfigs), in seconds.
	PrepareSeconds float64 `json:"prepareSeconds"`
	// Components are the components in the order they started.
	Components []ComponentTiming `json:"components"`
}

// ComponentTiming is when a component started and became ready in the
// last up.
type ComponentTiming struct {
	// Phase is the component's boot phase, e.g. "Infrastructure".
	Phase string `json:"phase"`
	// Name is the component's ID, e.g. "kubelet/kubernix-node-0".
	Name string `json:"name"`
	// Started is when it was started (RFC 3339, nanoseconds).
	Started time.Time `json:"started"`
	// Ready is when it became ready (RFC 3339, nanoseconds).
	Ready time.Time `json:"ready"`
	// TookSeconds is the time from start to ready, in seconds.
	TookSeconds float64 `json:"tookSeconds"`
}

// seconds3 is d in seconds to the millisecond, so JSON shows 5.354, not
// the float noise of 5.3535038870000005.
func seconds3(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond).Milliseconds()) / 1000
}

// newTimings converts the recorded timings, sorting the components by
// start.
func newTimings(t state.Timings) Timings {
	out := Timings{TotalSeconds: seconds3(t.Total), PrepareSeconds: seconds3(t.Prepare), Components: []ComponentTiming{}}
	for _, c := range t.Components {
		out.Components = append(out.Components, ComponentTiming{
			Phase: c.Phase, Name: c.Name, Started: c.Started, Ready: c.Ready, TookSeconds: seconds3(c.Elapsed),
		})
	}
	sort.SliceStable(out.Components, func(i, j int) bool { return out.Components[i].Started.Before(out.Components[j].Started) })
	return out
}

// Table writes t as `kubernix status --timings` prints it by default:
// the total, then a row per component with its start and ready times in
// seconds after the first component's start, and how long it took.
func (t Timings) Table(w io.Writer) error {
	common.Fprintf(w, "total %s (prepare %s)\n", seconds(t.TotalSeconds), seconds(t.PrepareSeconds))
	common.Fprintf(w, "PHASE\tCOMPONENT\tSTARTED(+s)\tREADY(+s)\tTOOK\n")
	var first time.Time
	for _, c := range t.Components {
		if first.IsZero() || c.Started.Before(first) {
			first = c.Started
		}
	}
	for _, c := range t.Components {
		common.Fprintf(w, "%s\t%s\t%.3f\t%.3f\t%s\n", c.Phase, c.Name, c.Started.Sub(first).Seconds(), c.Ready.Sub(first).Seconds(), seconds(c.TookSeconds))
	}
	return nil
}

// seconds is s seconds as a duration rounded to the millisecond.
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}
