package doctor

import (
	"errors"
	"strings"
	"testing"
)

func TestForwardPolicyResult(t *testing.T) {
	tests := []struct {
		name              string
		ipForward, policy string
		err               error
		want              Status
		wantDetail        string
		wantFix           string
	}{
		{name: "forwarding off, ACCEPT: up sets DROP", ipForward: "0", policy: "ACCEPT", want: StatusInfo, wantDetail: "policy ACCEPT", wantFix: "sets it to DROP"},
		{name: "forwarding on, ACCEPT: a router, left as it is", ipForward: "1", policy: "ACCEPT", want: StatusInfo, wantDetail: "forwards between all its interfaces", wantFix: "leaves that"},
		{name: "DROP", ipForward: "1", policy: "DROP", want: StatusOK, wantDetail: "policy DROP"},
		{name: "iptables fails", ipForward: "0", err: errors.New("iptables: executable file not found"), want: StatusWarn, wantDetail: "not found", wantFix: "iptables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, detail, fix := forwardPolicyResult(tt.ipForward, tt.policy, tt.err)
			if status != tt.want || !strings.Contains(detail, tt.wantDetail) || !strings.Contains(fix, tt.wantFix) {
				t.Errorf("forwardPolicyResult(%q, %q, %v) = %v, %q, %q; want %v, detail with %q, fix with %q",
					tt.ipForward, tt.policy, tt.err, status, detail, fix, tt.want, tt.wantDetail, tt.wantFix)
			}
			if status == StatusOK && fix != "" {
				t.Errorf("fix %q for an OK value", fix)
			}
		})
	}
}
