package main

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kubernix/kubernix/pkg/boot"
)

// Stat summarises a sample: its size, median and spread (min and max). The
// unit is the caller's (seconds, bytes, MB/s, a ratio). The zero Stat (N 0)
// means "no data".
type Stat struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize returns the Stat of xs; NaNs are ignored. The median of an even
// number of values is the mean of the middle two.
func Summarize(xs []float64) Stat {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return Stat{}
	}
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stat{N: n, Median: med, Min: s[0], Max: s[n-1]}
}

// PhaseStep is one component on the critical path, with its phase and its
// own start-to-ready time.
type PhaseStep struct {
	Phase     string  `json:"phase"`
	Component string  `json:"component"`
	Seconds   float64 `json:"seconds"`
	// PhaseWallSeconds is the phase's wall time as the supervisor measured
	// it (0 if not recorded).
	PhaseWallSeconds float64 `json:"phase_wall_seconds"`
}

// CriticalPath is the least time a boot with these components could take if
// nothing ran outside them: Prepare (network, PKI, kubeconfigs) plus the
// longest chain of components each needing the one before, a component
// weighing its own start-to-ready time. A component's needs are those the
// supervisor recorded (boot.Timing.Needs), or without a record every
// component of the earlier phases: then the chain is, per phase, its
// slowest component.
type CriticalPath struct {
	PrepareSeconds float64     `json:"prepare_seconds"`
	Steps          []PhaseStep `json:"steps"` // the chain, in boot order
	TotalSeconds   float64     `json:"total_seconds"`
}

// CriticalPathOf computes the CriticalPath of t. Unknown phase names rank
// after the known ones (boot.Phases), in name order; components that
// failed count like the others, and needs naming no component are ignored.
func CriticalPathOf(t Timings) CriticalPath {
	cp := CriticalPath{PrepareSeconds: t.Prepare.Seconds(), TotalSeconds: t.Prepare.Seconds()}
	ch := newChains(t)
	last, longest := "", -1.0
	for _, c := range t.Components {
		if f := ch.visit(c.Name); f > longest {
			last, longest = c.Name, f
		}
	}
	for name := last; name != ""; name = ch.prev[name] {
		c := ch.byName[name]
		cp.Steps = append(cp.Steps, PhaseStep{Phase: c.Phase, Component: c.Name, Seconds: c.Elapsed.Seconds(), PhaseWallSeconds: t.Phases[c.Phase].Seconds()})
		cp.TotalSeconds += c.Elapsed.Seconds()
	}
	slices.Reverse(cp.Steps)
	return cp
}

// chains finds, for each component of a boot, the longest chain of
// components each needing the one before that ends with it.
type chains struct {
	t      Timings
	rank   func(phase string) int
	byName map[string]boot.Timing
	// finish[name]: the seconds of the longest chain ending with name;
	// prev[name]: its previous link ("" for none). Needs form no cycle
	// (the registry refuses one), but a hand-made file might: a name being
	// visited counts as no chain.
	finish   map[string]float64
	prev     map[string]string
	visiting map[string]bool
}

func newChains(t Timings) *chains {
	ch := &chains{
		t: t, rank: phaseRank(), byName: map[string]boot.Timing{},
		finish: map[string]float64{}, prev: map[string]string{}, visiting: map[string]bool{},
	}
	for _, c := range t.Components {
		ch.byName[c.Name] = c
	}
	return ch
}

// needs returns the components c needs: as recorded, or without a record
// every component of the earlier phases.
func (ch *chains) needs(c boot.Timing) []string {
	if c.Needs != nil {
		return c.Needs
	}
	var out []string
	for _, d := range ch.t.Components {
		if ch.rank(d.Phase) < ch.rank(c.Phase) {
			out = append(out, d.Name)
		}
	}
	return out
}

// visit returns the seconds of the longest chain ending with name (0 for a
// name no component has), recording its links in prev.
func (ch *chains) visit(name string) float64 {
	if f, ok := ch.finish[name]; ok {
		return f
	}
	c, ok := ch.byName[name]
	if !ok || ch.visiting[name] {
		return 0
	}
	ch.visiting[name] = true
	best := 0.0
	for _, n := range ch.needs(c) {
		if _, ok := ch.byName[n]; !ok {
			continue
		}
		if f := ch.visit(n); ch.prev[name] == "" || f > best {
			best, ch.prev[name] = f, n
		}
	}
	ch.visiting[name] = false
	ch.finish[name] = best + c.Elapsed.Seconds()
	return ch.finish[name]
}

// phaseOrder returns the keys of m in boot order, unknown ones last.
func phaseOrder[V any](m map[string]V) []string {
	var out, unknown []string
	known := map[string]bool{}
	for _, p := range boot.Phases {
		known[p.String()] = true
		if _, ok := m[p.String()]; ok {
			out = append(out, p.String())
		}
	}
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return append(out, unknown...)
}

