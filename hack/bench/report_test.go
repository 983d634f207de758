package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// fixtureReport is a report of two sizes, cold and warm, with a failure, an
// import and a note, built from the Timings fixture.
func fixtureReport(t *testing.T) *Report {
	t.Helper()
	tm := loadTimings(t, "timings-2node.json")
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	proc := func(scope, comp string, mib uint64) ProcRSS {
		// Shared pages make PSS smaller: here, 60% of RSS.
		return ProcRSS{Scope: scope, Component: comp, PIDs: []int{100}, RSSBytes: mib << 20, PSSBytes: mib << 20 * 6 / 10}
	}
	mem := func(nodes int, extra uint64) *Memory {
		m := &Memory{SampledAfterSeconds: 5.01}
		for _, p := range []ProcRSS{proc("supervisor", "supervisor", 40), proc("control-plane", "etcd", 60),
			proc("control-plane", "kube-apiserver", 300+extra), proc("control-plane", "kube-controller-manager", 100),
			proc("control-plane", "kube-scheduler", 50)} {
			m.Processes = append(m.Processes, p)
		}
		for i := range nodes {
			nd := Layout{Name: "t"}.NodeName(i)
			if nodes > 1 {
				m.Processes = append(m.Processes, proc(nd, "sandbox", 10))
			}
			m.Processes = append(m.Processes, proc(nd, "containerd", 50), proc(nd, "shims", 20), proc(nd, "kubelet", 120),
				proc(nd, "kube-proxy", 90), proc(nd, "netpol-agent", 25), proc(nd, "pods", 30))
		}
		for _, p := range m.Processes {
			m.TotalBytes += p.RSSBytes
			m.TotalPSSBytes += p.PSSBytes
		}
		return m
	}
	// CPU-seconds to Ready: a control plane of 10, 2 per node, the
	// machine 1 more, on 2 cores.
	bootCPU := func(nodes int, up float64) *BootCPU {
		c := &BootCPU{}
		cp := func(scope, comp string, sec float64) ProcCPU {
			return ProcCPU{Scope: scope, Component: comp, PIDs: []int{100}, Seconds: sec}
		}
		c.Processes = []ProcCPU{cp("supervisor", "supervisor", 2), cp("control-plane", "etcd", 1.5),
			cp("control-plane", "kube-apiserver", 5), cp("control-plane", "kube-controller-manager", 1), cp("control-plane", "kube-scheduler", 0.5)}
		for i := range nodes {
			nd := Layout{Name: "t"}.NodeName(i)
			c.Processes = append(c.Processes, cp(nd, "containerd", 0.5), cp(nd, "kubelet", 1), cp(nd, "kube-proxy", 0.5))
		}
		for _, p := range c.Processes {
			c.ClusterSeconds += p.Seconds
		}
		c.MachineSeconds = c.ClusterSeconds + 1
		c.Busy = c.MachineSeconds / (2 * up)
		return c
	}
	mk := func(nodes, index int, mode string, up, down float64, extraMiB uint64) Run {
		r := Run{Nodes: nodes, Index: index, Mode: mode, PKIReused: mode == ModeWarm, Executor: "container",
			Started: start, LoadAvg: "0.50 0.40 0.30 1/100 1234", UpSeconds: up, DownSeconds: down,
			Ready: Ready{Ready: nodes, Total: nodes, Expected: nodes}}
		if nodes == 1 {
			r.Executor = "process"
		}
		// up invoked 2 s before the first component start, returned 0.25 s after the last ready.
		first := tm.Components[0].Started
		(&bench{}).analyse(&r, tm, first.Add(-2*time.Second), first.Add(12250*time.Millisecond))
		r.Memory = mem(nodes, extraMiB)
		r.BootCPU = bootCPU(nodes, up)
		r.TimeToK8s = &TimeToK8s{AppRunningSeconds: up + 1.5, DNSSeconds: up + 2}
		return r
	}
	runs := []Run{
		mk(1, 1, ModeCold, 15.2, 6.1, 0),
		mk(1, 2, ModeWarm, 14.1, 5.9, 4),
		mk(1, 3, ModeWarm, 14.5, 6.3, 8),
		mk(3, 1, ModeCold, 17.8, 8.0, 20),
		mk(3, 2, ModeWarm, 0, 7.7, 0),
	}
	runs[0].Import = &ImportRun{Bytes: 50_010_000, Seconds: 1.25, MBps: 40.008}
	runs[1].Notes = []string{"Ready condition older than the up (a previous run's, from etcd?) on t-node-0"}
	runs[3].Import = &ImportRun{Bytes: 50_010_000, Seconds: 2.5, MBps: 20.004}
	runs[4].UpError = "up: exit status 1\nphase NodeAgent: start kubelet@t-node-1: boom"
	runs[4].Failures = []string{runs[4].UpError}
	runs[4].Memory, runs[4].Timings, runs[4].CriticalPath, runs[4].Components, runs[4].Kinds = nil, nil, nil, nil, nil
	runs[4].BootCPU = nil
	r := &Report{
		Started:  start,
		Finished: start.Add(3*time.Minute + 12*time.Second),
		Git:      Git{Revision: "0123456789abcdef0123456789abcdef01234567", Dirty: true},
		Machine:  Machine{Cores: 2, MemTotalBytes: 24 << 30, Kernel: "6.1.0-test"},
		Versions: Versions{Kubernix: "kubernix dev (go1.26.8 linux/amd64)", Upstream: map[string]string{
			"KUBERNETES_VERSION": "v1.37.2", "CONTAINERD_VERSION": "v2.4.2"}},
		Settings: Settings{Nodes: []int{1, 3}, Runs: 3, ColdRuns: 1, NetworkPolicy: true, Name: "t", StateDir: "/tmp/kx-t", CIDR: "10.210.0.0/16",
			RSSDelaySeconds: 5, TimeoutSeconds: 600, ImportNodes: []int{1, 3}},
		Runs:   runs,
		Import: ImportSummary{Available: true, Ref: imageRef, Bytes: 50_010_000},
	}
	r.Summarize()
	return r
}

