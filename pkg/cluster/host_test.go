package cluster

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestSysctlLedger(t *testing.T) {
	host := map[string]string{"vm.overcommit_memory": "0", "kernel.panic": "0", "net.ipv4.ip_forward": "0"}
	read := func(k string) (string, error) {
		if v, ok := host[k]; ok {
			return v, nil
		}
		return "", errors.New("no such sysctl")
	}
	type step struct {
		join, leave string
		live        []string          // for leave: the clusters still running
		changed     map[string]string // the host's values after this step, set by kubelets
		wantRestore map[string]string // for leave
		wantUsers   []string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"A up, B up, A down, B down: the last restores", []step{
			{join: "/a", changed: map[string]string{"kernel.panic": "10"}, wantUsers: []string{"/a"}},
			{join: "/b", wantUsers: []string{"/a", "/b"}},
			{leave: "/a", live: []string{"/b"}, wantUsers: []string{"/b"}},
			{leave: "/b", wantRestore: host, wantUsers: nil},
		}},
		{"a killed cluster does not hold the originals for ever", []step{
			{join: "/a", wantUsers: []string{"/a"}},
			{join: "/b", wantUsers: []string{"/a", "/b"}},
			{leave: "/b", live: nil, wantRestore: host, wantUsers: nil},
		}},
		{"joining twice records once; the originals are the first's", []step{
			{join: "/a", wantUsers: []string{"/a"}},
			{join: "/a", changed: map[string]string{"vm.overcommit_memory": "1"}, wantUsers: []string{"/a"}},
			{join: "/b", wantUsers: []string{"/a", "/b"}},
			{leave: "/a", live: []string{"/a", "/b"}, wantUsers: []string{"/b"}},
			{leave: "/b", live: []string{"/b"}, wantRestore: host, wantUsers: nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l sysctlLedger
			cur := maps.Clone(host)
			readCur := func(k string) (string, error) {
				if v, ok := cur[k]; ok {
					return v, nil
				}
				return read(k)
			}
			for i, s := range tt.steps {
				if s.join != "" {
					l.join(s.join, readCur, nil)
				} else {
					got := l.leave(s.leave, func(st string) bool { return slices.Contains(s.live, st) })
					if !maps.Equal(got, s.wantRestore) {
						t.Errorf("step %d: leave(%s) restores %v, want %v", i, s.leave, got, s.wantRestore)
					}
				}
				maps.Copy(cur, s.changed)
				if !slices.Equal(l.Clusters, s.wantUsers) {
					t.Errorf("step %d: clusters %v, want %v", i, l.Clusters, s.wantUsers)
				}
			}
		})
	}
}

func TestSysctlLedgerLegacyWins(t *testing.T) {
	var l sysctlLedger
	l.join("/a", func(string) (string, error) { return "1", nil }, map[string]string{"kernel.panic": "0"})
	if l.Original["kernel.panic"] != "0" || l.Original["vm.overcommit_memory"] != "1" {
		t.Errorf("originals %v: want the legacy record's kernel.panic=0 over the current 1, and the rest read", l.Original)
	}
}
