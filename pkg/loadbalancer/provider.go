// Package loadbalancer gives a kubernix cluster's LoadBalancer Services
// their IPs: a cloudprovider.Interface (k8s.io/cloud-provider) whose only
// part is a LoadBalancer that hands out addresses of the cluster's pool
// (config.Config.LoadBalancerCIDR), run by the upstream service
// controller (k8s.io/cloud-provider/controllers/service), as
// cloud-provider-kind does. The address goes into the Service's
// status.loadBalancer.ingress; kube-proxy then serves it on every node,
// and the host routes the pool to node 0 (pkg/network).
package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
)

// ProviderName is the cloud provider's name, as the service controller
// reports it.
const ProviderName = "kubernix"

// ErrPoolExhausted is returned (wrapped) when every address of the pool
// is taken.
var ErrPoolExhausted = errors.New("no free address in the LoadBalancer pool")

// Provider is a cloudprovider.Interface with only a LoadBalancer: the
// Pool. The other parts (instances, zones, routes, clusters) are not
// supported, so the service controller is the only controller it serves.
type Provider struct {
	pool *Pool
}

// NewProvider returns the provider of pool.
func NewProvider(pool *Pool) *Provider { return &Provider{pool: pool} }

// Initialize does nothing: the pool needs no client of its own.
func (p *Provider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer returns the pool.
func (p *Provider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return p.pool, true }

// Instances is not supported.
func (p *Provider) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 is not supported.
func (p *Provider) InstancesV2() (cloudprovider.InstancesV2, bool) { return nil, false }

// Zones is not supported.
func (p *Provider) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not supported.
func (p *Provider) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes is not supported: the host routes pods itself (pkg/network).
func (p *Provider) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName is ProviderName.
func (p *Provider) ProviderName() string { return ProviderName }

// HasClusterID is false: one cluster, no cluster ID.
func (p *Provider) HasClusterID() bool { return false }

// Pool is a cloudprovider.LoadBalancer that gives each LoadBalancer
// Service one IPv4 address of a prefix: the one it asked for
// (spec.loadBalancerIP) or already has in its status, else the lowest
// free one. The Services' statuses are the record: after a restart each
// Service keeps the address its status shows, and a new one gets none of
// those. Deleting the Service (or changing its type) frees its address
// for the next. Safe for concurrent use.
type Pool struct {
	prefix   netip.Prefix
	services corelisters.ServiceLister
	// publish, if set, also publishes each address's ports (rootless:
	// on the host's loopback); events reports where, on the Service.
	publish Publisher
	events  record.EventRecorder

	mu sync.Mutex
	// byUID are the addresses this process handed out or confirmed, by
	// Service UID: they count as taken before the Services' statuses (in
	// services, a cache) show them.
	byUID map[types.UID]netip.Addr
}

// NewPool returns the pool of prefix (IPv4, /30 or larger: its network
// and broadcast addresses are never handed out), reading the other
// Services' addresses from services.
func NewPool(prefix netip.Prefix, services corelisters.ServiceLister) (*Pool, error) {
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return nil, fmt.Errorf("LoadBalancer pool %s: must be an IPv4 prefix of /30 or larger", prefix)
	}
	return &Pool{prefix: prefix, services: services, byUID: map[types.UID]netip.Addr{}}, nil
}

// PublishWith makes the pool publish each Service's ports with pub as
// well, and record where in an Event (reason Published) on the Service
// with events, and in its status: a second ingress entry, hostname
// "localhost" (kube-proxy serves only IP entries). Call before use.
func (p *Pool) PublishWith(pub Publisher, events record.EventRecorder) {
	p.publish, p.events = pub, events
}

// GetLoadBalancer reports the address of svc, if it has one of the pool.
func (p *Pool) GetLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.byUID[svc.UID]
	if !ok {
		a, ok = p.statusAddr(svc)
	}
	if !ok {
		return nil, false, nil
	}
	return status(a), true, nil
}

