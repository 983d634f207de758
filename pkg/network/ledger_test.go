package network

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

// fakeHost is hostSettings on a map of sysctls and a FORWARD policy; it
// records each write as "name=value", in order.
type fakeHost struct {
	sysctls   map[string]string
	policy    string
	policyErr error
	writes    []string
}

func (h *fakeHost) Sysctl(name string) (string, error) {
	if v, ok := h.sysctls[name]; ok {
		return v, nil
	}
	return "", errors.New("no such sysctl")
}

func (h *fakeHost) SetSysctl(name, value string) error {
	h.sysctls[name] = value
	h.writes = append(h.writes, name+"="+value)
	return nil
}

func (h *fakeHost) ForwardPolicy() (string, error) { return h.policy, h.policyErr }

func (h *fakeHost) SetForwardPolicy(policy string) error {
	h.policy = policy
	h.writes = append(h.writes, forwardPolicySetting+"="+policy)
	return nil
}

func TestSysctlLedger(t *testing.T) {
	orig := map[string]string{"vm.overcommit_memory": "0", "kernel.panic": "0", "net.ipv4.ip_forward": "1"}
	type step struct {
		join, leave string
		live        []string          // for leave: the clusters still running
		changed     map[string]string // the host's values after this step, set by kubelets
		wantLast    bool              // for leave
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
			{leave: "/b", wantLast: true, wantUsers: nil},
		}},
		{"a killed cluster does not hold the originals for ever", []step{
			{join: "/a", wantUsers: []string{"/a"}},
			{join: "/b", wantUsers: []string{"/a", "/b"}},
			{leave: "/b", live: nil, wantLast: true, wantUsers: nil},
		}},
		{"joining twice records once; the originals are the first's", []step{
			{join: "/a", wantUsers: []string{"/a"}},
			{join: "/a", changed: map[string]string{"vm.overcommit_memory": "1"}, wantUsers: []string{"/a"}},
			{join: "/b", wantUsers: []string{"/a", "/b"}},
			{leave: "/a", live: []string{"/a", "/b"}, wantUsers: []string{"/b"}},
			{leave: "/b", live: []string{"/b"}, wantLast: true, wantUsers: nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l sysctlLedger
			h := &fakeHost{sysctls: maps.Clone(orig), policy: "ACCEPT"}
			for i, s := range tt.steps {
				if s.join != "" {
					if _, err := l.join(s.join, h, nil); err != nil {
						t.Fatal(err)
					}
				} else if last := l.leave(s.leave, func(st string) bool { return slices.Contains(s.live, st) }); last != s.wantLast {
					t.Errorf("step %d: leave(%s) = %v, want %v", i, s.leave, last, s.wantLast)
				}
				maps.Copy(h.sysctls, s.changed)
				if !slices.Equal(l.Clusters, s.wantUsers) {
					t.Errorf("step %d: clusters %v, want %v", i, l.Clusters, s.wantUsers)
				}
			}
			if !maps.Equal(l.Original, orig) {
				t.Errorf("originals %v, want the host's before the first join, %v", l.Original, orig)
			}
		})
	}
}

func TestSysctlLedgerLegacyWins(t *testing.T) {
	var l sysctlLedger
	h := &fakeHost{sysctls: map[string]string{"kernel.panic": "1", "vm.overcommit_memory": "1"}}
	if _, err := l.join("/a", h, map[string]string{"kernel.panic": "0"}); err != nil {
		t.Fatal(err)
	}
	if l.Original["kernel.panic"] != "0" || l.Original["vm.overcommit_memory"] != "1" {
		t.Errorf("originals %v: want the legacy record's kernel.panic=0 over the current 1, and the rest read", l.Original)
	}
	if l.Set["kernel.panic"] != "10" {
		t.Errorf("set %v: want the kubelet's kernel.panic=10", l.Set)
	}
}

// TestJoinForwardPolicy: a cluster sets the FORWARD policy to DROP only
// when forwarding was off before the first cluster and is still off, and
// the policy accepts; it is recorded before it is made.
func TestJoinForwardPolicy(t *testing.T) {
	accept := &policyChange{Original: "ACCEPT", Set: "DROP"}
	tests := []struct {
		name       string
		ledger     sysctlLedger // before the join
		ipForward  string       // now
		policy     string       // now
		policyErr  error
		wantDrop   bool
		wantRecord *policyChange
		wantErr    bool
	}{
		{name: "first cluster, forwarding off, ACCEPT", ipForward: "0", policy: "ACCEPT", wantDrop: true, wantRecord: accept},
		{name: "first cluster, forwarding on before", ipForward: "1", policy: "ACCEPT"},
		{name: "first cluster, forwarding off, already DROP", ipForward: "0", policy: "DROP"},
		{name: "second cluster, the first turned forwarding on",
			ledger:    sysctlLedger{Original: map[string]string{ipForward: "0"}, ForwardPolicy: accept, Clusters: []string{"/b"}},
			ipForward: "1", policy: "DROP", wantRecord: accept},
		{name: "second cluster, forwarding on before the first",
			ledger:    sysctlLedger{Original: map[string]string{ipForward: "1"}, Clusters: []string{"/b"}},
			ipForward: "1", policy: "ACCEPT"},
		{name: "the first was killed between record and change",
			ledger:    sysctlLedger{Original: map[string]string{ipForward: "0"}, ForwardPolicy: accept, Clusters: []string{"/b"}},
			ipForward: "0", policy: "ACCEPT", wantDrop: true, wantRecord: accept},
		{name: "the policy cannot be read", ipForward: "0", policyErr: errors.New("iptables: not found"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.ledger
			h := &fakeHost{sysctls: map[string]string{ipForward: tt.ipForward}, policy: tt.policy, policyErr: tt.policyErr}
			drop, err := l.join("/a", h, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("join: %v, want error %v", err, tt.wantErr)
			}
			if drop != tt.wantDrop {
				t.Errorf("join says set DROP: %v, want %v", drop, tt.wantDrop)
			}
			if (l.ForwardPolicy == nil) != (tt.wantRecord == nil) || (l.ForwardPolicy != nil && *l.ForwardPolicy != *tt.wantRecord) {
				t.Errorf("recorded policy change %+v, want %+v", l.ForwardPolicy, tt.wantRecord)
			}
			if len(h.writes) > 0 {
				t.Errorf("join wrote %v: the caller sets the policy, after the ledger is saved", h.writes)
			}
		})
	}
}

