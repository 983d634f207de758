// Command summary turns the ginkgo JSON reports of `make conformance`
// (hack/conformance.sh) into a Markdown summary: passed, failed and
// skipped specs of each run, the wall time of each part, and each failure
// with its spec name and the first lines of its message.
//
//	summary -out _output/conformance/summary.md \
//	    -part build=3m2s -part up=41s ... \
//	    -run non-serial=_output/conformance/non-serial/report.json \
//	    -run serial=_output/conformance/serial/report.json
//
// It writes the summary to -out and to standard output. A run whose
// report is missing (the run was interrupted before ginkgo wrote it) is
// listed as such. It exits 1 when a spec failed or a report is missing or
// unreadable, 2 on bad flags, else 0.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

func main() {
	os.Exit(run(os.Stdout, os.Stderr, os.Args[1:]))
}

// run is summary: it returns the process's exit code.
func run(stdout, stderr io.Writer, args []string) int {
	var parts, runs pairs
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "file to write the summary to (besides standard output)")
	fs.Var(&parts, "part", "NAME=DURATION: the wall time of a part (repeatable, in order)")
	fs.Var(&runs, "run", "NAME=FILE: a ginkgo JSON report (--json-report) of a run (repeatable, in order)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(runs) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "summary: give each report as -run NAME=FILE, and no other arguments")
		return 2
	}
	var timed []Part
	for _, p := range parts {
		d, err := time.ParseDuration(p.value)
		if err != nil {
			fmt.Fprintf(stderr, "summary: -part %s=%s: %v\n", p.name, p.value, err)
			return 2
		}
		timed = append(timed, Part{Name: p.name, Wall: d})
	}
	var results []Run
	for _, r := range runs {
		results = append(results, ReadRun(r.name, r.value))
	}
	text := Render(results, timed)
	fmt.Fprint(stdout, text)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
			fmt.Fprintln(stderr, "summary:", err)
			return 1
		}
	}
	for _, r := range results {
		if r.Err != nil || r.Counts.Failed > 0 {
			return 1
		}
	}
	return 0
}

// pair is one NAME=VALUE flag value.
type pair struct{ name, value string }

// pairs is a repeatable NAME=VALUE flag.
type pairs []pair

func (p *pairs) String() string { return fmt.Sprint(*p) }

func (p *pairs) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return fmt.Errorf("%q: want NAME=VALUE", s)
	}
	*p = append(*p, pair{name, value})
	return nil
}

// Part is one timed part of the whole run (build, up, a ginkgo run, down).
type Part struct {
	Name string
	Wall time.Duration
}

// Counts are the specs of a run by outcome.
type Counts struct {
	// Selected is how many specs ginkgo chose to run (its PreRunStats).
	Selected int
	// Passed, Failed and Skipped are the specs that ran: Failed holds
	// every failure state (failed, panicked, timed out, interrupted,
	// aborted), Skipped the specs that skipped themselves (Skip()).
	Passed, Failed, Skipped int
	// NotRun are selected specs that did not run: the suite was
	// interrupted or timed out first.
	NotRun int
}

// Failure is one failed spec, or a failed suite node (BeforeSuite...).
type Failure struct {
	// Run is the name of the run it failed in.
	Run string
	// Spec is the spec's full text, or the node type of a suite node.
	Spec string
	// State is ginkgo's: failed, panicked, timedout, interrupted, aborted.
	State string
	// Reason is the first lines of the failure message (Reason).
	Reason string
	// Location is file:line of the failure.
	Location string
}

// Run is one ginkgo run's outcome, read from its JSON report.
type Run struct {
	Name     string
	Counts   Counts
	Failures []Failure
	// Err says why the report could not be read (missing: the run was
	// interrupted or did not start).
	Err error
}

