package list

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestPrint: the table's columns and kubectl-style AGE, and the stable
// lower-camel field names of -o json and -o yaml (optional ones left out
// when unset).
func TestPrint(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	infos := []state.Info{
		{Name: "a", StateDir: "/var/lib/kubernix/a", Nodes: 3, Kubernetes: "v1.36.3", State: state.StateRunning, Supervisor: 42, Started: now.Add(-90 * time.Minute)},
		{Name: "b", StateDir: "/tmp/b", Nodes: 1, Kubernetes: "v1.37.2", Rootless: true, State: state.StateBroken, Problems: []string{"process control-plane/etcd (pid 7)"}, Started: now.Add(-50 * time.Hour)},
		{Name: "c", StateDir: "/tmp/c", Nodes: 1, State: state.StateStopped},
	}
	tests := []struct {
		format string
		want   string
	}{
		{common.OutputTable, `NAME  NODES  VERSION    STATE    AGE        MODE      STATE DIR
a     3      v1.36.3    running  90m        root      /var/lib/kubernix/a
b     1      v1.37.2    broken   2d2h       rootless  /tmp/b
c     1      <unknown>  stopped  <unknown>  root      /tmp/c
`},
		{common.OutputJSON, `[
  {
    "name": "a",
    "nodes": 3,
    "kubernetesVersion": "v1.36.3",
    "state": "running",
    "mode": "root",
    "stateDir": "/var/lib/kubernix/a",
    "started": "2026-12-01T18:30:00Z",
    "supervisorPID": 42
  },
  {
    "name": "b",
    "nodes": 1,
    "kubernetesVersion": "v1.37.2",
    "state": "broken",
    "mode": "rootless",
    "stateDir": "/tmp/b",
    "started": "2026-11-29T18:00:00Z",
    "problems": [
      "process control-plane/etcd (pid 7)"
    ]
  },
  {
    "name": "c",
    "nodes": 1,
    "state": "stopped",
    "mode": "root",
    "stateDir": "/tmp/c"
  }
]
`},
		{common.OutputYAML, `- kubernetesVersion: v1.36.3
  mode: root
  name: a
  nodes: 3
  started: "2026-12-01T18:30:00Z"
  state: running
  stateDir: /var/lib/kubernix/a
  supervisorPID: 42
- kubernetesVersion: v1.37.2
  mode: rootless
  name: b
  nodes: 1
  problems:
  - process control-plane/etcd (pid 7)
  started: "2026-11-29T18:00:00Z"
  state: broken
  stateDir: /tmp/b
- mode: root
  name: c
  nodes: 1
  state: stopped
  stateDir: /tmp/c
`},
	}
	for _, tt := range tests {
		t.Run("format "+tt.format, func(t *testing.T) {
			var out bytes.Buffer
			if err := printClusters(&out, tt.format, rows(infos), now); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
	var out bytes.Buffer
	if err := printClusters(&out, common.OutputJSON, rows(nil), now); err != nil || out.String() != "[]\n" {
		t.Errorf("no clusters in JSON: %q, %v; want []", out.String(), err)
	}
}

// TestBrokenNotes: a line per broken cluster with why, at most
// maxProblems problems and a count of the rest, and what to do (down; for
// a damaged record with nothing else left, fix it or delete); none for
// the others.
func TestBrokenNotes(t *testing.T) {
	infos := []state.Info{
		{Name: "a", StateDir: "/s/a", State: state.StateRunning},
		{Name: "b", StateDir: "/s/b", State: state.StateBroken, Problems: []string{"the cluster's record /s/b/kubernix.toml cannot be read: toml: x"}},
		{StateDir: "/s/c", State: state.StateBroken, Problems: []string{"p1", "p2", "p3", "p4", "p5"}},
		{Name: "d", StateDir: "/s/d", State: state.StateBroken, Damaged: true, Problems: []string{"record damaged"}},
	}
	want := []string{
		"cluster \"b\" (/s/b) is broken: the cluster's record /s/b/kubernix.toml cannot be read: toml: x; `kubernix down --state-dir /s/b` brings it down",
		"cluster \"<unknown>\" (/s/c) is broken: p1, p2, p3, and 2 more; `kubernix down --state-dir /s/c` brings it down",
		"cluster \"d\" (/s/d) is broken: record damaged; nothing else of it is on the host: fix or remove its kubernix.toml before the next up, or `kubernix delete --state-dir /s/d`",
	}
	if got := brokenNotes(infos); !slices.Equal(got, want) {
		t.Errorf("brokenNotes =\n%q\nwant\n%q", got, want)
	}
}
