package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// The pools of the dual-stack tests: two IPv4 host addresses (.1, .2) and
// three IPv6 ones (::1 to ::3; ::0, the network address, is never given).
const (
	pool4 = "10.9.32.0/30"
	pool6 = "fd12:3456:789a:2::/126"
	net6  = "fd12:3456:789a:2::"
)

// dual is a LoadBalancer Service with uid of the families fams
// ("IPv6,IPv4"; "" for none set) and policy ("" for none), asking for
// want (spec.loadBalancerIP) and holding has in its status.
func dual(uid, fams, policy, want string, has ...string) *v1.Service {
	s := svc(uid, want, "")
	for _, f := range strings.Split(fams, ",") {
		if f != "" {
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, v1.IPFamily(f))
		}
	}
	if policy != "" {
		pol := v1.IPFamilyPolicy(policy)
		s.Spec.IPFamilyPolicy = &pol
	}
	for _, a := range has {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: a})
	}
	return s
}

// ingressIPs are the IPs of st, in order.
func ingressIPs(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP)
	}
	return out
}

func prefixes(pools string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range strings.Split(pools, ",") {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// dualCase is one case of TestPoolDualStack.
type dualCase struct {
	name      string
	pools     string        // comma-separated, primary first
	existing  []*v1.Service // in the cache
	earlier   []*v1.Service // ensured before, in order
	freed     []*v1.Service // deleted after earlier
	ensure    *v1.Service
	want      []string // the ingress IPs, in order; nil with wantErr
	wantErr   string
	wantIs    error  // with wantErr: the sentinel the error wraps, if any
	wantEvent string // an Event that must be recorded; none other may be
}

func TestPoolDualStack(t *testing.T) {
	const both, v6first = pool4 + "," + pool6, pool6 + "," + pool4
	const req, pref = "RequireDualStack", "PreferDualStack"
	tests := []dualCase{
		{name: "IPv4 then IPv6", pools: both, ensure: dual("a", "IPv4,IPv6", req, ""), want: []string{"10.9.32.1", net6 + "1"}},
		{name: "ipFamilies order kept", pools: both, ensure: dual("a", "IPv6,IPv4", req, ""), want: []string{net6 + "1", "10.9.32.1"}},
		{name: "IPv6 only", pools: both, ensure: dual("a", "IPv6", "SingleStack", ""), want: []string{net6 + "1"}},
		{name: "IPv6 pool alone", pools: pool6, ensure: dual("a", "IPv6", "", ""), want: []string{net6 + "1"}},
		{name: "no ipFamilies, single stack: primary pool", pools: v6first, ensure: dual("a", "", "", ""), want: []string{net6 + "1"}},
		{name: "no ipFamilies, dual: the pools' order", pools: v6first, ensure: dual("a", "", req, ""), want: []string{net6 + "1", "10.9.32.1"}},
		{name: "second gets the next of each", pools: both, earlier: []*v1.Service{dual("a", "IPv4,IPv6", req, "")},
			ensure: dual("b", "IPv6,IPv4", req, ""), want: []string{net6 + "2", "10.9.32.2"}},
		{name: "family added keeps the old address", pools: both, earlier: []*v1.Service{dual("a", "IPv4", "", "")},
			ensure: dual("a", "IPv4,IPv6", pref, ""), want: []string{"10.9.32.1", net6 + "1"}},
		{name: "freed addresses come back", pools: both, earlier: []*v1.Service{dual("a", "IPv4,IPv6", req, ""), dual("b", "IPv4,IPv6", req, "")},
			freed: []*v1.Service{dual("a", "IPv4,IPv6", req, "")}, ensure: dual("c", "IPv6,IPv4", req, ""), want: []string{net6 + "1", "10.9.32.1"}},
		{name: "statuses kept after a restart", pools: both, existing: []*v1.Service{dual("a", "IPv4,IPv6", req, "", net6+"3", "10.9.32.2")},
			ensure: dual("a", "IPv4,IPv6", req, "", net6+"3", "10.9.32.2"), want: []string{"10.9.32.2", net6 + "3"}},
		{name: "others' statuses are taken", pools: both, existing: []*v1.Service{dual("a", "IPv4,IPv6", req, "", "10.9.32.1", net6+"1")},
			ensure: dual("b", "IPv4,IPv6", req, ""), want: []string{"10.9.32.2", net6 + "2"}},
		{name: "IPv6 status outside the pool ignored", pools: both, ensure: dual("a", "IPv6", "", "", "fd00::5"), want: []string{net6 + "1"}},
		{name: "requested IPv6", pools: both, ensure: dual("a", "IPv4,IPv6", req, net6+"3"), want: []string{"10.9.32.1", net6 + "3"}},
		{name: "requested IPv4 of a dual Service", pools: both, ensure: dual("a", "IPv6,IPv4", req, "10.9.32.2"), want: []string{net6 + "1", "10.9.32.2"}},
		{name: "requested IPv6 network address", pools: both, ensure: dual("a", "IPv6", "", net6+"0"), wantErr: "not an address of the LoadBalancer pool " + pool6},
		{name: "requested IPv6 taken", pools: both, earlier: []*v1.Service{dual("a", "IPv6", "", "")},
			ensure: dual("b", "IPv6", "", net6+"1"), wantErr: "taken by another Service"},
		{name: "requested IPv6, Service IPv4 only", pools: both, ensure: dual("a", "IPv4", "", net6+"1"), wantErr: "the Service has no IPv6 family"},
		{name: "requested IPv6 without its pool", pools: pool4, ensure: dual("a", "IPv4,IPv6", pref, net6+"1"), wantErr: "IPv6", wantIs: ErrNoPool},
		{name: "IPv4 exhausted: dual refused", pools: both, earlier: []*v1.Service{dual("a", "IPv4", "", ""), dual("b", "IPv4", "", "")},
			ensure: dual("c", "IPv6,IPv4", req, ""), wantErr: pool4, wantIs: ErrPoolExhausted},
		{name: "IPv4 exhausted: IPv6 still given", pools: both, earlier: []*v1.Service{dual("a", "IPv4", "", ""), dual("b", "IPv4", "", "")},
			ensure: dual("c", "IPv6", "", ""), want: []string{net6 + "1"}},
		{name: "IPv6 exhausted", pools: both, earlier: []*v1.Service{dual("a", "IPv6", "", ""), dual("b", "IPv6", "", ""), dual("c", "IPv6", "", "")},
			ensure: dual("d", "IPv4,IPv6", req, ""), wantErr: pool6, wantIs: ErrPoolExhausted},
		{name: "RequireDualStack, IPv6 pool missing", pools: pool4, ensure: dual("a", "IPv4,IPv6", req, ""), wantErr: "IPv6", wantIs: ErrNoPool},
		{name: "PreferDualStack, IPv6 pool missing", pools: pool4, ensure: dual("a", "IPv4,IPv6", pref, ""), want: []string{"10.9.32.1"},
			wantEvent: "Warning NoLoadBalancerPool no LoadBalancer pool of the IP family IPv6"},
		{name: "PreferDualStack, IPv4 pool missing", pools: pool6, ensure: dual("a", "IPv6,IPv4", pref, ""), want: []string{net6 + "1"},
			wantEvent: "NoLoadBalancerPool no LoadBalancer pool of the IP family IPv4"},
		{name: "PreferDualStack, no pool of its only family", pools: pool4, ensure: dual("a", "IPv6", pref, ""), wantErr: "IPv6", wantIs: ErrNoPool},
		{name: "SingleStack, pool missing", pools: pool6, ensure: dual("a", "IPv4", "SingleStack", ""), wantErr: "IPv4", wantIs: ErrNoPool},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// run ensures tt.ensure after the earlier and freed Services, and checks
// the status, the error and the Events.
func (tt dualCase) run(t *testing.T) {
	ctx := context.Background()
	p, err := NewPool(prefixes(tt.pools), lister(t, tt.existing...))
	if err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(10)
	p.RecordEvents(events)
	for _, s := range tt.earlier {
		if _, err := p.EnsureLoadBalancer(ctx, "c", s, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range tt.freed {
		if err := p.EnsureLoadBalancerDeleted(ctx, "c", s); err != nil {
			t.Fatal(err)
		}
	}
	st, err := p.EnsureLoadBalancer(ctx, "c", tt.ensure, nil)
	if tt.wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
			t.Fatalf("EnsureLoadBalancer = %v, %v; want error %q (%v)", st, err, tt.wantErr, tt.wantIs)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := ingressIPs(st); !slices.Equal(got, tt.want) {
		t.Errorf("EnsureLoadBalancer gave %q, want %q", got, tt.want)
	}
	if got, exists, err := p.GetLoadBalancer(ctx, "c", tt.ensure); err != nil || !exists || !slices.Equal(ingressIPs(got), tt.want) {
		t.Errorf("GetLoadBalancer = %v, %v, %v; want %q", got, exists, err, tt.want)
	}
	close(events.Events)
	var got []string
	for ev := range events.Events {
		got = append(got, ev)
	}
	if tt.wantEvent == "" && len(got) > 0 || tt.wantEvent != "" && (len(got) != 1 || !strings.Contains(got[0], tt.wantEvent)) {
		t.Errorf("events %q, want %q", got, tt.wantEvent)
	}
}

func TestParsePools(t *testing.T) {
	tests := []struct {
		values  []string
		want    string
		wantErr []string // all in the error
	}{
		{values: []string{"10.9.32.0/20"}, want: "[10.9.32.0/20]"},
		{values: []string{"fd12::/64"}, want: "[fd12::/64]"},
		{values: []string{"fd12::5/112", " 10.9.32.3/30"}, want: "[fd12::/112 10.9.32.0/30]"},
		{values: nil, wantErr: []string{"0 LoadBalancer pools"}},
		{values: []string{"10.9.32.0/20", "fd12::/112", "fd13::/112"}, wantErr: []string{"3 LoadBalancer pools", "both IPv6"}},
		{values: []string{"10.9.32.0/20", "10.9.48.0/20"}, wantErr: []string{"both IPv4"}},
		{values: []string{"10.9.32.0/31", "fd12::/63"}, wantErr: []string{"/30 or larger", "10.9.32.0/31", "fd12::/63", "/64 to /126"}},
		{values: []string{"fd12::/127"}, wantErr: []string{"/64 to /126"}},
		{values: []string{"::ffff:10.9.32.0/120"}, wantErr: []string{"IPv4-mapped"}},
		{values: []string{"10.9.32.1", "nope/8"}, wantErr: []string{`"10.9.32.1"`, `"nope/8"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.values, ","), func(t *testing.T) {
			got, err := ParsePools(tt.values)
			if len(tt.wantErr) == 0 {
				if err != nil || fmt.Sprint(got) != tt.want {
					t.Errorf("ParsePools = %v, %v; want %s", got, err, tt.want)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ParsePools error %v, want one naming %q", err, w)
				}
			}
		})
	}
}

// TestPoolPublishesOneFamily checks that a publishing pool publishes a
// dual-stack Service's IPv4 address only and an IPv6-only Service's IPv6
// address, lists the IPs before the "localhost" entry, and unpublishes
// on a new spec.loadBalancerIP and on delete.
func TestPoolPublishesOneFamily(t *testing.T) {
	ctx := context.Background()
	f := &fakePorts{}
	p, err := NewPool(prefixes(pool6+","+pool4), lister(t))
	if err != nil {
		t.Fatal(err)
	}
	p.PublishWith(&RootlessPorts{ports: f}, record.NewFakeRecorder(10))
	s := dual("a", "IPv6,IPv4", "RequireDualStack", "")
	s.Spec.Ports = ports("8080/TCP")
	st, err := p.EnsureLoadBalancer(ctx, "c", s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ingressIPs(st); !slices.Equal(got, []string{net6 + "1", "10.9.32.1", ""}) || st.Ingress[2].Hostname != "localhost" {
		t.Errorf("status %+v, want the IPv6 and IPv4 address, then hostname localhost", st.Ingress)
	}
	if want := []string{"127.0.0.1:8080->10.9.32.1:8080/tcp"}; !slices.Equal(f.forwards(), want) {
		t.Errorf("forwards %q, want %q", f.forwards(), want)
	}
	s.Spec.LoadBalancerIP = "10.9.32.2"
	if _, err := p.EnsureLoadBalancer(ctx, "c", s, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:8080->10.9.32.2:8080/tcp"}; !slices.Equal(f.forwards(), want) {
		t.Errorf("after a new spec.loadBalancerIP the forwards %q, want %q", f.forwards(), want)
	}
	v6only := dual("b", "IPv6", "", "")
	v6only.Spec.Ports = ports("8081/TCP")
	if st, err := p.EnsureLoadBalancer(ctx, "c", v6only, nil); err != nil || len(st.Ingress) != 2 || st.Ingress[1].Hostname != "localhost" {
		t.Errorf("IPv6-only Service: %+v, %v; want its IPv6 entry, then localhost", st, err)
	}
	if want := []string{"127.0.0.1:8080->10.9.32.2:8080/tcp", "127.0.0.1:8081->" + net6 + "2:8081/tcp"}; !slices.Equal(f.forwards(), want) {
		t.Errorf("with an IPv6-only Service the forwards %q, want %q", f.forwards(), want)
	}
	for _, svc := range []*v1.Service{s, v6only} {
		if err := p.EnsureLoadBalancerDeleted(ctx, "c", svc); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.have) != 0 {
		t.Errorf("after delete the forwards %q remain", f.forwards())
	}
}
