package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Modes of a run: cold starts from an empty state dir (PKI generated, etcd
// and containerd stores empty); warm reuses the previous run's state dir
// (PKI, etcd data, containerd content store).
const (
	ModeCold = "cold"
	ModeWarm = "warm"
)

// Report is everything one bench invocation measured, as written to
// bench-<timestamp>.json. Durations are float seconds, sizes bytes.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Git      Git       `json:"git"`
	Machine  Machine   `json:"machine"`
	Versions Versions  `json:"versions"`
	Settings Settings  `json:"settings"`
	Runs     []Run     `json:"runs"`
	Summary  []Summary `json:"summary"`
	// MarginalPSS is MarginalRSS for the total PSS.
	MarginalPSS *Fit `json:"marginal_pss,omitempty"`
	// MarginalRSS fits the median total RSS (bytes) of each size against its
	// node count: Slope is the bytes each added node costs. Nil with fewer
	// than two sizes measured.
	MarginalRSS *Fit          `json:"marginal_rss,omitempty"`
	Import      ImportSummary `json:"image_import"`
	// Failures lists every run's failures, prefixed with the run.
	Failures []string `json:"failures"`
	// Notes lists every run's notes, prefixed with the run.
	Notes []string `json:"notes,omitempty"`
}

// Git is the revision the bench ran from.
type Git struct {
	Revision string `json:"revision"`
	Dirty    bool   `json:"dirty"`
	Error    string `json:"error,omitempty"`
}

// Machine is the host the bench ran on.
type Machine struct {
	Cores         int    `json:"cores"`
	MemTotalBytes uint64 `json:"mem_total_bytes"`
	Kernel        string `json:"kernel"`
}

// Versions are kubernix's (first line of `kubernix version`) and the pinned
// upstream versions it prints.
type Versions struct {
	Kubernix string            `json:"kubernix"`
	Upstream map[string]string `json:"upstream"`
}

// Settings are the bench's effective options.
type Settings struct {
	Nodes []int `json:"nodes"`
	Runs  int   `json:"runs"`
	// ColdRuns of each size's Runs start from a fresh state dir.
	ColdRuns int    `json:"cold_runs"`
	Name     string `json:"name"`
	StateDir string `json:"state_dir"`
	CIDR     string `json:"cidr"`
	// Addons is every up's --addons; "" for kubernix's default.
	Addons string `json:"addons,omitempty"`
	// NetworkPolicy is false when every up had --network-policy=false.
	NetworkPolicy bool `json:"network_policy"`
	// IPFamily is every up's --ip-family; "" for kubernix's default (ipv4).
	IPFamily string `json:"ip_family,omitempty"`
	// WithAddons are the addons whose cost was measured (-with-addons):
	// the runs of Run.Addons added them.
	WithAddons string `json:"with_addons,omitempty"`
	// WithFlags are the up flags whose effect was measured (-with-flags):
	// the runs of Run.Flags added them.
	WithFlags       string  `json:"with_flags,omitempty"`
	RSSDelaySeconds float64 `json:"rss_delay_seconds"`
	TimeoutSeconds  float64 `json:"timeout_seconds"`
	SkipImport      bool    `json:"skip_import"`
	ImportNodes     []int   `json:"import_nodes"`
}

