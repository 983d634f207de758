package loadbalancer

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// svc is a LoadBalancer Service with uid, asking for want
// (spec.loadBalancerIP, "" for any) and holding has in its status.
func svc(uid, want, has string) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "svc-" + uid, UID: types.UID(uid)},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerIP: want},
	}
	if has != "" {
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: has}}
	}
	return s
}

func lister(t *testing.T, svcs ...*v1.Service) corelisters.ServiceLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range svcs {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewServiceLister(idx)
}

func TestPoolAllocates(t *testing.T) {
	const pool = "10.9.32.0/30" // two usable addresses: .1 and .2
	tests := []struct {
		name     string
		existing []*v1.Service // in the cache
		earlier  []*v1.Service // ensured before, in order
		freed    []*v1.Service // deleted after earlier
		ensure   *v1.Service
		want     string // the address; "" with wantErr
		wantErr  string
	}{
		{name: "first gets the lowest", ensure: svc("a", "", ""), want: "10.9.32.1"},
		{name: "second gets the next", earlier: []*v1.Service{svc("a", "", "")}, ensure: svc("b", "", ""), want: "10.9.32.2"},
		{name: "status kept after a restart", existing: []*v1.Service{svc("a", "", "10.9.32.2")}, ensure: svc("a", "", "10.9.32.2"), want: "10.9.32.2"},
		{name: "others' status is taken", existing: []*v1.Service{svc("a", "", "10.9.32.1")}, ensure: svc("b", "", ""), want: "10.9.32.2"},
		{name: "freed address comes back", earlier: []*v1.Service{svc("a", "", ""), svc("b", "", "")},
			freed: []*v1.Service{svc("a", "", "")}, ensure: svc("c", "", ""), want: "10.9.32.1"},
		{name: "requested address", ensure: svc("a", "10.9.32.2", ""), want: "10.9.32.2"},
		{name: "requested outside the pool", ensure: svc("a", "10.9.33.1", ""), wantErr: "not an address of the LoadBalancer pool 10.9.32.0/30"},
		{name: "requested broadcast", ensure: svc("a", "10.9.32.3", ""), wantErr: "not an address of the LoadBalancer pool"},
		{name: "requested taken", earlier: []*v1.Service{svc("a", "", "")}, ensure: svc("b", "10.9.32.1", ""), wantErr: "taken by another Service"},
		{name: "status outside the pool ignored", ensure: svc("a", "", "192.168.1.5"), want: "10.9.32.1"},
		{name: "exhausted", earlier: []*v1.Service{svc("a", "", ""), svc("b", "", "")}, ensure: svc("c", "", ""), wantErr: ErrPoolExhausted.Error()},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPool([]netip.Prefix{netip.MustParsePrefix(pool)}, lister(t, tt.existing...))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.earlier {
				if _, err := p.EnsureLoadBalancer(ctx, "c", s, nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range tt.freed {
				if err := p.EnsureLoadBalancerDeleted(ctx, "c", s); err != nil {
					t.Fatal(err)
				}
				if _, exists, _ := p.GetLoadBalancer(ctx, "c", s); exists {
					t.Errorf("%s still has an address after EnsureLoadBalancerDeleted", s.Name)
				}
			}
			st, err := p.EnsureLoadBalancer(ctx, "c", tt.ensure, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("EnsureLoadBalancer = %v, %v; want error %q", st, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Ingress[0].IP; got != tt.want {
				t.Errorf("EnsureLoadBalancer gave %s, want %s", got, tt.want)
			}
			got, exists, err := p.GetLoadBalancer(ctx, "c", tt.ensure)
			if err != nil || !exists || got.Ingress[0].IP != tt.want {
				t.Errorf("GetLoadBalancer = %v, %v, %v; want %s", got, exists, err, tt.want)
			}
		})
	}
}

func TestNewPoolRefuses(t *testing.T) {
	for _, p := range []string{"10.9.32.0/31", "fd00::/63", "fd00::/127"} {
		if _, err := NewPool([]netip.Prefix{netip.MustParsePrefix(p)}, lister(t)); err == nil {
			t.Errorf("NewPool(%s) = nil error", p)
		}
	}
}
