package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/boot"
)

// near reports whether a and b agree to within 1e-9.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Stat
	}{
		{"empty", nil, Stat{}},
		{"one", []float64{3}, Stat{N: 1, Median: 3, Min: 3, Max: 3}},
		{"odd, unsorted", []float64{5, 1, 3}, Stat{N: 3, Median: 3, Min: 1, Max: 5}},
		{"even: mean of the middle two", []float64{4, 1, 2, 10}, Stat{N: 4, Median: 3, Min: 1, Max: 10}},
		{"NaN ignored", []float64{math.NaN(), 2, 8}, Stat{N: 2, Median: 5, Min: 2, Max: 8}},
		{"only NaN", []float64{math.NaN()}, Stat{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Summarize(in); got != tt.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range in { // the input is left alone
				if in[i] != tt.in[i] && !math.IsNaN(in[i]) {
					t.Errorf("Summarize reordered its input: %v", in)
				}
			}
		})
	}
}

// loadTimings loads a Timings fixture from testdata.
func loadTimings(t *testing.T, name string) Timings {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var tm Timings
	if err := json.Unmarshal(b, &tm); err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestCriticalPathOf(t *testing.T) {
	tm := loadTimings(t, "timings-2node.json")
	cp := CriticalPathOf(tm)
	want := []PhaseStep{
		{Phase: "Infrastructure", Component: "etcd", Seconds: 1.2, PhaseWallSeconds: 1.2},
		{Phase: "ControlPlane", Component: "kube-apiserver", Seconds: 3.3, PhaseWallSeconds: 3.3},
		{Phase: "Controller", Component: "containerd@t-node-1", Seconds: 1.79, PhaseWallSeconds: 1.8},
		{Phase: "NodeAgent", Component: "kubelet@t-node-1", Seconds: 3.09, PhaseWallSeconds: 3.1},
		{Phase: "Addons", Component: "coredns", Seconds: 2.6, PhaseWallSeconds: 2.6},
	}
	if len(cp.Steps) != len(want) {
		t.Fatalf("steps = %+v, want %+v", cp.Steps, want)
	}
	for i, w := range want {
		g := cp.Steps[i]
		if g.Phase != w.Phase || g.Component != w.Component || !near(g.Seconds, w.Seconds) || !near(g.PhaseWallSeconds, w.PhaseWallSeconds) {
			t.Errorf("step %d = %+v, want %+v", i, g, w)
		}
	}
	if !near(cp.PrepareSeconds, 0.5) || !near(cp.TotalSeconds, 0.5+1.2+3.3+1.79+3.09+2.6) {
		t.Errorf("prepare %v total %v, want 0.5 and 12.48", cp.PrepareSeconds, cp.TotalSeconds)
	}
}

func TestCriticalPathUnknownPhaseLast(t *testing.T) {
	tm := loadTimings(t, "timings-2node.json")
	tm.Components = append(tm.Components, tm.Components[0])
	tm.Components[len(tm.Components)-1].Phase = "Later"
	tm.Components[len(tm.Components)-1].Name = "extra"
	cp := CriticalPathOf(tm)
	if last := cp.Steps[len(cp.Steps)-1]; last.Phase != "Later" || last.Component != "extra" {
		t.Errorf("last step = %+v, want the unknown phase Later", last)
	}
	if cp := CriticalPathOf(Timings{}); cp.TotalSeconds != 0 || len(cp.Steps) != 0 {
		t.Errorf("empty timings: %+v", cp)
	}
}

func TestBreakdownAndByKind(t *testing.T) {
	tm := loadTimings(t, "timings-2node.json")
	cs := Breakdown(tm)
	if len(cs) != len(tm.Components) {
		t.Fatalf("%d components, want %d", len(cs), len(tm.Components))
	}
	if cs[0].Name != "etcd" || cs[0].StartedSeconds != 0 || !near(cs[0].ReadySeconds, 1.2) {
		t.Errorf("first = %+v, want etcd at 0 → 1.2", cs[0])
	}
	kinds := ByKind(cs)
	want := []KindTiming{
		{Kind: "etcd", Phase: "Infrastructure", Count: 1, StartedSeconds: 0, ReadySeconds: 1.2, MaxElapsed: 1.2},
		{Kind: "sandbox", Phase: "Infrastructure", Count: 2, StartedSeconds: 0, ReadySeconds: 0.35, MaxElapsed: 0.34},
		{Kind: "kube-apiserver", Phase: "ControlPlane", Count: 1, StartedSeconds: 1.2, ReadySeconds: 4.5, MaxElapsed: 3.3},
		{Kind: "containerd", Phase: "Controller", Count: 2, StartedSeconds: 4.5, ReadySeconds: 6.3, MaxElapsed: 1.79},
		{Kind: "kube-controller-manager", Phase: "Controller", Count: 1, StartedSeconds: 4.5, ReadySeconds: 5.5, MaxElapsed: 1},
		{Kind: "kube-scheduler", Phase: "Controller", Count: 1, StartedSeconds: 4.5, ReadySeconds: 5.2, MaxElapsed: 0.7},
		{Kind: "kube-proxy", Phase: "NodeAgent", Count: 2, StartedSeconds: 6.3, ReadySeconds: 6.9, MaxElapsed: 0.59},
		{Kind: "kubelet", Phase: "NodeAgent", Count: 2, StartedSeconds: 6.3, ReadySeconds: 9.4, MaxElapsed: 3.09},
		{Kind: "coredns", Phase: "Addons", Count: 1, StartedSeconds: 9.4, ReadySeconds: 12, MaxElapsed: 2.6},
	}
	if len(kinds) != len(want) {
		t.Fatalf("kinds = %+v", kinds)
	}
	for i, w := range want {
		g := kinds[i]
		if g.Kind != w.Kind || g.Phase != w.Phase || g.Count != w.Count || !near(g.StartedSeconds, w.StartedSeconds) ||
			!near(g.ReadySeconds, w.ReadySeconds) || !near(g.MaxElapsed, w.MaxElapsed) {
			t.Errorf("kind %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestLinearFit(t *testing.T) {
	tests := []struct {
		name             string
		points           [][2]float64
		ok               bool
		slope, intercept float64
	}{
		{"two points: the difference quotient", [][2]float64{{1, 1000}, {3, 1600}}, true, 300, 700},
		{"collinear", [][2]float64{{1, 10}, {3, 30}, {5, 50}, {10, 100}}, true, 10, 0},
		{"least squares", [][2]float64{{1, 1}, {2, 3}, {3, 2}}, true, 0.5, 1},
		{"one point", [][2]float64{{1, 5}}, false, 0, 0},
		{"one distinct x", [][2]float64{{2, 5}, {2, 7}}, false, 0, 0},
		{"none", nil, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := LinearFit(tt.points)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && (!near(f.Slope, tt.slope) || !near(f.Intercept, tt.intercept)) {
				t.Errorf("fit = %+v, want slope %v intercept %v", f, tt.slope, tt.intercept)
			}
		})
	}
}

func TestMarginalFit(t *testing.T) {
	run := func(nodes int, rss, pss uint64, upErr string) Run {
		return Run{Nodes: nodes, UpError: upErr, Memory: &Memory{TotalBytes: rss, TotalPSSBytes: pss}}
	}
	runs := []Run{
		run(1, 1000, 500, ""), run(1, 1200, 700, ""), run(1, 1100, 600, ""), // medians 1100, 600
		run(3, 1700, 800, ""), run(3, 9999, 9999, "up failed"), // failed runs do not count
		{Nodes: 5}, // no sample
	}
	rss := func(m *Memory) uint64 { return m.TotalBytes }
	pss := func(m *Memory) uint64 { return m.TotalPSSBytes }
	if f := marginalFit(runs, rss); f == nil || !near(f.Slope, 300) || !near(f.Intercept, 800) || len(f.Points) != 2 {
		t.Errorf("RSS fit = %+v, want slope 300 over 2 points", f)
	}
	if f := marginalFit(runs, pss); f == nil || !near(f.Slope, 100) || !near(f.Intercept, 500) {
		t.Errorf("PSS fit = %+v, want slope 100, intercept 500", f)
	}
	if f := marginalFit(runs[:3], rss); f != nil {
		t.Errorf("one size: %+v, want nil", f)
	}
	// Reports from before PSS was sampled have none: no fit, not a zero one.
	if f := marginalFit([]Run{run(1, 1000, 0, ""), run(3, 1600, 0, "")}, pss); f != nil {
		t.Errorf("no PSS: %+v, want nil", f)
	}
}

func TestCriticalPathFollowsNeeds(t *testing.T) {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	tm := Timings{Prepare: sec(0.5), Components: []boot.Timing{
		{Name: "etcd", Phase: "Infrastructure", Elapsed: sec(1)},
		{Name: "kube-apiserver", Phase: "ControlPlane", Needs: []string{"etcd"}, Elapsed: sec(3)},
		{Name: "kube-scheduler", Phase: "Controller", Needs: []string{"kube-apiserver"}, Elapsed: sec(0.5)},
		// No needs: it boots alongside etcd and the apiserver.
		{Name: "containerd@n", Phase: "Controller", Needs: []string{}, Elapsed: sec(5)},
		{Name: "kubelet@n", Phase: "NodeAgent", Needs: []string{"kube-apiserver", "containerd@n", "gone"}, Elapsed: sec(2)},
		// Default needs: every component of the earlier phases.
		{Name: "coredns", Phase: "Addons", Elapsed: sec(1)},
	}}
	cp := CriticalPathOf(tm)
	var chain []string
	for _, st := range cp.Steps {
		chain = append(chain, st.Component)
	}
	if want := []string{"containerd@n", "kubelet@n", "coredns"}; !slices.Equal(chain, want) {
		t.Errorf("chain %v, want %v", chain, want)
	}
	if !near(cp.TotalSeconds, 0.5+5+2+1) {
		t.Errorf("total %v, want 8.5", cp.TotalSeconds)
	}
}