// Run is one up/measure/down cycle.
type Run struct {
	Nodes int `json:"nodes"`
	// Index counts the runs of this size from 1.
	Index int    `json:"index"`
	Mode  string `json:"mode"`
	// Addons are the addons this run added to the settings' (the
	// -with-addons runs); "" for the others.
	Addons string `json:"addons,omitempty"`
	// Flags are the up flags (space-separated) this run added (the
	// -with-flags runs); "" for the others.
	Flags string `json:"flags,omitempty"`
	// PKIReused is true when the state dir already held a PKI, so up did not
	// generate one (Prepare is then mostly network setup).
	PKIReused bool `json:"pki_reused"`
	// Executor is "container" when the nodes had sandboxes, else "process".
	Executor string    `json:"executor"`
	Started  time.Time `json:"started"`
	// LoadAvg is /proc/loadavg just before up: other work on the machine
	// (other clusters, builds) skews the numbers.
	LoadAvg string `json:"loadavg"`

	// UpSeconds is the wall time of `kubernix up --detach`, invocation to
	// exit: it exits once every node is Ready and CoreDNS Available.
	UpSeconds float64 `json:"up_seconds"`
	UpError   string  `json:"up_error,omitempty"`
	Ready     Ready   `json:"ready"`
	// SupervisorTotalSeconds is Timings.Total: the supervisor's own time
	// from after leftover cleanup to Ready (without CLI start, host checks
	// and the detach hand-over).
	SupervisorTotalSeconds float64 `json:"supervisor_total_seconds"`
	// StartupSeconds is from the invocation of up to the start of Prepare
	// (first component start less Prepare): the CLI, its host checks, the
	// detached supervisor's start and its own checks, leftover cleanup.
	StartupSeconds float64 `json:"startup_seconds"`
	// HandoverSeconds is from the last component ready to up's exit:
	// kubeconfig merge, timings, the notification of the detaching parent.
	HandoverSeconds float64           `json:"handover_seconds"`
	Timings         *Timings          `json:"timings,omitempty"`
	Components      []ComponentTiming `json:"components,omitempty"`
	Kinds           []KindTiming      `json:"kinds,omitempty"`
	CriticalPath    *CriticalPath     `json:"critical_path,omitempty"`
	// Overhead is UpSeconds / CriticalPath.TotalSeconds (0 when unknown).
	Overhead float64 `json:"overhead"`
	Memory   *Memory `json:"memory,omitempty"`
	// BootCPU is the CPU time up's boot used; nil when up failed or
	// in reports from before it was measured.
	BootCPU *BootCPU   `json:"boot_cpu,omitempty"`
	Import  *ImportRun `json:"image_import,omitempty"`
	// TimeToK8s is the time-to-k8s flow right after up returned; nil
	// when the cluster had no CoreDNS or the run failed before.
	TimeToK8s *TimeToK8s `json:"time_to_k8s,omitempty"`

	// DownSeconds is the wall time of `kubernix down`.
	DownSeconds float64 `json:"down_seconds"`
	DownError   string  `json:"down_error,omitempty"`
	// Leftovers is what the cluster left on the host after down.
	Leftovers []string `json:"leftovers,omitempty"`
	Failures  []string `json:"failures,omitempty"`
	// Notes are observations that are not failures.
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether the run came up, was verified Ready, and went down
// cleanly.
func (r Run) OK() bool { return len(r.Failures) == 0 }

// label names the run in failure lists.
func (r Run) label() string {
	return fmt.Sprintf("%d node(s) run %d (%s)", r.Nodes, r.Index, r.modeLabel())
}

// modeLabel is the run's mode and, for a -with-addons run, "+" and its
// added addons, for a -with-flags run its flags, e.g. "cold +ingress" or
// "cold --ephemeral".
func (r Run) modeLabel() string { return modeLabel(r.Mode, r.Addons, r.Flags) }

// modeLabel is the label of the summary row's runs (Run.modeLabel).
func (s Summary) modeLabel() string { return modeLabel(s.Mode, s.Addons, s.Flags) }

// variant reports whether s is of -with-addons or -with-flags runs.
func (s Summary) variant() bool { return s.Addons != "" || s.Flags != "" }

func modeLabel(mode, addons, flags string) string {
	if addons != "" {
		mode += " +" + addons
	}
	if flags != "" {
		mode += " " + flags
	}
	return mode
}

// Ready is the check, after up returned, that kubectl sees every node Ready.
type Ready struct {
	Ready    int      `json:"ready"`
	Total    int      `json:"total"`
	Expected int      `json:"expected"`
	NotReady []string `json:"not_ready,omitempty"`
	// Stale lists Ready nodes whose last heartbeat predates the up: their
	// Ready condition may be the previous run's, kept in etcd.
	Stale []string `json:"stale,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Memory is the RSS of the cluster's processes, sampled once.
type Memory struct {
	// SampledAfterSeconds is when the sample was taken, after up returned.
	SampledAfterSeconds float64   `json:"sampled_after_seconds"`
	Processes           []ProcRSS `json:"processes"`
	TotalBytes          uint64    `json:"total_bytes"`
	// TotalPSSBytes is the sum of the processes' PSS: unlike RSS, it
	// counts the pages processes share (every Kubernetes component runs
	// the one multi-call binary) once, split between them.
	TotalPSSBytes uint64 `json:"total_pss_bytes"`
	// Missing lists the components expected to run that had no live process.
	Missing []string `json:"missing,omitempty"`
}

// ProcRSS is the RSS (VmRSS) of one component, or the sum over a group of
// processes (a node's shims, a node's pod processes).
type ProcRSS struct {
	Scope     string `json:"scope"` // "control-plane", "supervisor" or a node name
	Component string `json:"component"`
	PIDs      []int  `json:"pids"`
	RSSBytes  uint64 `json:"rss_bytes"`
	// PSSBytes is the proportional set size (Pss of
	// /proc/<pid>/smaps_rollup), summed like RSSBytes.
	PSSBytes uint64 `json:"pss_bytes"`
}

// BootCPU is the CPU time spent while `kubernix up` ran, invocation to
// return (the cluster Ready), in seconds of one core.
type BootCPU struct {
	// MachineSeconds is every core's busy time over the whole machine
	// (MachineBusySeconds after up less before): the cluster's processes,
	// the ones they ran and exited (nft, runc, …), up's CLI and anything
	// else that ran meanwhile.
	MachineSeconds float64 `json:"machine_seconds"`
	// Busy is MachineSeconds / (cores × UpSeconds): near 1, the boot was
	// CPU-bound, and no ordering of its work can make it shorter than
	// its CPU time divided by the cores.
	Busy float64 `json:"busy"`
	// Processes is the CPU time of the cluster's processes since they
	// started (SampleCPU), sampled as up returned; ClusterSeconds is
	// their sum.
	Processes      []ProcCPU `json:"processes"`
	ClusterSeconds float64   `json:"cluster_seconds"`
}

// ProcCPU is the CPU time of one component's processes (a node's shims,
// a node's pod processes), children they reaped included, in seconds.
type ProcCPU struct {
	Scope     string  `json:"scope"` // "control-plane", "supervisor" or a node name
	Component string  `json:"component"`
	PIDs      []int   `json:"pids"`
	Seconds   float64 `json:"seconds"`
}

// ImportRun is one timed `kubernix image load`.
type ImportRun struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// MBps is Bytes / 10^6 / Seconds.
	MBps  float64 `json:"mb_per_s"`
	Error string  `json:"error,omitempty"`
}

// ImportSummary describes the image-import measurement as a whole.
type ImportSummary struct {
	// Available is false when this kubernix has no `image load`, or the
	// measurement was skipped; Note says which.
	Available bool   `json:"available"`
	Note      string `json:"note,omitempty"`
	Ref       string `json:"ref,omitempty"`
	Bytes     int64  `json:"bytes,omitempty"`
	// Ratios are median time into 3 nodes / median time into 1 node, per mode.
	Ratios []ImportRatio `json:"ratios,omitempty"`
}

// ImportRatio compares import times between two sizes in one mode.
type ImportRatio struct {
	Mode  string  `json:"mode"`
	From  int     `json:"from_nodes"`
	To    int     `json:"to_nodes"`
	Ratio float64 `json:"ratio"`
}

// Summary aggregates the runs of one size and mode. Times are seconds,
// memory bytes; only runs whose up succeeded count, except for Down.
type Summary struct {
	Nodes int    `json:"nodes"`
	Mode  string `json:"mode"`
	// Addons are the addons the runs added (Run.Addons).
	Addons string `json:"addons,omitempty"`
	// Flags are the up flags the runs added (Run.Flags).
	Flags           string `json:"flags,omitempty"`
	Runs            int    `json:"runs"`
	Failed          int    `json:"failed"`
	Wall            Stat   `json:"wall_seconds"`
	SupervisorTotal Stat   `json:"supervisor_total_seconds"`
	Startup         Stat   `json:"startup_seconds"`
	Prepare         Stat   `json:"prepare_seconds"`
	Handover        Stat   `json:"handover_seconds"`
	CriticalPath    Stat   `json:"critical_path_seconds"`
	Overhead        Stat   `json:"overhead"`
	Down            Stat   `json:"down_seconds"`
	// AppRunning and DNS are the time-to-k8s flow's (TimeToK8s), seconds
	// from up invoked; empty without it.
	AppRunning Stat `json:"app_running_seconds"`
	DNS        Stat `json:"dns_answering_seconds"`
	// AddonsHealthy is TimeToK8s.AddonsSeconds: every addon healthy,
	// those deployed after Ready included.
	AddonsHealthy Stat `json:"addons_healthy_seconds"`
	RSSTotal      Stat `json:"rss_total_bytes"`
	PSSTotal      Stat `json:"pss_total_bytes"`
	// MachineCPU, Busy and ClusterCPU are BootCPU's MachineSeconds, Busy
	// and ClusterSeconds; CPU is the cluster's per component kind, summed
	// over the nodes of a run. Empty without BootCPU.
	MachineCPU Stat        `json:"machine_cpu_seconds"`
	Busy       Stat        `json:"busy"`
	ClusterCPU Stat        `json:"cluster_cpu_seconds"`
	CPU        []NamedStat `json:"cpu_seconds,omitempty"`
	// RSS is per component kind, summed over the nodes of a run.
	RSS []NamedStat `json:"rss_bytes"`
	// PSS is RSS for the proportional set size; empty in reports from
	// before PSS was sampled.
	PSS    []NamedStat `json:"pss_bytes,omitempty"`
	Phases []KindStat  `json:"phases"`
	// Steps is the critical path per phase.
	Steps  []StepStat  `json:"critical_path_steps"`
	Import *ImportStat `json:"image_import,omitempty"`
}

// NamedStat is a Stat with a name.
type NamedStat struct {
	Name string `json:"name"`
	Stat Stat   `json:"stat"`
}

// KindStat is the boot of one component kind across runs.
type KindStat struct {
	Kind    string `json:"kind"`
	Phase   string `json:"phase"`
	Count   int    `json:"count"`
	Started Stat   `json:"started_seconds"`
	Ready   Stat   `json:"ready_seconds"`
}

// StepStat is one phase of the critical path across runs: how long its
// slowest component took, and which component kind that was most often.
type StepStat struct {
	Phase     string `json:"phase"`
	Component string `json:"component"`
	Seconds   Stat   `json:"seconds"`
}

// ImportStat is the image import across runs.
type ImportStat struct {
	Seconds Stat `json:"seconds"`
	MBps    Stat `json:"mb_per_s"`
	Failed  int  `json:"failed"`
}

// Summarize fills r.Summary, r.MarginalRSS, r.Import.Ratios and r.Failures
// from r.Runs.
func (r *Report) Summarize() {
	r.Summary = nil
	r.Failures, r.Notes = nil, nil
	type key struct {
		nodes               int
		mode, addons, flags string
	}
	groups := map[key][]Run{}
	var keys []key
	for _, run := range r.Runs {
		k := key{run.Nodes, run.Mode, run.Addons, run.Flags}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], run)
		for _, f := range run.Failures {
			r.Failures = append(r.Failures, run.label()+": "+f)
		}
		for _, n := range run.Notes {
			r.Notes = append(r.Notes, run.label()+": "+n)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].nodes != keys[j].nodes {
			return keys[i].nodes < keys[j].nodes
		}
		if keys[i].mode != keys[j].mode {
			return keys[i].mode < keys[j].mode // cold before warm
		}
		if keys[i].addons != keys[j].addons {
			return keys[i].addons < keys[j].addons // the settings' addons first
		}
		return keys[i].flags < keys[j].flags
	})
	for _, k := range keys {
		s := summarizeRuns(k.nodes, k.mode, groups[k])
		s.Addons, s.Flags = k.addons, k.flags
		r.Summary = append(r.Summary, s)
	}
	r.MarginalRSS = marginalFit(r.Runs, func(m *Memory) uint64 { return m.TotalBytes })
	r.MarginalPSS = marginalFit(r.Runs, func(m *Memory) uint64 { return m.TotalPSSBytes })
	r.Import.Ratios = importRatios(r.Summary)
}

// summarizeRuns aggregates the runs of one size and mode.
func summarizeRuns(nodes int, mode string, runs []Run) Summary {
	acc := newRunAcc()
	failed := 0
	for _, run := range runs {
		if !run.OK() {
			failed++
		}
		acc.add(run)
	}
	s := acc.summary()
	s.Nodes, s.Mode, s.Runs, s.Failed = nodes, mode, len(runs), failed
	return s
}

// runAcc collects the samples of a group of runs, in first-seen order, for
// summarizeRuns. Times are seconds, memory bytes.
type runAcc struct {
	wall, sup, startup, prep, handover, cp, over, down, rss, pss []float64
	app, dns, addons                                             []float64
	machineCPU, busy, clusterCPU                                 []float64
	cpuBy                                                        map[string][]float64 // per component kind
	cpuOrder                                                     []string

	rssBy    map[string][]float64 // per component kind
	pssBy    map[string][]float64 // per component kind
	rssOrder []string

	kinds     map[string]*kindAcc
	kindOrder []string

	steps     map[string][]float64      // critical-path seconds per phase
	stepComp  map[string]map[string]int // per phase: component kinds → count
	stepOrder []string

	impSec, impRate []float64
	impFailed       int
}

// kindAcc is the boot of one component kind across runs.
type kindAcc struct {
	phase          string
	count          int
	started, ready []float64
}

func newRunAcc() *runAcc {
	return &runAcc{
		rssBy:    map[string][]float64{},
		pssBy:    map[string][]float64{},
		cpuBy:    map[string][]float64{},
		kinds:    map[string]*kindAcc{},
		steps:    map[string][]float64{},
		stepComp: map[string]map[string]int{},
	}
}

// add records one run. Only runs whose up succeeded count, except for down
// and the image import.
func (a *runAcc) add(run Run) {
	if run.DownError == "" && run.DownSeconds > 0 {
		a.down = append(a.down, run.DownSeconds)
	}
	if run.Import != nil {
		if run.Import.Error != "" {
			a.impFailed++
		} else {
			a.impSec = append(a.impSec, run.Import.Seconds)
			a.impRate = append(a.impRate, run.Import.MBps)
		}
	}
	if run.UpError != "" {
		return
	}
	a.wall = append(a.wall, run.UpSeconds)
	if run.Timings != nil {
		a.sup = append(a.sup, run.SupervisorTotalSeconds)
		a.startup = append(a.startup, run.StartupSeconds)
		a.handover = append(a.handover, run.HandoverSeconds)
	}
	if run.CriticalPath != nil {
		a.addCriticalPath(run.CriticalPath)
	}
	if run.Overhead > 0 {
		a.over = append(a.over, run.Overhead)
	}
	a.addKinds(run.Kinds)
	if t := run.TimeToK8s; t != nil && t.Error == "" {
		a.app, a.dns = append(a.app, t.AppRunningSeconds), append(a.dns, t.DNSSeconds)
		if t.AddonsSeconds > 0 {
			a.addons = append(a.addons, t.AddonsSeconds)
		}
	}
	if run.Memory != nil {
		a.addMemory(run.Memory)
	}
	if run.BootCPU != nil {
		a.addBootCPU(run.BootCPU)
	}
}

// addBootCPU records one run's boot CPU, summing the cluster's per
// component kind.
func (a *runAcc) addBootCPU(c *BootCPU) {
	a.machineCPU = append(a.machineCPU, c.MachineSeconds)
	a.busy = append(a.busy, c.Busy)
	a.clusterCPU = append(a.clusterCPU, c.ClusterSeconds)
	by := map[string]float64{}
	for _, p := range c.Processes {
		if _, ok := a.cpuBy[p.Component]; !ok {
			a.cpuOrder = append(a.cpuOrder, p.Component)
			a.cpuBy[p.Component] = nil
		}
		by[p.Component] += p.Seconds
	}
	for kind, v := range by {
		a.cpuBy[kind] = append(a.cpuBy[kind], v)
	}
}

// addCriticalPath records one run's critical path. A phase may hold more
// than one link of the chain: its share is their sum.
func (a *runAcc) addCriticalPath(cp *CriticalPath) {
	a.prep = append(a.prep, cp.PrepareSeconds)
	a.cp = append(a.cp, cp.TotalSeconds)
	runSec, runComp := map[string]float64{}, map[string][]string{}
	for _, st := range cp.Steps {
		if _, ok := a.steps[st.Phase]; !ok {
			a.stepOrder = append(a.stepOrder, st.Phase)
			a.stepComp[st.Phase] = map[string]int{}
			a.steps[st.Phase] = nil
		}
		runSec[st.Phase] += st.Seconds
		runComp[st.Phase] = append(runComp[st.Phase], kindOf(st.Component))
	}
	for ph, sec := range runSec {
		a.steps[ph] = append(a.steps[ph], sec)
		a.stepComp[ph][strings.Join(runComp[ph], " + ")]++
	}
}

// addKinds records one run's boot times per component kind.
func (a *runAcc) addKinds(kinds []KindTiming) {
	for _, k := range kinds {
		acc, ok := a.kinds[k.Kind]
		if !ok {
			acc = &kindAcc{phase: k.Phase, count: k.Count}
			a.kinds[k.Kind] = acc
			a.kindOrder = append(a.kindOrder, k.Kind)
		}
		acc.started = append(acc.started, k.StartedSeconds)
		acc.ready = append(acc.ready, k.ReadySeconds)
	}
}

// addMemory records one run's memory sample, summing RSS and PSS per
// component kind.
func (a *runAcc) addMemory(m *Memory) {
	a.rss = append(a.rss, float64(m.TotalBytes))
	if m.TotalPSSBytes > 0 {
		a.pss = append(a.pss, float64(m.TotalPSSBytes))
	}
	rss, pss := map[string]float64{}, map[string]float64{}
	for _, p := range m.Processes {
		if _, ok := rss[p.Component]; !ok {
			if _, seen := a.rssBy[p.Component]; !seen {
				a.rssOrder = append(a.rssOrder, p.Component)
			}
		}
		rss[p.Component] += float64(p.RSSBytes)
		pss[p.Component] += float64(p.PSSBytes)
	}
	for kind, v := range rss {
		a.rssBy[kind] = append(a.rssBy[kind], v)
	}
	if m.TotalPSSBytes > 0 {
		for kind, v := range pss {
			a.pssBy[kind] = append(a.pssBy[kind], v)
		}
	}
}

// summary returns the statistics of what was added; phases and steps are in
// boot order.
func (a *runAcc) summary() Summary {
	var s Summary
	s.Wall, s.SupervisorTotal, s.Prepare = Summarize(a.wall), Summarize(a.sup), Summarize(a.prep)
	s.Startup, s.Handover = Summarize(a.startup), Summarize(a.handover)
	s.CriticalPath, s.Overhead, s.Down, s.RSSTotal = Summarize(a.cp), Summarize(a.over), Summarize(a.down), Summarize(a.rss)
	s.PSSTotal = Summarize(a.pss)
	s.AppRunning, s.DNS, s.AddonsHealthy = Summarize(a.app), Summarize(a.dns), Summarize(a.addons)
	s.MachineCPU, s.Busy, s.ClusterCPU = Summarize(a.machineCPU), Summarize(a.busy), Summarize(a.clusterCPU)
	for _, name := range a.cpuOrder {
		s.CPU = append(s.CPU, NamedStat{Name: name, Stat: Summarize(a.cpuBy[name])})
	}
	for _, name := range a.rssOrder {
		s.RSS = append(s.RSS, NamedStat{Name: name, Stat: Summarize(a.rssBy[name])})
		if v := a.pssBy[name]; len(v) > 0 {
			s.PSS = append(s.PSS, NamedStat{Name: name, Stat: Summarize(v)})
		}
	}
	for _, k := range a.kindOrder {
		acc := a.kinds[k]
		s.Phases = append(s.Phases, KindStat{Kind: k, Phase: acc.phase, Count: acc.count, Started: Summarize(acc.started), Ready: Summarize(acc.ready)})
	}
	rank := phaseRank()
	sort.SliceStable(s.Phases, func(i, j int) bool { return rank(s.Phases[i].Phase) < rank(s.Phases[j].Phase) })
	sort.SliceStable(a.stepOrder, func(i, j int) bool { return rank(a.stepOrder[i]) < rank(a.stepOrder[j]) })
	for _, ph := range a.stepOrder {
		s.Steps = append(s.Steps, StepStat{Phase: ph, Component: mostCommon(a.stepComp[ph]), Seconds: Summarize(a.steps[ph])})
	}
	if len(a.impSec) > 0 || a.impFailed > 0 {
		s.Import = &ImportStat{Seconds: Summarize(a.impSec), MBps: Summarize(a.impRate), Failed: a.impFailed}
	}
	return s
}

// mostCommon returns the key with the highest count, the first by name on
// a tie.
func mostCommon(m map[string]int) string {
	best, n := "", -1
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}

// marginalRSS fits the median total RSS of each size (all modes, runs with
// a memory sample) against the node count.
func marginalFit(runs []Run, total func(*Memory) uint64) *Fit {
	bySize := map[int][]float64{}
	for _, r := range runs {
		if r.Memory != nil && r.UpError == "" && total(r.Memory) > 0 && r.Addons == "" && r.Flags == "" {
			bySize[r.Nodes] = append(bySize[r.Nodes], float64(total(r.Memory)))
		}
	}
	var sizes []int
	for n := range bySize {
		sizes = append(sizes, n)
	}
	sort.Ints(sizes)
	var pts [][2]float64
	for _, n := range sizes {
		pts = append(pts, [2]float64{float64(n), Summarize(bySize[n]).Median})
	}
	f, ok := LinearFit(pts)
	if !ok {
		return nil
	}
	return &f
}

// importRatios compares the median import time into 3 nodes with that into
// 1 node, per mode where both were measured.
func importRatios(sums []Summary) []ImportRatio {
	var out []ImportRatio
	for _, mode := range []string{ModeCold, ModeWarm} {
		var one, three *ImportStat
		for _, s := range sums {
			if s.Mode != mode || s.variant() || s.Import == nil || s.Import.Seconds.N == 0 {
				continue
			}
			switch s.Nodes {
			case 1:
				one = s.Import
			case 3:
				three = s.Import
			}
		}
		if one != nil && three != nil && one.Seconds.Median > 0 {
			out = append(out, ImportRatio{Mode: mode, From: 1, To: 3, Ratio: three.Seconds.Median / one.Seconds.Median})
		}
	}
	return out
}

// WriteFiles writes r as JSON and Markdown into dir: bench-<stamp>.json and
// .md, its boot timelines as a Gantt chart (TimelineSVG) in .svg, and
// copies as latest.json, latest.md and latest.svg. It returns the
// Markdown path.
func (r *Report) WriteFiles(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	var md strings.Builder
	if err := r.Markdown(&md); err != nil {
		return "", err
	}
	stamp := r.Started.UTC().Format("20060102-150405")
	base := filepath.Join(dir, "bench-"+stamp)
	files := map[string][]byte{
		base + ".json":                    append(js, '\n'),
		base + ".md":                      []byte(md.String()),
		filepath.Join(dir, "latest.json"): append(js, '\n'),
		filepath.Join(dir, "latest.md"):   []byte(md.String()),
	}
	if svg := TimelineSVG(r.Summary); svg != nil {
		files[base+".svg"], files[filepath.Join(dir, "latest.svg")] = svg, svg
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(p, files[p], 0o644); err != nil {
			return "", err
		}
	}
	return base + ".md", nil
}

// Markdown renders r for people: a header with the revision and machine,
// then tables of times, boot phases, critical path, memory and image
// import, then the failures. The output depends only on r.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	dirty := ""
	if r.Git.Dirty {
		dirty = " (dirty)"
	}
	p("# kubernix bench %s\n\n", r.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	p("- revision: `%s`%s\n", orDash(r.Git.Revision), dirty)
	p("- machine: %d cores, %s memory, kernel %s\n", r.Machine.Cores, gib(r.Machine.MemTotalBytes), orDash(r.Machine.Kernel))
	p("- versions: %s", orDash(r.Versions.Kubernix))
	for _, k := range slices.Sorted(maps.Keys(r.Versions.Upstream)) {
		p(", %s %s", strings.TrimSuffix(strings.ToLower(k), "_version"), r.Versions.Upstream[k])
	}
	p("\n")
	addons := r.Settings.Addons
	if addons == "" {
		addons = "default"
	}
	netpol := "on"
	if !r.Settings.NetworkPolicy {
		netpol = "off (`--network-policy=false`)"
	}
	family := r.Settings.IPFamily
	if family == "" {
		family = "ipv4"
	}
	p("- settings: nodes %s × %d run(s) (%d cold), cluster `%s`, state dir `%s`, cidr %s, IP family %s, addons %s, network policy %s; took %s\n",
		joinInts(r.Settings.Nodes), r.Settings.Runs, r.Settings.ColdRuns, r.Settings.Name, r.Settings.StateDir, r.Settings.CIDR,
		family, addons, netpol, r.Finished.Sub(r.Started).Round(time.Second))
	p("\nValues are `median [min–max]` over the runs of a row. *cold*: fresh state dir (PKI generated, empty etcd and\n")
	p("containerd stores); *warm*: the previous run's state dir (PKI, etcd data and images reused).\n")

	r.markdownTimes(p)
	r.markdownTimeToK8s(p)
	r.markdownAddonCost(p)
	r.markdownCriticalPath(p)
	r.markdownBootCPU(p)
	r.markdownTimeline(p)
	r.markdownMemory(p)
	r.markdownImport(p)
	r.markdownRuns(p)
	r.markdownFailures(p)
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownTimes writes the time-to-Ready table.
func (r *Report) markdownTimes(p func(format string, args ...any)) {
	p("\n## Time to Ready (seconds)\n\n")
	p("*wall*: `kubernix up --detach` invoked → returned (every node Ready, CoreDNS Available). *startup*: invoked →\n")
	p("Prepare began (CLI, host checks, detached supervisor start). *prepare*: network, PKI, kubeconfigs.\n")
	p("*supervisor*: the supervisor's own up (timings.json total, prepare included). *hand-over*: last component\n")
	p("ready → up returned. *critical path*: prepare + the longest chain of components each needing the one before\n")
	p("(each component's own start → ready; see the next table).\n")
	p("*overhead*: wall / critical path. *down*: `kubernix down`.\n\n")
	p("| nodes | mode | runs | wall | startup | prepare | supervisor | hand-over | critical path | overhead | down | failed |\n")
	p("|---:|---|---:|---|---|---|---|---|---|---|---|---:|\n")
	for _, s := range r.Summary {
		p("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", s.Nodes, s.modeLabel(), s.Runs,
			fmtStat(s.Wall, "%.1f"), fmtStat(s.Startup, "%.1f"), fmtStat(s.Prepare, "%.2f"), fmtStat(s.SupervisorTotal, "%.1f"),
			fmtStat(s.Handover, "%.2f"), fmtStat(s.CriticalPath, "%.1f"), fmtStat(s.Overhead, "%.2f×"), fmtStat(s.Down, "%.1f"), s.Failed)
	}

}

// markdownTimeToK8s writes the time-to-k8s table, for the sizes and modes
// whose runs had the flow.
func (r *Report) markdownTimeToK8s(p func(format string, args ...any)) {
	if !slices.ContainsFunc(r.Summary, func(s Summary) bool { return s.DNS.N > 0 }) {
		return
	}
	p("\n## Time to k8s (seconds from `kubernix up` invoked)\n\n")
	p("minikube's time-to-k8s flow, right after up returned: *app running*: a Deployment (one busybox pod) applied and\n")
	p("its pod Ready (`kubectl rollout status`); *DNS answering*: then `nslookup kubernetes.default` in that pod\n")
	p("answered (`kubectl exec`, every 100 ms). Each includes up's wall time and the kubectl invocations.\n")
	p("*Addons healthy*: then `kubernix status` reports every addon healthy, those deployed once the cluster\n")
	p("is Ready (ingress) included.\n\n")
	p("| nodes | mode | up returned | app running | DNS answering | addons healthy |\n|---:|---|---|---|---|---|\n")
	for _, s := range r.Summary {
		if s.DNS.N == 0 {
			continue
		}
		p("| %d | %s | %s | %s | %s | %s |\n", s.Nodes, s.modeLabel(), fmtStat(s.Wall, "%.1f"),
			fmtStat(s.AppRunning, "%.1f"), fmtStat(s.DNS, "%.1f"), fmtStat(s.AddonsHealthy, "%.1f"))
	}
}

// markdownAddonCost writes, with -with-addons or -with-flags, what
// they cost: per size, the medians of the cold runs with them against
// those without (run alternately), time to Ready, DNS answering and PSS.
func (r *Report) markdownAddonCost(p func(format string, args ...any)) {
	what := strings.TrimSpace(modeLabel("", r.Settings.WithAddons, r.Settings.WithFlags))
	if what == "" {
		return
	}
	p("\n## Cost of %s (cold runs, alternately with and without)\n\n", what)
	p("| nodes | wall without (s) | wall with (s) | Δ wall (s) | DNS answering without (s) | with (s) | Δ (s) | PSS without (MiB) | PSS with (MiB) | Δ PSS (MiB) |\n")
	p("|---:|---|---|---:|---|---|---:|---|---|---:|\n")
	for _, with := range r.Summary {
		if !with.variant() || with.Mode != ModeCold {
			continue
		}
		i := slices.IndexFunc(r.Summary, func(s Summary) bool {
			return s.Nodes == with.Nodes && s.Mode == ModeCold && !s.variant()
		})
		if i < 0 {
			continue
		}
		without := r.Summary[i]
		p("| %d | %s | %s | %+.1f | %s | %s | %+.1f | %s | %s | %+.0f |\n", with.Nodes, fmtStat(without.Wall, "%.1f"), fmtStat(with.Wall, "%.1f"),
			with.Wall.Median-without.Wall.Median, fmtStat(without.DNS, "%.1f"), fmtStat(with.DNS, "%.1f"), with.DNS.Median-without.DNS.Median,
			fmtStatFunc(without.PSSTotal, mib), fmtStatFunc(with.PSSTotal, mib), (with.PSSTotal.Median-without.PSSTotal.Median)/(1<<20))
	}
}

// markdownCriticalPath writes the critical path per size and mode.
func (r *Report) markdownCriticalPath(p func(format string, args ...any)) {
	p("\n## Critical path (seconds: the longest chain of components each needing the one before, by phase)\n\n")
	phases := summaryPhases(r.Summary)
	p("| nodes | mode | prepare |")
	for _, ph := range phases {
		p(" %s |", ph)
	}
	p(" sum |\n|---:|---|---|%s---|\n", strings.Repeat("---|", len(phases)))
	for _, s := range r.Summary {
		p("| %d | %s | %s |", s.Nodes, s.modeLabel(), fmtMedian(s.Prepare, "%.2f"))
		for _, ph := range phases {
			cell := "–"
			for _, st := range s.Steps {
				if st.Phase == ph {
					cell = fmt.Sprintf("%s %s", fmtMedian(st.Seconds, "%.2f"), st.Component)
				}
			}
			p(" %s |", cell)
		}
		p(" %s |\n", fmtMedian(s.CriticalPath, "%.2f"))
	}

}

// markdownTimeline writes when each component kind started and was ready.
func (r *Report) markdownTimeline(p func(format string, args ...any)) {
	p("\n## Boot timeline (seconds from the first component start: started → ready, medians)\n\n")
	p("Per-node components show the first start and the last ready over the nodes; *ready* is when the\n")
	p("component's start returned (readiness probe passed and after-ready hooks ran, e.g. containerd's\n")
	p("built-in image import). Prepare runs before the origin. The same medians, drawn as a Gantt chart, are in\n")
	p("the .svg beside this report (latest.svg beside latest.md).\n\n")
	kinds := summaryKinds(r.Summary)
	p("| component | phase |")
	for _, s := range r.Summary {
		p(" %d %s |", s.Nodes, s.modeLabel())
	}
	p("\n|---|---|%s\n", strings.Repeat("---|", len(r.Summary)))
	for _, k := range kinds {
		p("| %s | %s |", k[0], k[1])
		for _, s := range r.Summary {
			cell := "–"
			for _, ks := range s.Phases {
				if ks.Kind == k[0] {
					cell = fmt.Sprintf("%.2f → %.2f", ks.Started.Median, ks.Ready.Median)
				}
			}
			p(" %s |", cell)
		}
		p("\n")
	}

}

// markdownBootCPU writes the CPU time of the boot per size and mode, and
// the floor it sets on the time to Ready; nothing for reports without it.
func (r *Report) markdownBootCPU(p func(format string, args ...any)) {
	comps := componentColumns(r.Summary, func(s Summary) []NamedStat { return s.CPU })
	if len(comps) == 0 {
		return
	}
	cores := r.Machine.Cores
	p("\n## CPU to Ready (CPU-seconds, medians)\n\n")
	p("While `up` ran (invoked → returned): *machine* is the busy time of all %d cores (/proc/stat), *busy* that\n", cores)
	p("over cores × wall; *cluster* is what the cluster's processes used since they started (their user and\n")
	p("system time and their reaped children's, /proc/<pid>/stat), per component kind below. A boot near 100%% busy is\n")
	p("CPU-bound: its *floor*, cluster CPU / cores, is the shortest wall it can have on this machine, whatever\n")
	p("the order of its work; only less CPU makes it shorter.\n\n")
	p("| nodes | mode | wall (s) | machine | busy | cluster | floor (s) |\n|---:|---|---|---|---|---|---|\n")
	for _, s := range r.Summary {
		if s.ClusterCPU.N == 0 {
			continue
		}
		floor := "–"
		if cores > 0 {
			floor = fmt.Sprintf("%.1f", s.ClusterCPU.Median/float64(cores))
		}
		p("| %d | %s | %s | %s | %s | %s | %s |\n", s.Nodes, s.modeLabel(), fmtStat(s.Wall, "%.1f"), fmtStat(s.MachineCPU, "%.1f"),
			fmtStatFunc(s.Busy, func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }), fmtStat(s.ClusterCPU, "%.1f"), floor)
	}
	p("\n### CPU per component (CPU-seconds to Ready, medians; summed over the nodes)\n\n")
	componentHeader(p, comps)
	p("\n|---:|---|%s\n", strings.Repeat("---:|", len(comps)))
	for _, s := range r.Summary {
		if s.ClusterCPU.N == 0 {
			continue
		}
		componentRow(p, s, comps, s.CPU, func(_ string, st Stat) string { return fmt.Sprintf("%.2f", st.Median) })
		p("\n")
	}
}

// markdownMemory writes the RSS table and the marginal RSS per node.
func (r *Report) markdownMemory(p func(format string, args ...any)) {
	p("\n## Memory (RSS in MiB, medians)\n\n")
	p("%s\n\n", memoryNote(r.Runs))
	comps := summaryRSSComponents(r.Summary)
	componentHeader(p, comps)
	p(" total | total/nodes | PSS total |\n|---:|---|%s---|---|---|\n", strings.Repeat("---:|", len(comps)))
	for _, s := range r.Summary {
		componentRow(p, s, comps, s.RSS, func(_ string, st Stat) string { return mib(st.Median) })
		perNode := "–"
		if s.RSSTotal.N > 0 && s.Nodes > 0 {
			perNode = mib(s.RSSTotal.Median / float64(s.Nodes))
		}
		p(" %s | %s | %s |\n", fmtStatFunc(s.RSSTotal, mib), perNode, fmtStatFunc(s.PSSTotal, mib))
	}
	p("\nPer-node components are summed over the nodes. ")
	if f := r.MarginalRSS; f != nil {
		p("Marginal RSS per added node: **%s MiB** (least-squares fit of the median total over %d sizes; intercept %s MiB).\n",
			mib(f.Slope), len(f.Points), mib(f.Intercept))
	} else {
		p("Marginal RSS per added node: not available (needs two sizes).\n")
	}
	if f := r.MarginalPSS; f != nil {
		p("PSS counts the pages processes share once (every Kubernetes component runs one multi-call binary): marginal PSS per added node **%s MiB** (intercept %s MiB).\n",
			mib(f.Slope), mib(f.Intercept))
	}
	r.markdownPSS(p)

}

// nodeKinds are the component kinds of the memory tables that run once
// per node.
var nodeKinds = append(slices.Clone(nodeComponents), "shims", "pods")

// markdownPSS writes the PSS per component kind, per node for the kinds
// that run on every node; nothing for reports without PSS.
func (r *Report) markdownPSS(p func(format string, args ...any)) {
	comps := summaryPSSComponents(r.Summary)
	if len(comps) == 0 {
		return
	}
	p("\n### PSS per component (MiB, medians; per node for the node's components)\n\n")
	componentHeader(p, comps)
	p("\n|---:|---|%s\n", strings.Repeat("---:|", len(comps)))
	for _, s := range r.Summary {
		componentRow(p, s, comps, s.PSS, func(c string, st Stat) string {
			v := st.Median
			if slices.Contains(nodeKinds, c) && s.Nodes > 0 {
				v /= float64(s.Nodes)
			}
			return fmt.Sprintf("%.1f", v/(1<<20))
		})
		p("\n")
	}
}

// componentHeader writes the first cells of a per-component table's
// header: nodes, mode and the component kinds comps.
func componentHeader(p func(format string, args ...any), comps []string) {
	p("| nodes | mode |")
	for _, c := range comps {
		p(" %s |", c)
	}
}

// componentRow writes the first cells of summary s's row: its size, mode
// and, per kind of comps, cell of its stat in stats, or "–" for none.
func componentRow(p func(format string, args ...any), s Summary, comps []string, stats []NamedStat, cell func(kind string, st Stat) string) {
	p("| %d | %s |", s.Nodes, s.modeLabel())
	for _, c := range comps {
		text := "–"
		for _, ns := range stats {
			if ns.Name == c && ns.Stat.N > 0 {
				text = cell(c, ns.Stat)
			}
		}
		p(" %s |", text)
	}
}

// markdownImport writes the image import table, or why it was not measured.
func (r *Report) markdownImport(p func(format string, args ...any)) {
	p("\n## Image import\n\n")
	switch {
	case !r.Import.Available:
		p("Not measured: %s.\n", r.Import.Note)
	default:
		p("`kubernix image load` of a %.1f MB single-layer image (%s; seeded random, incompressible), into every node.\n\n",
			float64(r.Import.Bytes)/1e6, "`"+r.Import.Ref+"`")
		p("| nodes | mode | time (s) | MB/s | failed |\n|---:|---|---|---|---:|\n")
		for _, s := range r.Summary {
			if s.Import == nil {
				continue
			}
			p("| %d | %s | %s | %s | %d |\n", s.Nodes, s.Mode, fmtStat(s.Import.Seconds, "%.2f"), fmtStat(s.Import.MBps, "%.1f"), s.Import.Failed)
		}
		for _, ra := range r.Import.Ratios {
			p("\nTime into %d nodes / time into %d node (%s): **%.2f×**\n", ra.To, ra.From, ra.Mode, ra.Ratio)
		}
		if r.Import.Note != "" {
			p("\n%s\n", r.Import.Note)
		}
	}

}

// markdownRuns writes one row per run.
func (r *Report) markdownRuns(p func(format string, args ...any)) {
	p("\n## Runs\n\n")
	p("| nodes | run | mode | PKI reused | executor | load avg | wall | down | leftovers | result |\n")
	p("|---:|---:|---|---|---|---|---:|---:|---:|---|\n")
	for _, run := range r.Runs {
		res := "ok"
		if !run.OK() {
			res = fmt.Sprintf("%d failure(s)", len(run.Failures))
		}
		p("| %d | %d | %s | %t | %s | %s | %.1f | %.1f | %d | %s |\n", run.Nodes, run.Index, run.modeLabel(), run.PKIReused,
			orDash(run.Executor), orDash(firstFields(run.LoadAvg, 3)), run.UpSeconds, run.DownSeconds, len(run.Leftovers), res)
	}

}

// markdownFailures writes the failures and notes.
func (r *Report) markdownFailures(p func(format string, args ...any)) {
	p("\n## Failures\n\n")
	if len(r.Failures) == 0 {
		p("None.\n")
	}
	for _, f := range r.Failures {
		p("- %s\n", strings.ReplaceAll(f, "\n", " ⏎ "))
	}
	if len(r.Notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
}

// memoryNote says when the memory was sampled.
func memoryNote(runs []Run) string {
	var after []float64
	for _, r := range runs {
		if r.Memory != nil {
			after = append(after, r.Memory.SampledAfterSeconds)
		}
	}
	if len(after) == 0 {
		return "No memory sample was taken."
	}
	st := Summarize(after)
	return fmt.Sprintf("VmRSS from /proc/<pid>/status, sampled once per run %.0f s after `up` returned. *shims*: the nodes'\n"+
		"containerd-shim-runc-v2 processes; *netpol-agent*: the nodes' NetworkPolicy agents; *pods*: the processes in the\n"+
		"nodes' pod cgroups (pause, CoreDNS). PSS from /proc/<pid>/smaps_rollup.", st.Median)
}

// summaryPhases lists the phases of every summary's critical path, in boot order.
func summaryPhases(sums []Summary) []string {
	m := map[string]bool{}
	for _, s := range sums {
		for _, st := range s.Steps {
			m[st.Phase] = true
		}
	}
	return phaseOrder(m)
}

// summaryKinds lists (kind, phase) of every summary's components, in boot
// order, ties by the order first seen.
func summaryKinds(sums []Summary) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, s := range sums {
		for _, k := range s.Phases {
			if !seen[k.Kind] {
				seen[k.Kind] = true
				out = append(out, [2]string{k.Kind, k.Phase})
			}
		}
	}
	rank := phaseRank()
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i][1]) < rank(out[j][1]) })
	return out
}

// componentOrder is the order of the per-component tables' columns (RSS,
// PSS, CPU); others follow in the order first seen.
var componentOrder = []string{"supervisor", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"sandbox", "containerd", "shims", "kubelet", "kube-proxy", "netpol-agent", "pods"}

func summaryRSSComponents(sums []Summary) []string {
	return componentColumns(sums, func(s Summary) []NamedStat { return s.RSS })
}

// summaryPSSComponents is summaryRSSComponents for the PSS columns.
func summaryPSSComponents(sums []Summary) []string {
	return componentColumns(sums, func(s Summary) []NamedStat { return s.PSS })
}

// componentColumns orders the component kinds of stats(s) over sums:
// those of componentOrder in its order, then the others in the order
// first seen.
func componentColumns(sums []Summary, stats func(Summary) []NamedStat) []string {
	seen := map[string]bool{}
	for _, s := range sums {
		for _, ns := range stats(s) {
			seen[ns.Name] = true
		}
	}
	var out []string
	for _, c := range componentOrder {
		if seen[c] {
			out = append(out, c)
			delete(seen, c)
		}
	}
	for _, s := range sums {
		for _, ns := range stats(s) {
			if seen[ns.Name] {
				out = append(out, ns.Name)
				delete(seen, ns.Name)
			}
		}
	}
	return out
}

// fmtStat renders "median [min–max]", or just the median for one value,
// or "–" for none.
func fmtStat(s Stat, format string) string {
	return fmtStatFunc(s, func(v float64) string { return fmt.Sprintf(format, v) })
}

func fmtStatFunc(s Stat, f func(float64) string) string {
	switch {
	case s.N == 0:
		return "–"
	case s.N == 1 || s.Min == s.Max:
		return f(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", f(s.Median), f(s.Min), f(s.Max))
}

func fmtMedian(s Stat, format string) string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf(format, s.Median)
}

func mib(bytes float64) string { return fmt.Sprintf("%.0f", bytes/(1<<20)) }

func gib(bytes uint64) string { return fmt.Sprintf("%.1f GiB", float64(bytes)/(1<<30)) }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func firstFields(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}