func TestDecideRestore(t *testing.T) {
	tests := []struct {
		original, set, current string
		want                   restoreAction
	}{
		{"0", "10", "10", restoreOriginal},
		{"0", "10", "0", unchanged},
		{"0", "10", "5", leaveForeign},
		{"0", "1", "1", restoreOriginal},
		{"ACCEPT", "DROP", "DROP", restoreOriginal},
		{"ACCEPT", "DROP", "ACCEPT", unchanged},
		{"0", "", "5", leaveForeign}, // what kubernix set is unknown
		{"1", "1", "1", unchanged},
	}
	for _, tt := range tests {
		if got := decideRestore(tt.original, tt.set, tt.current); got != tt.want {
			t.Errorf("decideRestore(original %s, set %q, current %s) = %v, want %v", tt.original, tt.set, tt.current, got, tt.want)
		}
	}
}

// TestRestore: the last down writes back what still holds kubernix's
// value, ip_forward before the FORWARD policy, and leaves what someone
// changed since.
func TestRestore(t *testing.T) {
	recorded := sysctlLedger{
		Original:      map[string]string{"kernel.panic": "0", "vm.overcommit_memory": "0", ipForward: "0"},
		Set:           map[string]string{"kernel.panic": "10", "vm.overcommit_memory": "1", ipForward: "1"},
		ForwardPolicy: &policyChange{Original: "ACCEPT", Set: "DROP"},
	}
	legacy := sysctlLedger{Original: map[string]string{"kernel.panic": "0", "vm.overcommit_memory": "0", "net.core.somaxconn": "128"}}
	tests := []struct {
		name       string
		ledger     sysctlLedger
		now        map[string]string
		policy     string
		wantWrites []string
		wantLeft   []string
	}{
		{name: "all still kubernix's", ledger: recorded,
			now: map[string]string{"kernel.panic": "10", "vm.overcommit_memory": "1", ipForward: "1"}, policy: "DROP",
			wantWrites: []string{"vm.overcommit_memory=0", "kernel.panic=0", "net.ipv4.ip_forward=0", forwardPolicySetting + "=ACCEPT"}},
		{name: "kernel.panic changed meanwhile", ledger: recorded,
			now: map[string]string{"kernel.panic": "5", "vm.overcommit_memory": "1", ipForward: "1"}, policy: "DROP",
			wantWrites: []string{"vm.overcommit_memory=0", "net.ipv4.ip_forward=0", forwardPolicySetting + "=ACCEPT"},
			wantLeft:   []string{"kernel.panic=5"}},
		{name: "the policy set back to ACCEPT meanwhile", ledger: recorded,
			now: map[string]string{"kernel.panic": "10", "vm.overcommit_memory": "1", ipForward: "1"}, policy: "ACCEPT",
			wantWrites: []string{"vm.overcommit_memory=0", "kernel.panic=0", "net.ipv4.ip_forward=0"}},
		{name: "a ledger without set values: the kubelet's count", ledger: legacy,
			now:        map[string]string{"kernel.panic": "10", "vm.overcommit_memory": "2", "net.core.somaxconn": "4096"},
			wantWrites: []string{"kernel.panic=0"},
			wantLeft:   []string{"vm.overcommit_memory=2", "net.core.somaxconn=4096"}},
		{name: "a sysctl that cannot be read is skipped", ledger: recorded,
			now: map[string]string{ipForward: "1"}, policy: "DROP",
			wantWrites: []string{"net.ipv4.ip_forward=0", forwardPolicySetting + "=ACCEPT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHost{sysctls: maps.Clone(tt.now), policy: tt.policy}
			left, err := tt.ledger.restore(h)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.writes, tt.wantWrites) {
				t.Errorf("writes %q, want %q", h.writes, tt.wantWrites)
			}
			var gotLeft []string
			for _, s := range left {
				gotLeft = append(gotLeft, s.name+"="+s.current)
			}
			if !slices.Equal(gotLeft, tt.wantLeft) {
				t.Errorf("left %q, want %q", gotLeft, tt.wantLeft)
			}
		})
	}
}
