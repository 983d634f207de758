package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadRun tallies small ginkgo reports: testdata/report.json is a real
// e2e.test report (`make conformance` with two focused specs: one passed,
// one failed) cut down to a few specs, plus a spec that skipped itself and
// one more selected than ran; beforesuite.json is a run whose
// SynchronizedBeforeSuite failed.
func TestReadRun(t *testing.T) {
	tests := []struct {
		file       string
		want       Counts
		failures   []string // Spec of each failure
		reasonHas  string   // in the first failure's Reason
		locationIs string   // suffix of the first failure's Location
	}{
		{"report.json", Counts{Selected: 4, Passed: 1, Failed: 1, Skipped: 1, NotRun: 1},
			[]string{"[sig-node] ConfigMap should be consumable via environment variable [Conformance] [NodeConformance]"},
			`expected pod "pod-configmaps-d56d2804-8131-49de-8e0a-938526200c2d" success: Timed out after 300.001s.`,
			"test/e2e/framework/pod/output/output.go:263"},
		{"beforesuite.json", Counts{Selected: 1, NotRun: 1},
			[]string{"[SynchronizedBeforeSuite]"}, "Unexpected error: / <*errors.errorString>: there are not ready nodes", "test/e2e/e2e.go:250"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := ReadRun("non-serial", filepath.Join("testdata", tt.file))
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Counts != tt.want {
				t.Errorf("counts = %+v, want %+v", r.Counts, tt.want)
			}
			var specs []string
			for _, f := range r.Failures {
				specs = append(specs, f.Spec)
			}
			if !slices.Equal(specs, tt.failures) {
				t.Fatalf("failures = %q, want %q", specs, tt.failures)
			}
			f := r.Failures[0]
			if !strings.Contains(f.Reason, tt.reasonHas) || !strings.HasSuffix(f.Location, tt.locationIs) || f.State != "failed" || f.Run != "non-serial" {
				t.Errorf("failure = %+v, want reason with %q at ...%s, failed in non-serial", f, tt.reasonHas, tt.locationIs)
			}
		})
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		name, msg    string
		lines, limit int
		want         string
	}{
		{"first lines", "a\n\n  b  \nc\nd", 2, 100, "a / b"},
		{"fewer lines", "only", 3, 100, "only"},
		{"empty", "", 2, 100, ""},
		{"cut", "abcdefgh", 2, 4, "abcd…"},
		{"cut before a rune", "aé", 2, 2, "a…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reason(tt.msg, tt.lines, tt.limit); got != tt.want {
				t.Errorf("Reason = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRun: the command prints and writes the summary (counts, parts,
// failures; a missing report as such) and exits 1 on failures, 0 without,
// 2 on bad flags. testdata/serial.json is a run that selected no spec.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "summary.md")
	tests := []struct {
		name string
		args []string
		code int
		has  []string
	}{
		{"failures", []string{"-out", out, "-part", "up=8s", "-part", "non-serial=5m6s", "-run", "non-serial=testdata/report.json", "-run", "serial=" + filepath.Join(dir, "none.json")}, 1, []string{
			"| non-serial | 1 | 1 | 1 | 1 |",
			"| serial | — | — | — | no report " + filepath.Join(dir, "none.json") + ": the run was interrupted or did not start |",
			"| up | 8s |", "| non-serial | 5m6s |", "| **total** | **5m14s** |",
			"## Failures (1)", "- **[sig-node] ConfigMap should be consumable via environment variable [Conformance] [NodeConformance]** (non-serial, failed) at ",
		}},
		{"no failures", []string{"-out", out, "-run", "serial=testdata/serial.json"}, 0, []string{"| serial | 0 | 0 | 0 | 0 |"}},
		{"bad part", []string{"-part", "up=soon", "-run", "a=testdata/report.json"}, 2, nil},
		{"no run", []string{"-part", "up=1s"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(out)
			var stdout, stderr bytes.Buffer
			code := run(&stdout, &stderr, tt.args)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if tt.has == nil {
				return
			}
			written, err := os.ReadFile(out)
			if err != nil || string(written) != stdout.String() {
				t.Errorf("-out holds %q (%v), want what was printed", written, err)
			}
			for _, h := range tt.has {
				if !strings.Contains(stdout.String(), h) {
					t.Errorf("summary lacks %q:\n%s", h, stdout.String())
				}
			}
		})
	}
}
