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
	r, err := smapsRollup(os.Getpid())
	if err != nil || r.Pss == 0 || r.Pss > r.Rss {
		t.Errorf("smaps_rollup: Pss %d, Rss %d, %v; want 0 < Pss <= Rss", r.Pss, r.Rss, err)
	}
}

func TestMemTotal(t *testing.T) {
	if total, err := memTotal(); err != nil || total < 1<<20 {
		t.Errorf("memTotal = %d, %v; want the machine's memory in bytes", total, err)
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
// etcd: Leftovers must report it, SampleMemory and SampleCPU must measure
// it and SampleMemory list the components that do not run.
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
	m, err := SampleMemory(l, 1, "process", true)
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
		"control-plane/kube-scheduler", "bench-unit-test-node-0/containerd", "bench-unit-test-node-0/kubelet", "bench-unit-test-node-0/kube-proxy",
		"bench-unit-test-node-0/netpol-agent"}
	if !slices.Equal(m.Missing, wantMissing) {
		t.Errorf("Missing = %q, want %q (no sandbox with the process executor)", m.Missing, wantMissing)
	}
	burn(50 * time.Millisecond)
	cpu, err := SampleCPU(l, 1, "process", true)
	if err != nil {
		t.Fatal(err)
	}
	var etcdCPU ProcCPU
	for _, p := range cpu {
		if p.Component == "etcd" {
			etcdCPU = p
		}
	}
	// This process has run for at least the 50 ms it burnt: USER_HZ
	// ticks are 10 ms.
	if etcdCPU.Seconds < 0.04 || !slices.Equal(etcdCPU.PIDs, []int{os.Getpid()}) {
		t.Errorf("etcd CPU = %+v, want this process and ≥ 0.04 s", etcdCPU)
	}
}

// burn keeps one core busy for d.
func burn(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

func TestMachineBusySeconds(t *testing.T) {
	before, err := MachineBusySeconds()
	if err != nil {
		t.Fatal(err)
	}
	burn(100 * time.Millisecond)
	after, err := MachineBusySeconds()
	if err != nil {
		t.Fatal(err)
	}
	// The machine was busy at least while this test burnt (ticks of 10 ms).
	if before <= 0 || after-before < 0.08 {
		t.Errorf("busy %.2f s, then %.2f s after 100 ms of work; want ≥ 0.08 s more", before, after)
	}
}
