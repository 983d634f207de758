package main

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseVersion(t *testing.T) {
	out := "kubernix dev (go1.26.8 linux/amd64)\n  CONTAINERD_VERSION   v2.4.2\n  KUBERNETES_VERSION   v1.37.2\n"
	v := parseVersion(out)
	if v.Kubernix != "kubernix dev (go1.26.8 linux/amd64)" || v.Upstream["KUBERNETES_VERSION"] != "v1.37.2" || len(v.Upstream) != 2 {
		t.Errorf("parseVersion = %+v", v)
	}
}

func TestReadiness(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 600e6, time.UTC)
	node := func(name string, status corev1.ConditionStatus, beat time.Time) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(beat),
				Reason: "KubeletNotReady", Message: "PLEG is not healthy"},
		}}}
	}
	l := Layout{Name: "b"}
	fresh := since.Truncate(time.Second) // same second as the up: not stale
	tests := []struct {
		name      string
		nodes     []corev1.Node
		expected  int
		ready     int
		notReady  []string
		stale     []string
		wantIssue bool
	}{
		{"all ready", []corev1.Node{node("b-node-0", corev1.ConditionTrue, fresh), node("b-node-1", corev1.ConditionTrue, since.Add(time.Second))}, 2, 2, nil, nil, false},
		{"one not ready", []corev1.Node{node("b-node-0", corev1.ConditionTrue, fresh), node("b-node-1", corev1.ConditionUnknown, fresh)}, 2, 1, []string{"b-node-1 (Ready=Unknown KubeletNotReady: PLEG is not healthy)"}, nil, true},
		{"one missing", []corev1.Node{node("b-node-0", corev1.ConditionTrue, fresh)}, 2, 1, []string{"b-node-1 (missing)"}, nil, true},
		{"stale heartbeat", []corev1.Node{node("b-node-0", corev1.ConditionTrue, since.Add(-time.Minute))}, 1, 1, nil, []string{"b-node-0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := readiness(corev1.NodeList{Items: tt.nodes}, l, tt.expected, since)
			if r.Ready != tt.ready || !slices.Equal(r.NotReady, tt.notReady) || !slices.Equal(r.Stale, tt.stale) {
				t.Errorf("readiness = %+v", r)
			}
			if got := r.Problem() != ""; got != tt.wantIssue {
				t.Errorf("Problem() = %q", r.Problem())
			}
		})
	}
	if p := (Ready{Expected: 1, Error: "boom"}).Problem(); !strings.Contains(p, "boom") {
		t.Errorf("Problem with a kubectl error = %q", p)
	}
}

func TestRunnerError(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	var transcript strings.Builder
	r := Runner{Log: &transcript}
	out, _, err := r.Run(context.Background(), "sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3")
	var ce *CmdError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v, want a *CmdError", err)
	}
	if string(out) != "to-stdout\n" || !strings.Contains(ce.Output, "to-stderr") || !strings.Contains(err.Error(), "sh -c") {
		t.Errorf("stdout %q, error %q", out, err)
	}
	if tr := transcript.String(); !strings.Contains(tr, "exit status 3") || !strings.Contains(tr, "to-stdout") || !strings.Contains(tr, "to-stderr") {
		t.Errorf("transcript %q", transcript.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err = Runner{Log: io.Discard}.Run(ctx, "sleep", "10")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timed-out command: %v, want DeadlineExceeded", err)
	}
}

func TestBenchEnv(t *testing.T) {
	got := benchEnv([]string{"PATH=/bin", "KUBECONFIG=/root/.kube/config", "KUBERNIX_NODES=4", "HOME=/root"}, "/tmp/k")
	want := []string{"PATH=/bin", "HOME=/root", "KUBECONFIG=/tmp/k"}
	if !slices.Equal(got, want) {
		t.Errorf("benchEnv = %q, want %q", got, want)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		nodes   []int
		wantErr []string
	}{
		{"defaults", nil, []int{1, 3, 5, 10}, nil},
		{"quick: -cold follows a smaller -runs", []string{"-nodes", "1", "-runs", "1"}, []int{1}, nil},
		{"every problem at once", []string{"-nodes", "0,2", "-runs", "0", "-timeout", "0s", "-state-dir", "/tmp"},
			nil, []string{"-nodes: 0", "-runs 0", "-timeout 0s", "-state-dir /tmp"}},
		{"more cold runs than runs", []string{"-runs", "2", "-cold", "3"}, nil, []string{"-cold 3: from 1 to -runs (2)"}},
		{"no cold run", []string{"-cold", "0"}, nil, []string{"-cold 0"}},
		{"socket path too long", []string{"-nodes", "1", "-state-dir", "/tmp/" + strings.Repeat("x", 90)}, nil, []string{"socket path"}},
		{"not a number", []string{"-nodes", "1,x"}, nil, []string{`"x" is not an integer`}},
		{"with flags", []string{"-nodes", "3", "-with-flags", "--ephemeral --x=1 --config /tmp/c.toml"}, []int{3}, nil},
		{"with-flags not flags", []string{"-with-flags", "--x=1 true"}, nil, []string{`"true" is neither a flag nor its value`}},
		{"with-flags two values", []string{"-with-flags", "--config a b"}, nil, []string{`"b" is neither a flag nor its value`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(io.Discard, tt.args)
			if len(tt.wantErr) == 0 {
				if err != nil || !slices.Equal(o.nodes, tt.nodes) {
					t.Errorf("parseFlags = %v, %v", o.nodes, err)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to mention %q", err, w)
				}
			}
		})
	}
}