// GetLoadBalancerName is the default name of the upstream interface
// ("a" + the Service's UID without dashes, at most 32 bytes).
func (p *Pool) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// EnsureLoadBalancer gives svc its address (see Pool) and returns the
// status that names it. It errors when spec.loadBalancerIP is outside the
// pool or another Service's, and wrapping ErrPoolExhausted when no
// address is free.
func (p *Pool) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, _ []*v1.Node) (*v1.LoadBalancerStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, err := p.allocate(svc)
	if err != nil {
		return nil, err
	}
	p.byUID[svc.UID] = a
	st := status(a)
	if p.publish == nil {
		return st, nil
	}
	where, err := p.publish.Publish(ctx, a, svc.Spec.Ports)
	if err != nil {
		return nil, fmt.Errorf("LoadBalancer IP %s: %w", a, err)
	}
	var list []string
	for i, w := range where {
		list = append(list, fmt.Sprintf("%s/%s", w, svc.Spec.Ports[i].Protocol))
	}
	p.events.Eventf(svc, v1.EventTypeNormal, "Published", "LoadBalancer IP %s published on the host at %s", a, strings.Join(list, ", "))
	st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{Hostname: "localhost"})
	return st, nil
}

// UpdateLoadBalancer does nothing: kube-proxy on every node serves the
// address, whatever the nodes.
func (p *Pool) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return nil
}

// EnsureLoadBalancerDeleted frees svc's address, and what was published
// of it.
func (p *Pool) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.byUID[svc.UID]
	if !ok {
		a, ok = p.statusAddr(svc)
	}
	if ok && p.publish != nil {
		if err := p.publish.Unpublish(ctx, a); err != nil {
			return fmt.Errorf("LoadBalancer IP %s: %w", a, err)
		}
	}
	delete(p.byUID, svc.UID)
	return nil
}

// allocate picks svc's address: the requested one, the one it has, or
// the lowest free one. Call with mu held.
func (p *Pool) allocate(svc *v1.Service) (netip.Addr, error) {
	taken, err := p.taken(svc.UID)
	if err != nil {
		return netip.Addr{}, err
	}
	if req := svc.Spec.LoadBalancerIP; req != "" {
		a, err := netip.ParseAddr(req)
		switch {
		case err != nil || !p.usable(a):
			return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %q: not an address of the LoadBalancer pool %s (--loadbalancer-cidr)", req, p.prefix)
		case taken[a]:
			return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %s: taken by another Service", a)
		}
		return a, nil
	}
	if a, ok := p.byUID[svc.UID]; ok {
		return a, nil
	}
	if a, ok := p.statusAddr(svc); ok && !taken[a] {
		return a, nil
	}
	for a := p.prefix.Addr().Next(); p.usable(a); a = a.Next() {
		if !taken[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%w %s (--loadbalancer-cidr): delete a LoadBalancer Service, or choose a larger pool", ErrPoolExhausted, p.prefix)
}

// taken are the pool's addresses other Services hold: those handed out
// here and those their statuses show. Call with mu held.
func (p *Pool) taken(self types.UID) (map[netip.Addr]bool, error) {
	out := map[netip.Addr]bool{}
	for uid, a := range p.byUID {
		if uid != self {
			out[a] = true
		}
	}
	all, err := p.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	for _, s := range all {
		if s.UID == self {
			continue
		}
		if a, ok := p.statusAddr(s); ok {
			out[a] = true
		}
	}
	return out, nil
}

// statusAddr is the first ingress IP of svc's status that the pool could
// have handed out.
func (p *Pool) statusAddr(svc *v1.Service) (netip.Addr, bool) {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && p.usable(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// usable reports whether a is a host address of the pool: inside it, and
// neither its network nor its broadcast address.
func (p *Pool) usable(a netip.Addr) bool {
	if !p.prefix.Contains(a) || a == p.prefix.Addr() {
		return false
	}
	return p.prefix.Contains(a.Next()) // not the last (broadcast) address
}

// status is the LoadBalancer status naming a, as a VIP that kube-proxy
// serves on every node.
func status(a netip.Addr) *v1.LoadBalancerStatus {
	vip := v1.LoadBalancerIPModeVIP
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: a.String(), IPMode: &vip}}}
}
