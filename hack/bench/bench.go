package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/config"
)

// bench is one invocation: its options, the kubernix it drives, and the
// report it fills.
type bench struct {
	opts   options
	stdout io.Writer
	k      Kubernix
	report Report
	// image is the generated image tarball, "" when the import is not
	// measured.
	image      string
	imageBytes int64
}

// run measures every size and writes the report; see the package doc.
func (b *bench) run(ctx context.Context) (err error) {
	o := b.opts
	layout := Layout{Name: o.name, StateDir: o.stateDir}
	if pid, ok := SupervisorRunning(layout); ok {
		return fmt.Errorf("cluster %q is running in %s (supervisor pid %d): stop it with `%s down --name %s --state-dir %s`",
			o.name, o.stateDir, pid, filepath.Join(o.binDir, "kubernix"), o.name, o.stateDir)
	}
	b.report = Report{Started: time.Now(), Settings: o.settings()}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	stamp := b.report.Started.UTC().Format("20060102-150405")
	logPath := filepath.Join(o.out, "bench-"+stamp+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	tmp, err := os.MkdirTemp("", "kx-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A private kubeconfig: up merges the context into it, down removes it.
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	b.k = Kubernix{
		BinDir: o.binDir, Layout: layout, CIDR: o.cidr, Timeout: o.timeout, Addons: o.addons,
		NetworkPolicyOff: !o.networkPolicy, IPFamily: o.ipFamily,
		Run: Runner{Env: benchEnv(os.Environ(), kubeconfig), Log: logFile},
	}
	fmt.Fprintf(b.stdout, "bench: cluster %s in %s, cidr %s; transcript in %s\n", o.name, o.stateDir, o.cidr, logPath)
	b.describe(ctx)
	b.prepareImport(ctx, tmp)

	defer func() { err = b.finish(err) }()
	return b.runAll(ctx)
}

// settings are the options as recorded in the report.
func (o options) settings() Settings {
	return Settings{
		Nodes: o.nodes, Runs: o.runs, ColdRuns: o.cold, Name: o.name, StateDir: o.stateDir, CIDR: o.cidr, Addons: o.addons,
		NetworkPolicy: o.networkPolicy, IPFamily: o.ipFamily,
		WithAddons: o.withAddons, WithFlags: o.withFlags, RSSDelaySeconds: o.rssDelay.Seconds(), TimeoutSeconds: o.timeout.Seconds(),
		SkipImport: o.skipImport, ImportNodes: o.importNodes,
	}
}

// runAll runs every size -runs times (with -with-addons or -with-flags,
// each cold run after a cold run with those addons or flags added, so
// that the warm runs follow a run of the settings alone), then, unless a run failed or
// -keep-state is set, removes the state dir. It returns ctx's error.
func (b *bench) runAll(ctx context.Context) error {
	o := b.opts
	failed := false
	for _, n := range o.nodes {
		for i := 1; i <= o.runs; i++ {
			variants := []variant{{}}
			if (o.withAddons != "" || o.withFlags != "") && i <= o.cold {
				variants = []variant{{addons: o.withAddons, flags: o.withFlags}, {}}
			}
			for _, v := range variants {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r := b.runOnce(ctx, n, i, v)
				b.report.Runs = append(b.report.Runs, r)
				failed = failed || !r.OK()
				fmt.Fprintln(b.stdout, progressLine(r))
			}
		}
	}
	if !o.keepState && !failed {
		// The containerd stores alone take hundreds of MB per node.
		if err := b.freshStateDir(ctx); err != nil {
			fmt.Fprintf(b.stdout, "bench: state dir %s kept: %v\n", o.stateDir, err)
		}
	}
	return ctx.Err()
}

// finish summarizes the report, writes its files and prints it. It returns
// err joined with a failure to write, or, when err is nil, an error counting
// the runs' failures.
func (b *bench) finish(err error) error {
	b.report.Finished = time.Now()
	b.report.Summarize()
	md, werr := b.report.WriteFiles(b.opts.out)
	if werr != nil {
		return errors.Join(err, fmt.Errorf("write report: %w", werr))
	}
	_ = b.report.Markdown(b.stdout)
	fmt.Fprintf(b.stdout, "\nbench: report in %s (and latest.md/.json beside it)\n", md)
	if err == nil && len(b.report.Failures) > 0 {
		err = fmt.Errorf("%d failure(s), see the report", len(b.report.Failures))
	}
	return err
}

// benchEnv is environ without KUBECONFIG and KUBERNIX_* settings (the
// bench passes its own), with KUBECONFIG set to kubeconfig.
func benchEnv(environ []string, kubeconfig string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, config.EnvPrefix) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "KUBECONFIG="+kubeconfig)
}

