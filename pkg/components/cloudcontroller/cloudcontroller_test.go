package cloudcontroller

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCommandPools(t *testing.T) {
	v4, v6 := netip.MustParsePrefix("10.10.32.0/20"), netip.MustParsePrefix("fd12:3456:789a:2::/112")
	tests := []struct {
		name  string
		pools []netip.Prefix
		want  string
	}{
		// The single-pool line of the golden plans (pkg/plan/testdata).
		{name: "IPv4", pools: []netip.Prefix{v4}, want: "--pool=10.10.32.0/20"},
		{name: "IPv6", pools: []netip.Prefix{v6}, want: "--pool=fd12:3456:789a:2::/112"},
		{name: "dual, IPv4 first", pools: []netip.Prefix{v4, v6}, want: "--pool=10.10.32.0/20,fd12:3456:789a:2::/112"},
		{name: "dual, IPv6 first", pools: []netip.Prefix{v6, v4}, want: "--pool=fd12:3456:789a:2::/112,10.10.32.0/20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Spec{Self: "/kubernix", ClusterName: "golden", Kubeconfig: "/k", Pools: tt.pools, IP: netip.MustParseAddr("10.10.0.1")}
			got := strings.Join(Command(s).Args, " ")
			want := "cloud-controller --kubeconfig=/k " + tt.want + " --healthz=10.10.0.1:10258 --cluster-name=golden"
			if got != want {
				t.Errorf("Command args\n%s\nwant\n%s", got, want)
			}
		})
	}
}