// ReadRun reads the ginkgo JSON report at path (a []types.Report, as
// --json-report writes it) and tallies it (Tally).
func ReadRun(name, path string) Run {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Run{Name: name, Err: fmt.Errorf("no report %s: the run was interrupted or did not start", path)}
	}
	if err != nil {
		return Run{Name: name, Err: err}
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil {
		return Run{Name: name, Err: fmt.Errorf("report %s: %w", path, err)}
	}
	counts, failures := Tally(name, reports)
	return Run{Name: name, Counts: counts, Failures: failures}
}

// Tally counts the specs of reports by outcome and lists the failures,
// those of suite nodes (a failed BeforeSuite fails the whole run) too.
func Tally(name string, reports []types.Report) (Counts, []Failure) {
	var c Counts
	var failures []Failure
	for _, r := range reports {
		c.Selected += r.PreRunStats.SpecsThatWillRun
		for _, s := range r.SpecReports {
			if s.Failed() {
				failures = append(failures, failureOf(name, s))
			}
			if s.LeafNodeType != types.NodeTypeIt {
				continue
			}
			switch {
			case s.State == types.SpecStatePassed:
				c.Passed++
			case s.Failed():
				c.Failed++
			case s.State == types.SpecStateSkipped && s.Failure.Message != "":
				c.Skipped++
			}
		}
	}
	c.NotRun = max(0, c.Selected-c.Passed-c.Failed-c.Skipped)
	return c, failures
}

func failureOf(run string, s types.SpecReport) Failure {
	spec := s.FullText()
	if s.LeafNodeType != types.NodeTypeIt {
		spec = "[" + s.LeafNodeType.String() + "]"
	}
	msg := s.Failure.Message
	if s.Failure.ForwardedPanic != "" {
		msg = "panic: " + s.Failure.ForwardedPanic
	}
	return Failure{Run: run, Spec: spec, State: s.State.String(), Reason: Reason(msg, 2, 400), Location: s.Failure.Location.String()}
}

// Reason is the first `lines` non-blank lines of msg, trimmed, joined by
// " / ", cut to at most limit bytes (with "…" when cut): enough to say
// why a spec failed on one line.
func Reason(msg string, lines, limit int) string {
	var kept []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
		if len(kept) == lines {
			break
		}
	}
	s := strings.Join(kept, " / ")
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// utf8Start reports whether b starts a UTF-8 sequence (is no continuation byte).
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Render is the Markdown summary of runs and parts.
func Render(runs []Run, parts []Part) string {
	var b strings.Builder
	var total Counts
	var failures []Failure
	b.WriteString("# Conformance summary\n\n")
	b.WriteString("| run | passed | failed | skipped | not run |\n|---|---:|---:|---:|---:|\n")
	for _, r := range runs {
		if r.Err != nil {
			fmt.Fprintf(&b, "| %s | — | — | — | %s |\n", r.Name, r.Err)
			continue
		}
		c := r.Counts
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", r.Name, c.Passed, c.Failed, c.Skipped, c.NotRun)
		total.Passed += c.Passed
		total.Failed += c.Failed
		total.Skipped += c.Skipped
		total.NotRun += c.NotRun
		failures = append(failures, r.Failures...)
	}
	fmt.Fprintf(&b, "| **total** | **%d** | **%d** | **%d** | **%d** |\n", total.Passed, total.Failed, total.Skipped, total.NotRun)
	if len(parts) > 0 {
		var all time.Duration
		b.WriteString("\n| part | wall time |\n|---|---:|\n")
		for _, p := range parts {
			fmt.Fprintf(&b, "| %s | %s |\n", p.Name, p.Wall.Round(time.Second))
			all += p.Wall
		}
		fmt.Fprintf(&b, "| **total** | **%s** |\n", all.Round(time.Second))
	}
	if len(failures) > 0 {
		fmt.Fprintf(&b, "\n## Failures (%d)\n\n", len(failures))
		for _, f := range failures {
			fmt.Fprintf(&b, "- **%s** (%s, %s) at %s\n  %s\n", f.Spec, f.Run, f.State, f.Location, f.Reason)
		}
	}
	return b.String()
}