// describe records the revision, machine and versions; what it cannot
// find is left empty (with the git error noted).
func (b *bench) describe(ctx context.Context) {
	r := &b.report
	if out, _, err := b.k.Run.Run(ctx, "git", "rev-parse", "HEAD"); err != nil {
		r.Git.Error = err.Error()
	} else {
		r.Git.Revision = strings.TrimSpace(string(out))
		out, _, err := b.k.Run.Run(ctx, "git", "status", "--porcelain")
		if err != nil {
			r.Git.Error = err.Error()
		}
		r.Git.Dirty = len(strings.TrimSpace(string(out))) > 0
	}
	r.Machine, _ = MachineInfo()
	if v, err := b.k.Version(ctx); err == nil {
		r.Versions = v
	}
}

// prepareImport decides whether the import is measured and, if so,
// generates the image into dir.
func (b *bench) prepareImport(ctx context.Context, dir string) {
	imp := &b.report.Import
	switch {
	case b.opts.skipImport:
		imp.Note = "skipped (-skip-import)"
		return
	case !slices.ContainsFunc(b.opts.nodes, func(n int) bool { return slices.Contains(b.opts.importNodes, n) }):
		imp.Note = fmt.Sprintf("no size in -nodes is in -import-nodes %s", joinInts(b.opts.importNodes))
		return
	case !b.k.ImageLoadAvailable(ctx):
		imp.Note = "not available: this kubernix has no `image load` (`kubernix image load --help` failed)"
		return
	}
	path := filepath.Join(dir, "image.tar")
	begin := time.Now()
	size, err := WriteRandomImage(path, int64(b.opts.importMB)*1_000_000)
	if err != nil {
		imp.Note = "could not generate the image: " + err.Error()
		return
	}
	fmt.Fprintf(b.stdout, "bench: generated %.1f MB image %s in %s\n", float64(size)/1e6, imageRef, time.Since(begin).Round(time.Millisecond))
	imp.Available, imp.Ref, imp.Bytes = true, imageRef, size
	b.image, b.imageBytes = path, size
}

// runOnce is one up, measure, down cycle of a cluster of nodes; indexes 1
// to -cold are cold runs (each from a fresh state dir). Whatever happens, it runs down and looks
// for leftovers.
func (b *bench) runOnce(ctx context.Context, nodes, index int, v variant) (r Run) {
	k := b.k
	r = Run{Nodes: nodes, Index: index, Mode: ModeWarm, Started: time.Now(), Addons: v.addons, Flags: v.flags}
	if v.addons != "" {
		k.Addons = withAddons(k.Addons, v.addons)
	}
	k.Flags = strings.Fields(v.flags)
	if !b.prepareRun(ctx, &r) {
		return r
	}

	var upChildren []procID
	upFailed := false
	defer func() {
		// A failed or interrupted up may leave its detached supervisor
		// booting: stop it first (it cleans up after itself), or down
		// would run before there is anything to bring down.
		if upFailed {
			if killed := stopProcesses(upChildren, 3*time.Minute); len(killed) > 0 {
				r.fail("supervisor did not exit on SIGTERM within 3m, killed: %v", killed)
			}
		}
		b.teardown(ctx, &r)
	}()

	busyBefore, busyErr := MachineBusySeconds()
	begin := time.Now()
	d, upChildren, err := k.Up(ctx, nodes)
	upFailed = err != nil
	r.UpSeconds = d.Seconds()
	upReturned := time.Now()
	if err != nil {
		r.UpError = err.Error()
		r.fail("up: %v", err)
		return r
	}
	if busyErr != nil {
		r.fail("read /proc/stat: %v", busyErr)
	} else {
		b.measureBootCPU(&r, busyBefore)
	}
	b.checkUp(ctx, &r, begin, upReturned)
	measureTimeToK8s(ctx, k, &r, begin)
	if err := sleep(ctx, b.opts.rssDelay-time.Since(upReturned)); err != nil {
		return r
	}
	b.measureMemory(&r, upReturned)
	if v == (variant{}) {
		b.measureImport(ctx, &r)
	}
	return r
}

// variant is what a -with-addons or -with-flags run adds to every up's
// settings; the zero variant adds nothing.
type variant struct {
	addons string // comma-separated, added to --addons
	flags  string // space-separated up flags
}