// ComponentTiming is one component's boot, relative to the first component
// start of the run (Prepare comes before that origin).
type ComponentTiming struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // Name without "@<node>"
	Phase string `json:"phase"`
	// StartedSeconds and ReadySeconds are offsets from the first start;
	// "ready" is when the component's Start returned: its readiness probe
	// passed and its after-ready hook (containerd: built-in image import)
	// ran.
	StartedSeconds float64 `json:"started_seconds"`
	ReadySeconds   float64 `json:"ready_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Error          string  `json:"error,omitempty"`
}

// Breakdown returns the components of t relative to the earliest start,
// sorted by start, then name.
func Breakdown(t Timings) []ComponentTiming {
	if len(t.Components) == 0 {
		return nil
	}
	origin := t.Components[0].Started
	for _, c := range t.Components {
		if c.Started.Before(origin) {
			origin = c.Started
		}
	}
	out := make([]ComponentTiming, 0, len(t.Components))
	for _, c := range t.Components {
		out = append(out, ComponentTiming{
			Name: c.Name, Kind: kindOf(c.Name), Phase: c.Phase,
			StartedSeconds: c.Started.Sub(origin).Seconds(),
			ReadySeconds:   c.Ready.Sub(origin).Seconds(),
			ElapsedSeconds: c.Elapsed.Seconds(),
			Error:          c.Error,
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].StartedSeconds != out[j].StartedSeconds {
			return out[i].StartedSeconds < out[j].StartedSeconds
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// kindOf strips the "@<node>" suffix of a per-node component name.
func kindOf(name string) string {
	kind, _, _ := strings.Cut(name, "@")
	return kind
}

// KindTiming is the boot of every component of one kind in a run: the
// first start and the last ready among them (for the control plane, the
// one component), and the slowest one's elapsed time.
type KindTiming struct {
	Kind           string  `json:"kind"`
	Phase          string  `json:"phase"`
	Count          int     `json:"count"`
	StartedSeconds float64 `json:"started_seconds"`
	ReadySeconds   float64 `json:"ready_seconds"`
	MaxElapsed     float64 `json:"max_elapsed_seconds"`
}

// ByKind groups a Breakdown by component kind, in boot order (phase, then
// first start, then kind).
func ByKind(cs []ComponentTiming) []KindTiming {
	idx := map[string]int{}
	var out []KindTiming
	for _, c := range cs {
		i, ok := idx[c.Kind]
		if !ok {
			i = len(out)
			idx[c.Kind] = i
			out = append(out, KindTiming{Kind: c.Kind, Phase: c.Phase, StartedSeconds: c.StartedSeconds, ReadySeconds: c.ReadySeconds})
		}
		k := &out[i]
		k.Count++
		k.StartedSeconds = math.Min(k.StartedSeconds, c.StartedSeconds)
		k.ReadySeconds = math.Max(k.ReadySeconds, c.ReadySeconds)
		k.MaxElapsed = math.Max(k.MaxElapsed, c.ElapsedSeconds)
	}
	rank := phaseRank()
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(out[i].Phase), rank(out[j].Phase); ri != rj {
			return ri < rj
		}
		if out[i].StartedSeconds != out[j].StartedSeconds {
			return out[i].StartedSeconds < out[j].StartedSeconds
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// phaseRank orders phase names: boot order, unknown ones last.
func phaseRank() func(string) int {
	m := map[string]int{}
	for i, p := range boot.Phases {
		m[p.String()] = i
	}
	return func(name string) int {
		if r, ok := m[name]; ok {
			return r
		}
		return len(boot.Phases)
	}
}

// Fit is a least-squares line y = Intercept + Slope*x through Points.
type Fit struct {
	Slope     float64      `json:"slope"`
	Intercept float64      `json:"intercept"`
	Points    [][2]float64 `json:"points"`
}

// LinearFit fits a line through points (x, y). ok is false with fewer than
// two distinct x values. With exactly two, the slope is
// (y2-y1)/(x2-x1).
func LinearFit(points [][2]float64) (Fit, bool) {
	f := Fit{Points: slices.Clone(points)}
	n := float64(len(points))
	var sx, sy float64
	for _, p := range points {
		sx += p[0]
		sy += p[1]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, p := range points {
		sxx += (p[0] - mx) * (p[0] - mx)
		sxy += (p[0] - mx) * (p[1] - my)
	}
	if len(points) < 2 || sxx == 0 {
		return f, false
	}
	f.Slope = sxy / sxx
	f.Intercept = my - f.Slope*mx
	return f, true
}
