package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    uint64
		wantErr bool
	}{
		{"present", "Name:\tetcd\nVmPeak:\t  999 kB\nVmRSS:\t  117248 kB\nRssAnon:\t 1 kB\n", 117248 << 10, false},
		{"absent (kernel thread)", "Name:\tkthreadd\nState:\tS\n", 0, false},
		{"bad unit", "VmRSS:\t 12 MB\n", 0, true},
		{"other fields ignored", "Rss:\t 5 kB\nPss:\t 3 kB\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseVmRSS = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestVmRSSSelf(t *testing.T) {
	rss, err := vmRSS(os.Getpid())
	if err != nil || rss == 0 {
		t.Errorf("vmRSS(self) = %d, %v", rss, err)
	}
	pss, err := pssOf(os.Getpid())
	if err != nil || pss == 0 {
		t.Errorf("pssOf(self) = %d, %v; want > 0", pss, err)
	}
	// From one snapshot (the process may grow between two reads), the
	// proportional size is at most the resident one.
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	pss, err1 := parseKB(b, "Pss:")
	rssRollup, err2 := parseKB(b, "Rss:")
	if err1 != nil || err2 != nil || pss == 0 || pss > rssRollup {
		t.Errorf("smaps_rollup: Pss %d (%v), Rss %d (%v); want 0 < Pss <= Rss", pss, err1, rssRollup, err2)
	}
}

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal([]byte("MemTotal:       24605936 kB\nMemFree:  1 kB\n"))
	if err != nil || got != 24605936<<10 {
		t.Errorf("parseMemTotal = %d, %v", got, err)
	}
	if _, err := parseMemTotal([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal: want an error")
	}
}

func TestShimPIDs(t *testing.T) {
	sock := "/tmp/kx-bench/nodes/bench-node-0/containerd.sock"
	procs := []proc{
		{pid: 10, argv: []string{"/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", sock}},
		{pid: 11, argv: []string{"/bin/containerd-shim-runc-v2", "-address", sock + ".ttrpc"}},
		{pid: 12, argv: []string{"/bin/containerd-shim-runc-v2", "-address", "/tmp/kx-bench/nodes/bench-node-1/containerd.sock"}},
		{pid: 13, argv: []string{"/bin/containerd", "--config", sock}},
		{pid: 14, argv: []string{"-address"}},
	}
	if got := shimPIDs(procs, sock); !slices.Equal(got, []int{10}) {
		t.Errorf("shimPIDs = %v, want [10]", got)
	}
}

func TestMountsUnderNothing(t *testing.T) {
	mps, err := mountsUnder(t.TempDir())
	if err != nil || len(mps) != 0 {
		t.Errorf("mountsUnder(fresh dir) = %v, %v", mps, err)
	}
}

func TestParseProcStat(t *testing.T) {
	line := "4242 (kube (x) y) S 17 4242 4242 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 12 0 987654 1000 200 0\n"
	st, err := parseProcStat(line)
	if err != nil || st != (procStat{state: 'S', ppid: 17, start: 987654}) {
		t.Errorf("parseProcStat = %+v, %v", st, err)
	}
	if _, err := parseProcStat("4242 (short) S 1 2\n"); err == nil {
		t.Error("short line: want an error")
	}
}

func TestChildrenAndStop(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var child procID
	for _, c := range childrenOf(os.Getpid()) {
		if c.PID == cmd.Process.Pid {
			child = c
		}
	}
	if child.PID == 0 || !child.alive() {
		t.Fatalf("childrenOf(self) = %v, want pid %d", childrenOf(os.Getpid()), cmd.Process.Pid)
	}
	if killed := stopProcesses([]procID{child, {PID: child.PID, Start: child.Start + 1}}, 5*time.Second); len(killed) != 0 {
		t.Errorf("sleep needed SIGKILL: %v", killed)
	}
	<-done
	if child.alive() {
		t.Error("still alive after stopProcesses")
	}
}

// TestRecordedProcesses records the test process itself as a cluster's
// etcd: Leftovers must report it, SampleMemory must measure it and list
// the components that do not run.
func TestRecordedProcesses(t *testing.T) {
	l := Layout{Name: "bench-unit-test", StateDir: t.TempDir()}
	if err := process.RecordSelf(l.paths().Run(config.ControlPlaneScope, "etcd"), "etcd", config.ControlPlaneScope); err != nil {
		t.Fatal(err)
	}
	left, _ := Leftovers(l) // the network part may fail without root; the pidfile part must not
	want := fmt.Sprintf("live pidfile run/control-plane/etcd (pid %d)", os.Getpid())
	if !slices.Contains(left, want) {
		t.Errorf("Leftovers = %q, want it to contain %q", left, want)
	}
	m, err := SampleMemory(l, 1, "process")
	if err != nil {
		t.Fatal(err)
	}
	var etcd ProcRSS
	for _, p := range m.Processes {
		if p.Component == "etcd" {
			etcd = p
		}
	}
	if etcd.RSSBytes == 0 || !slices.Equal(etcd.PIDs, []int{os.Getpid()}) || m.TotalBytes < etcd.RSSBytes {
		t.Errorf("etcd sample = %+v, total %d", etcd, m.TotalBytes)
	}
	wantMissing := []string{"supervisor/kubernix", "control-plane/kube-apiserver", "control-plane/kube-controller-manager",
		"control-plane/kube-scheduler", "bench-unit-test-node-0/containerd", "bench-unit-test-node-0/kubelet", "bench-unit-test-node-0/kube-proxy"}
	if !slices.Equal(m.Missing, wantMissing) {
		t.Errorf("Missing = %q, want %q (no sandbox with the process executor)", m.Missing, wantMissing)
	}
}