// withAddons is the --addons of base (kubernix's defaults when "") with
// the comma-separated extra added.
func withAddons(base, extra string) string {
	if base == "" {
		base = strings.Join(addons.Defaults(), ",")
	}
	return base + "," + extra
}

// fail records a failure of the run.
func (r *Run) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// prepareRun sets r's mode (a cold run starts from a fresh state dir) and
// clears what the previous run left that this one would misread. It returns
// false, with the failure recorded, when the run cannot start.
func (b *bench) prepareRun(ctx context.Context, r *Run) bool {
	k := b.k
	if r.Index <= b.opts.cold {
		r.Mode = ModeCold
		if err := b.freshStateDir(ctx); err != nil {
			r.fail("prepare a fresh state dir: %v", err)
			return false
		}
	}
	r.PKIReused = HasPKI(k.Layout)
	// A failed up saves no timings: never read the previous run's.
	if err := os.Remove(timingsFile(k.Layout)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.fail("remove old timings: %v", err)
	}
	r.LoadAvg = loadAvg()
	return true
}

// checkUp records, after up succeeded, the executor, that every node is
// Ready, and the supervisor's timings of the boot that began at begin.
func (b *bench) checkUp(ctx context.Context, r *Run, begin, upReturned time.Time) {
	k := b.k
	r.Executor = Executor(k.Layout)
	r.Ready = k.CheckReady(ctx, r.Nodes, begin)
	if p := r.Ready.Problem(); p != "" {
		r.fail("%s", p)
	}
	if len(r.Ready.Stale) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("Ready condition older than the up (a previous run's, from etcd?) on %s", strings.Join(r.Ready.Stale, ", ")))
	}
	if t, err := readTimings(k.Layout); err != nil {
		r.fail("read timings: %v", err)
	} else {
		b.analyse(r, t, begin, upReturned)
	}
}

// measureBootCPU samples, right after up returned, the CPU time its boot
// used into r.BootCPU: the machine's busy time since busyBefore
// (MachineBusySeconds just before up) and the cluster's processes'.
func (b *bench) measureBootCPU(r *Run, busyBefore float64) {
	busy, err := MachineBusySeconds()
	if err != nil {
		r.fail("read /proc/stat: %v", err)
		return
	}
	procs, err := SampleCPU(b.k.Layout, r.Nodes, Executor(b.k.Layout), b.opts.networkPolicy)
	if err != nil {
		r.fail("sample CPU: %v", err)
		return
	}
	c := &BootCPU{MachineSeconds: busy - busyBefore, Processes: procs}
	if cores := b.report.Machine.Cores; cores > 0 && r.UpSeconds > 0 {
		c.Busy = c.MachineSeconds / (float64(cores) * r.UpSeconds)
	}
	for _, p := range procs {
		c.ClusterSeconds += p.Seconds
	}
	r.BootCPU = c
}

// measureTimeToK8s runs the time-to-k8s flow (Kubernix.TimeToK8s) on the
// cluster k brought up into r.TimeToK8s when it has CoreDNS (k.Addons ""
// is kubernix's defaults, which have it); its failure fails the run.
func measureTimeToK8s(ctx context.Context, k Kubernix, r *Run, begin time.Time) {
	if k.Addons != "" && !slices.Contains(strings.Split(k.Addons, ","), "coredns") {
		return
	}
	t, err := k.TimeToK8s(ctx, begin, config.Default().ClusterDomain)
	if err == nil {
		t.AddonsSeconds, err = k.AddonsHealthy(ctx, begin)
		if err != nil {
			err = fmt.Errorf("addons healthy: %w", err)
		}
	}
	if err != nil {
		r.fail("time-to-k8s: %v", err)
		if t == nil {
			t = &TimeToK8s{}
		}
		t.Error = err.Error()
	}
	r.TimeToK8s = t
}

// measureMemory samples the cluster's memory into r.Memory.
func (b *bench) measureMemory(r *Run, upReturned time.Time) {
	mem, err := SampleMemory(b.k.Layout, r.Nodes, r.Executor, b.opts.networkPolicy)
	if err != nil {
		r.fail("sample memory: %v", err)
		return
	}
	mem.SampledAfterSeconds = time.Since(upReturned).Seconds()
	r.Memory = mem
	if len(mem.Missing) > 0 {
		r.fail("no live process for %s after up returned", strings.Join(mem.Missing, ", "))
	}
}