func TestSummarizeReport(t *testing.T) {
	r := fixtureReport(t)
	if len(r.Summary) != 4 {
		t.Fatalf("summary rows = %d, want 4 (two sizes × cold, warm)", len(r.Summary))
	}
	oneWarm := r.Summary[1]
	if oneWarm.Nodes != 1 || oneWarm.Mode != ModeWarm || oneWarm.Runs != 2 || oneWarm.Wall != (Stat{N: 2, Median: 14.3, Min: 14.1, Max: 14.5}) {
		t.Errorf("1-node warm row = %+v", oneWarm)
	}
	threeWarm := r.Summary[3]
	if threeWarm.Failed != 1 || threeWarm.Wall.N != 0 || threeWarm.Down.N != 1 {
		t.Errorf("3-node warm row (up failed) = %+v: want 1 failed, no wall, a down time", threeWarm)
	}
	// The time-to-k8s flow: 1.5 and 2 s after up returned.
	if oneWarm.AppRunning != (Stat{N: 2, Median: 15.8, Min: 15.6, Max: 16}) || oneWarm.DNS.N != 2 || !near(oneWarm.DNS.Median, 16.3) {
		t.Errorf("1-node warm time-to-k8s: app running %+v, DNS answering %+v", oneWarm.AppRunning, oneWarm.DNS)
	}
	if oneWarm.Startup != (Stat{N: 2, Median: 1.5, Min: 1.5, Max: 1.5}) || !near(oneWarm.Handover.Median, 0.25) {
		t.Errorf("startup %+v (want 2 s less 0.5 s prepare), hand-over %+v", oneWarm.Startup, oneWarm.Handover)
	}
	// Boot CPU: 10 CPU-s of control plane and supervisor, 2 per node; per
	// kind summed over the nodes; the failed run has none.
	threeCold := r.Summary[2]
	if threeCold.ClusterCPU != (Stat{N: 1, Median: 16, Min: 16, Max: 16}) || !near(threeCold.MachineCPU.Median, 17) || !near(threeCold.Busy.Median, 17/(2*17.8)) {
		t.Errorf("3-node cold boot CPU: cluster %+v, machine %+v, busy %+v", threeCold.ClusterCPU, threeCold.MachineCPU, threeCold.Busy)
	}
	if i := slices.IndexFunc(threeCold.CPU, func(n NamedStat) bool { return n.Name == "kubelet" }); i < 0 || threeCold.CPU[i].Stat.Median != 3 {
		t.Errorf("3-node cold CPU per kind = %+v, want kubelet 3 (1 per node)", threeCold.CPU)
	}
	if threeWarm.ClusterCPU.N != 0 || len(threeWarm.CPU) != 0 {
		t.Errorf("3-node warm (up failed) boot CPU = %+v %+v, want none", threeWarm.ClusterCPU, threeWarm.CPU)
	}
	if len(r.Failures) != 1 || !strings.HasPrefix(r.Failures[0], "3 node(s) run 2 (warm): up: exit status 1") {
		t.Errorf("failures = %q", r.Failures)
	}
	if len(r.Notes) != 1 {
		t.Errorf("notes = %q", r.Notes)
	}
	// Import: 2.5 s into 3 nodes, 1.25 s into 1 (cold); no warm 3-node import.
	if len(r.Import.Ratios) != 1 || r.Import.Ratios[0] != (ImportRatio{Mode: ModeCold, From: 1, To: 3, Ratio: 2}) {
		t.Errorf("ratios = %+v, want cold 2", r.Import.Ratios)
	}
	// Per added node: (3-node cold total - 1-node median total) / 2.
	if r.MarginalRSS == nil || len(r.MarginalRSS.Points) != 2 {
		t.Fatalf("marginal RSS = %+v", r.MarginalRSS)
	}
	want := (float64(570+3*345) - 889) / 2
	if got := r.MarginalRSS.Slope / (1 << 20); !near(got, want) {
		t.Errorf("marginal RSS = %v MiB, want %v", got, want)
	}
	// PSS per kind is summed over the nodes: 3 agents of 60% of 25 MiB.
	var agentPSS Stat
	for _, s := range r.Summary {
		if s.Nodes == 3 && s.Mode == ModeCold {
			for _, ns := range s.PSS {
				if ns.Name == "netpol-agent" {
					agentPSS = ns.Stat
				}
			}
		}
	}
	if agentPSS.N != 1 || !near(agentPSS.Median/(1<<20), 3*25*0.6) {
		t.Errorf("3-node cold netpol-agent PSS = %+v, want one run of %v MiB", agentPSS, 3*25*0.6)
	}
}

