package list

import (
	"bytes"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
)

// TestPrint: the table's columns and kubectl-style AGE, and the stable
// lower-camel field names of -o json and -o yaml (optional ones left out
// when unset).
func TestPrint(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	infos := []cluster.Info{
		{Name: "a", StateDir: "/var/lib/kubernix/a", Nodes: 3, State: cluster.StateRunning, Supervisor: 42, Started: now.Add(-90 * time.Minute)},
		{Name: "b", StateDir: "/tmp/b", Nodes: 1, Rootless: true, State: cluster.StateBroken, Problems: []string{"process control-plane/etcd (pid 7)"}, Started: now.Add(-50 * time.Hour)},
		{Name: "c", StateDir: "/tmp/c", Nodes: 1, State: cluster.StateStopped},
	}
	tests := []struct {
		format string
		want   string
	}{
		{common.OutputTable, `NAME  NODES  STATE    AGE        MODE      STATE DIR
a     3      running  90m        root      /var/lib/kubernix/a
b     1      broken   2d2h       rootless  /tmp/b
c     1      stopped  <unknown>  root      /tmp/c
`},
		{common.OutputJSON, `[
  {
    "name": "a",
    "nodes": 3,
    "state": "running",
    "mode": "root",
    "stateDir": "/var/lib/kubernix/a",
    "started": "2026-12-01T18:30:00Z",
    "supervisorPID": 42
  },
  {
    "name": "b",
    "nodes": 1,
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
		{common.OutputYAML, `- mode: root
  name: a
  nodes: 3
  started: "2026-12-01T18:30:00Z"
  state: running
  stateDir: /var/lib/kubernix/a
  supervisorPID: 42
- mode: rootless
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