// measureImport times `kubernix image load` of the generated image into
// r.Import, when the import is measured at this size.
func (b *bench) measureImport(ctx context.Context, r *Run) {
	if b.image == "" || !slices.Contains(b.opts.importNodes, r.Nodes) {
		return
	}
	imp := &ImportRun{Bytes: b.imageBytes}
	d, err := b.k.ImageLoad(ctx, b.image)
	imp.Seconds = d.Seconds()
	if err != nil {
		imp.Error = err.Error()
		r.fail("image load: %v", err)
	} else if imp.Seconds > 0 {
		imp.MBps = float64(imp.Bytes) / 1e6 / imp.Seconds
	}
	r.Import = imp
}

// teardown runs `kubernix down`, even after a failure or an interrupt (it
// is idempotent), unless up never got as far as writing the cluster's
// config, and then records what is left on the host.
func (b *bench) teardown(ctx context.Context, r *Run) {
	k := b.k
	if _, err := os.Stat(k.Layout.paths().ConfigFile()); err == nil {
		d, err := k.Down(context.WithoutCancel(ctx))
		r.DownSeconds = d.Seconds()
		if err != nil {
			r.DownError = err.Error()
			r.fail("down: %v", err)
		}
	} else {
		r.Notes = append(r.Notes, "down skipped: up did not get as far as writing "+k.Layout.paths().ConfigFile())
	}
	left, err := Leftovers(k.Layout)
	r.Leftovers = left
	if err != nil {
		r.fail("look for leftovers: %v", err)
	}
	if len(left) > 0 {
		r.fail("left on the host after down: %s", strings.Join(left, "; "))
	}
}

// analyse derives the breakdown, critical path and overhead of r from t,
// and the time outside the supervisor's boot from when up was invoked and
// when it returned.
func (b *bench) analyse(r *Run, t Timings, invoked, returned time.Time) {
	r.Timings = &t
	r.SupervisorTotalSeconds = t.Total.Seconds()
	if len(t.Components) > 0 {
		first, last := t.Components[0].Started, t.Components[0].Ready
		for _, c := range t.Components {
			if c.Started.Before(first) {
				first = c.Started
			}
			if c.Ready.After(last) {
				last = c.Ready
			}
		}
		r.StartupSeconds = (first.Sub(invoked) - t.Prepare).Seconds()
		r.HandoverSeconds = returned.Sub(last).Seconds()
	}
	r.Components = Breakdown(t)
	r.Kinds = ByKind(r.Components)
	cp := CriticalPathOf(t)
	r.CriticalPath = &cp
	if cp.TotalSeconds > 0 {
		r.Overhead = r.UpSeconds / cp.TotalSeconds
	}
	for _, c := range t.Components {
		if c.Error != "" {
			r.fail("timings: %s failed: %s", c.Name, c.Error)
		}
	}
}

// freshStateDir removes the state dir, after bringing down what a previous
// bench may have left there. It refuses while anything of the cluster still
// runs or is mounted there.
func (b *bench) freshStateDir(ctx context.Context) error {
	l := b.k.Layout
	if _, err := os.Stat(l.StateDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	left, err := Leftovers(l)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		if _, err := os.Stat(l.paths().ConfigFile()); err == nil {
			_, _ = b.k.Down(context.WithoutCancel(ctx))
		}
		if left, err = Leftovers(l); err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("%s still has leftovers after down: %s", l.StateDir, strings.Join(left, "; "))
		}
	}
	return os.RemoveAll(l.StateDir)
}

// sleep waits d, or until ctx ends (returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// progressLine is the one-line summary of a run printed as it ends.
func progressLine(r Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%2d node(s) run %d (%s): ", r.Nodes, r.Index, r.modeLabel())
	if r.UpError != "" {
		b.WriteString("up FAILED")
	} else {
		fmt.Fprintf(&b, "up %.1fs", r.UpSeconds)
		if r.CriticalPath != nil {
			fmt.Fprintf(&b, " (critical path %.1fs, overhead %.2f×)", r.CriticalPath.TotalSeconds, r.Overhead)
		}
	}
	if r.Memory != nil {
		fmt.Fprintf(&b, ", RSS %s MiB", mib(float64(r.Memory.TotalBytes)))
	}
	if r.Import != nil && r.Import.Error == "" {
		fmt.Fprintf(&b, ", import %.2fs (%.0f MB/s)", r.Import.Seconds, r.Import.MBps)
	}
	fmt.Fprintf(&b, ", down %.1fs", r.DownSeconds)
	if r.OK() {
		b.WriteString(", ok")
	} else {
		fmt.Fprintf(&b, ", %d failure(s): %s", len(r.Failures), firstLine(r.Failures[0]))
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
