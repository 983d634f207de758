package netpolagent

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/kubernix/kubernix/pkg/components/apiserver"
)

func TestDescribe(t *testing.T) {
	base := Spec{Self: "/usr/bin/kubernix", NodeName: "n-0", NodeIP: netip.MustParseAddr("10.10.0.2"),
		Kubeconfig: "/s/kubeconfig/netpol-agent.kubeconfig", Table: SandboxTable, ToolDir: "/s/nodes/n-0/netpol-agent-path",
		NFT: "/usr/sbin/nft", After: []string{"cluster-admins"}}
	tests := []struct {
		name      string
		change    func(*Spec)
		wantNeeds []string
		wantErr   bool
	}{
		{"in a sandbox", func(s *Spec) { s.Sandbox = "sandbox@n-0" }, []string{apiserver.ReadyName, "cluster-admins", "sandbox@n-0"}, false},
		{"host namespaces", func(s *Spec) { s.Table = "kubernix-netpol-0123abcd" }, []string{apiserver.ReadyName, "cluster-admins"}, false},
		{"nft not absolute", func(s *Spec) { s.NFT = "nft" }, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.change(&s)
			d, err := Describe(s)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if d.Name != Name || d.Scope != "n-0" || !d.InSandbox || !slices.Equal(d.Needs, tt.wantNeeds) {
				t.Errorf("name %q scope %q in sandbox %v needs %q; want %s, n-0, true, %q", d.Name, d.Scope, d.InSandbox, d.Needs, Name, tt.wantNeeds)
			}
			wantArgs := []string{"netpol-agent", "--kubeconfig=/s/kubeconfig/netpol-agent.kubeconfig", "--node=n-0",
				"--table=" + s.Table, "--healthz=10.10.0.2:10263"}
			if !slices.Equal(d.Command.Args, wantArgs) || !slices.Equal(d.Command.Env, []string{"PATH=" + s.ToolDir}) {
				t.Errorf("command %q env %q; want %q, PATH=%s", d.Command.Args, d.Command.Env, wantArgs, s.ToolDir)
			}
			if d.Probe.HTTPGet != "http://10.10.0.2:10263/healthz" {
				t.Errorf("probe %q", d.Probe.HTTPGet)
			}
			if len(d.Files) != 1 || d.Files[0].Path != s.ToolDir+"/nft" || d.Files[0].Link != s.NFT {
				t.Errorf("files %+v, want only the nft link in the tool dir", d.Files)
			}
		})
	}
}