func TestImportRatios(t *testing.T) {
	sums := []Summary{
		{Nodes: 1, Mode: ModeCold, Import: &ImportStat{Seconds: Stat{N: 1, Median: 2}}},
		{Nodes: 3, Mode: ModeCold, Import: &ImportStat{Seconds: Stat{N: 1, Median: 5}}},
		{Nodes: 1, Mode: ModeWarm, Import: &ImportStat{Seconds: Stat{N: 2, Median: 1}}},
		{Nodes: 3, Mode: ModeWarm, Import: &ImportStat{Failed: 2}},
	}
	got := importRatios(sums)
	if len(got) != 1 || got[0] != (ImportRatio{Mode: ModeCold, From: 1, To: 3, Ratio: 2.5}) {
		t.Errorf("importRatios = %+v, want cold 2.5 only", got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	r := fixtureReport(t)
	var buf bytes.Buffer
	if err := r.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md", buf.Bytes())
}

func TestMarkdownNoImport(t *testing.T) {
	r := fixtureReport(t)
	r.Import = ImportSummary{Note: "not available: this kubernix has no `image load`"}
	var buf bytes.Buffer
	if err := r.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Not measured: not available: this kubernix has no `image load`.") {
		t.Errorf("markdown does not say the import was not measured:\n%s", buf.String())
	}
}

func TestWriteFiles(t *testing.T) {
	r := fixtureReport(t)
	dir := t.TempDir()
	md, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(md) != "bench-20260102-030000.md" {
		t.Errorf("markdown path %s", md)
	}
	for _, f := range []string{"bench-20260102-030000.json", "latest.json", "latest.md", "bench-20260102-030000.svg", "latest.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != len(r.Runs) || back.Runs[0].Timings == nil || back.Summary[0].Wall != r.Summary[0].Wall {
		t.Errorf("JSON round trip lost data: %+v", back.Summary[0])
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./hack/bench -update` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update to accept it); got:\n%s", path, got)
	}
}

// TestVariantCost checks the -with-addons and -with-flags runs: their
// own summary row, labelled with what they add, kept out of the per-node
// fit, and the cost table's differences; a report without them has no
// cost table.
func TestVariantCost(t *testing.T) {
	tests := []struct {
		name  string
		add   func(*Run, *Settings) // makes the extra run a variant
		row   func(Summary) bool
		up    float64
		ttk   TimeToK8s
		pss   uint64 // MiB more than the base run's
		wants []string
	}{
		{"addons", func(r *Run, st *Settings) { r.Addons, st.WithAddons = "ingress", "ingress" },
			func(s Summary) bool { return s.Addons == "ingress" }, 21.3, TimeToK8s{AppRunningSeconds: 22.8, DNSSeconds: 23.3}, 240,
			[]string{"## Cost of +ingress", "| 3 | 17.8 | 21.3 | +3.5 | 19.8 | 23.3 | +3.5 | 963 | 1203 | +240 |", "| 3 | cold +ingress | 1 |"}},
		{"flags", func(r *Run, st *Settings) { r.Flags, st.WithFlags = "--ephemeral", "--ephemeral" },
			func(s Summary) bool { return s.Flags == "--ephemeral" && s.Addons == "" }, 16.9, TimeToK8s{AppRunningSeconds: 18.1, DNSSeconds: 18.5}, 0,
			[]string{"## Cost of --ephemeral", "| 3 | 17.8 | 16.9 | -0.9 | 19.8 | 18.5 | -1.3 | 963 | 963 | +0 |", "| 3 | cold --ephemeral | 1 |"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixtureReport(t)
			base := r.Runs[3] // 3 nodes, cold: 17.8 s
			with := base
			tt.add(&with, &r.Settings)
			with.UpSeconds, with.TimeToK8s = tt.up, &tt.ttk
			m := *base.Memory
			m.TotalPSSBytes += tt.pss << 20
			m.TotalBytes += 1 << 30 // kept out of the fit
			with.Memory = &m
			r.Runs = append(r.Runs, with)
			r.Summarize()
			i := slices.IndexFunc(r.Summary, tt.row)
			if i < 0 || r.Summary[i].Nodes != 3 || r.Summary[i].Mode != ModeCold || r.Summary[i].Wall.Median != tt.up || len(r.Summary) != 5 {
				t.Fatalf("summary %+v: want a fifth row, of the 3-node cold variant", r.Summary)
			}
			if got, want := r.MarginalRSS.Slope/(1<<20), (float64(570+3*345)-889)/2; !near(got, want) {
				t.Errorf("marginal RSS = %v MiB, want %v: the variant's run counted", got, want)
			}
			var buf bytes.Buffer
			if err := r.Markdown(&buf); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.wants {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("markdown lacks %q:\n%s", want, buf.String())
				}
			}
		})
	}
	if r0 := fixtureReport(t); func() bool { var b bytes.Buffer; _ = r0.Markdown(&b); return strings.Contains(b.String(), "Cost of") }() {
		t.Error("a report without -with-addons or -with-flags has a cost table")
	}
}

// TestTimelineSVG checks the Gantt chart of the fixture's timelines
// (golden timeline.svg): well-formed XML, a panel per summary, a bar per
// component kind of each, and nothing without a timeline.
func TestTimelineSVG(t *testing.T) {
	r := fixtureReport(t)
	svg := TimelineSVG(r.Summary)
	golden(t, "timeline.svg", svg)
	dec := xml.NewDecoder(bytes.NewReader(svg))
	rects := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "rect" && slices.ContainsFunc(el.Attr, func(a xml.Attr) bool { return a.Name.Local == "y" && a.Value != "10" }) {
			rects++
		}
	}
	bars, panels := 0, 0
	for _, s := range r.Summary {
		bars += len(s.Phases)
		if len(s.Phases) > 0 {
			panels++
		}
	}
	// The background rect has no y; the legend's are at y 10.
	if bars == 0 || rects != bars {
		t.Errorf("%d bars drawn, want one per component kind of each summary: %d", rects, bars)
	}
	if got := strings.Count(string(svg), "boot timeline (s from"); panels < 2 || got != panels {
		t.Errorf("%d panels, want one per summary with a timeline: %d", got, panels)
	}
	if TimelineSVG([]Summary{{Nodes: 1, Mode: ModeCold}}) != nil {
		t.Error("a chart of summaries without timelines, want none")
	}
}
