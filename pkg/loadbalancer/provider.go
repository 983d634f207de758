// Package loadbalancer gives a kubernix cluster's LoadBalancer Services
// their IPs: a cloudprovider.Interface (k8s.io/cloud-provider) whose only
// part is a LoadBalancer that hands out addresses of the cluster's pools
// (config.Network.LoadBalancer and LoadBalancer6), run by the upstream
// service controller (k8s.io/cloud-provider/controllers/service), as
// cloud-provider-kind does. The addresses go into the Service's
// status.loadBalancer.ingress; kube-proxy then serves them on every node,
// and the host routes the pools to node 0 (pkg/network).
//
// Dual-stack: the controller has one pool per IP family, one or two. A
// Service gets one address per family of its spec.ipFamilies (set by the
// apiserver; where empty, the pools' families as the apiserver defaults
// them), in that order, each from the pool of that family; its deprecated
// spec.loadBalancerIP asks for the address of its own family. A family
// without a pool is an error (ErrNoPool) for a SingleStack or
// RequireDualStack Service; a PreferDualStack Service gets its other
// family's address and a Warning Event. An IPv4 pool never hands out its
// network and broadcast addresses; an IPv6 pool, having no broadcast
// address, only never hands out its network address (::0 of the prefix,
// the subnet-router anycast address). In a rootless cluster a Service's
// IPv4 address, or its IPv6 one when it has no IPv4 address, is
// published on the host's 127.0.0.1 (Publisher).
package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
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
// Service one address per IP family it has, from the pool of that family
// (see the package doc): the one it asked for (spec.loadBalancerIP), else
// the one it already has in its status, else the lowest free one. The
// Services' statuses are the record: after a restart each Service keeps
// the addresses its status shows, and a new one gets none of those.
// Deleting the Service (or changing its type) frees its addresses for the
// next. Safe for concurrent use.
type Pool struct {
	// prefixes are the pools, one per IP family, primary first.
	prefixes []netip.Prefix
	services corelisters.ServiceLister
	// publish, if set, also publishes a Service's ports (publishTarget)
	// (rootless: on the host's loopback); events, if set, reports where,
	// and missing pools, on the Service.
	publish Publisher
	events  record.EventRecorder

	mu sync.Mutex
	// byUID are the addresses this process handed out or confirmed, by
	// Service UID: they count as taken before the Services' statuses (in
	// services, a cache) show them.
	byUID map[types.UID][]netip.Addr
}

// NewPool returns the pool of prefixes, one or two, primary family first
// (ValidatePools: an IPv4 prefix of /30 or larger, whose network and
// broadcast addresses are never handed out, and an IPv6 prefix of /64 to
// /126, whose network address is never handed out), reading the other
// Services' addresses from services. It errors when ValidatePools does.
func NewPool(prefixes []netip.Prefix, services corelisters.ServiceLister) (*Pool, error) {
	masked := make([]netip.Prefix, len(prefixes))
	for i, p := range prefixes {
		masked[i] = p.Masked()
	}
	if err := ValidatePools(masked); err != nil {
		return nil, err
	}
	return &Pool{prefixes: masked, services: services, byUID: map[types.UID][]netip.Addr{}}, nil
}

// RecordEvents makes the pool report on the Services with events: a
// Warning (reason NoLoadBalancerPool) when a PreferDualStack Service gets
// no address of a family the pool has no prefix of. Call before use.
func (p *Pool) RecordEvents(events record.EventRecorder) { p.events = events }

// PublishWith makes the pool publish each Service's ports with pub as
// well, and record where in an Event (reason Published) on the Service
// with events, and in its status: an ingress entry after the IPs,
// hostname "localhost" (kube-proxy serves only IP entries). Only IPv4
// addresses are published: pub publishes on the host's 127.0.0.1, and
// rootless IPv6 is not supported yet. Call before use.
func (p *Pool) PublishWith(pub Publisher, events record.EventRecorder) {
	p.publish, p.events = pub, events
}

// GetLoadBalancer reports the addresses of svc, if it has any of the pool.
func (p *Pool) GetLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	addrs := p.held(svc)
	if len(addrs) == 0 {
		return nil, false, nil
	}
	return status(addrs), true, nil
}

// GetLoadBalancerName is the default name of the upstream interface
// ("a" + the Service's UID without dashes, at most 32 bytes).
func (p *Pool) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// EnsureLoadBalancer gives svc its addresses (see Pool) and returns the
// status that names them, in the order of its IP families. It errors when
// spec.loadBalancerIP is outside the pool or another Service's, wrapping
// ErrNoPool when a family svc needs has no pool, and wrapping
// ErrPoolExhausted when no address of a family is free.
func (p *Pool) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, _ []*v1.Node) (*v1.LoadBalancerStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	addrs, missing, err := p.allocate(svc)
	if err != nil {
		return nil, err
	}
	before := p.byUID[svc.UID]
	p.byUID[svc.UID] = addrs
	if len(missing) > 0 {
		p.eventf(svc, v1.EventTypeWarning, "NoLoadBalancerPool", "%v %s (no --pool of it): the PreferDualStack Service gets only %v",
			ErrNoPool, families(missing), addrs)
	}
	st := status(addrs)
	if p.publish == nil {
		return st, nil
	}
	gone := slices.DeleteFunc(slices.Clone(before), func(a netip.Addr) bool { return slices.Contains(addrs, a) })
	if err := p.unpublish(ctx, gone); err != nil {
		return nil, err
	}
	return p.publishAll(ctx, svc, st, addrs)
}

// UpdateLoadBalancer does nothing: kube-proxy on every node serves the
// addresses, whatever the nodes.
func (p *Pool) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return nil
}

// EnsureLoadBalancerDeleted frees svc's addresses, and what was published
// of them.
func (p *Pool) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.publish != nil {
		if err := p.unpublish(ctx, p.held(svc)); err != nil {
			return err
		}
	}
	delete(p.byUID, svc.UID)
	return nil
}

// publishAll publishes svc's ports on one address of addrs (see
// publishTarget), says where in an Event and adds the "localhost" entry
// to st. Call with mu held.
func (p *Pool) publishAll(ctx context.Context, svc *v1.Service, st *v1.LoadBalancerStatus, addrs []netip.Addr) (*v1.LoadBalancerStatus, error) {
	a, ok := publishTarget(addrs)
	if !ok {
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
	p.eventf(svc, v1.EventTypeNormal, "Published", "LoadBalancer IP %s published on the host at %s", a, strings.Join(list, ", "))
	st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{Hostname: "localhost"})
	return st, nil
}

// unpublish removes what was published of addrs. Call with mu held.
func (p *Pool) unpublish(ctx context.Context, addrs []netip.Addr) error {
	var errs []error
	for _, a := range addrs {
		if err := p.publish.Unpublish(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("LoadBalancer IP %s: %w", a, err))
		}
	}
	return errors.Join(errs...)
}

// publishTarget is the address of addrs whose ports are published on
// the host's 127.0.0.1 (one port maps to one address): the IPv4 one,
// else the IPv6 one (an IPv6 cluster's); false for none.
func publishTarget(addrs []netip.Addr) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is4() {
			return a, true
		}
	}
	if len(addrs) > 0 {
		return addrs[0], true
	}
	return netip.Addr{}, false
}

// eventf records an Event on svc, if the pool has a recorder.
func (p *Pool) eventf(svc *v1.Service, kind, reason, format string, args ...any) {
	if p.events != nil {
		p.events.Eventf(svc, kind, reason, format, args...)
	}
}

// allocate picks svc's addresses, one per family of familiesOf(svc) that
// has a pool, in that order, and returns them with the families that have
// none: only a PreferDualStack Service that gets an address may miss one.
// Call with mu held.
func (p *Pool) allocate(svc *v1.Service) ([]netip.Addr, []v1.IPFamily, error) {
	taken, err := p.taken(svc.UID)
	if err != nil {
		return nil, nil, err
	}
	fams := p.familiesOf(svc)
	req, err := p.requested(svc, fams, taken)
	if err != nil {
		return nil, nil, err
	}
	mine, shown := p.byUID[svc.UID], p.statusAddrs(svc)
	var out []netip.Addr
	var missing []v1.IPFamily
	for _, f := range fams {
		prefix, ok := p.prefixOf(f)
		if !ok {
			missing = append(missing, f)
			continue
		}
		a, err := pick(prefix, req, mine, shown, taken)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
	}
	prefer := svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack
	if len(missing) > 0 && (len(out) == 0 || !prefer) {
		return nil, nil, fmt.Errorf("%w %s (no --pool of it): make the Service PreferDualStack or of a pool's family (spec.ipFamilyPolicy, spec.ipFamilies)",
			ErrNoPool, families(missing))
	}
	return out, missing, nil
}

// pick is a Service's address of prefix: req if it is of prefix, else
// the one this process gave it (mine), else the one its status shows
// (shown) unless another Service holds it, else the lowest free one.
func pick(prefix netip.Prefix, req netip.Addr, mine, shown []netip.Addr, taken map[netip.Addr]bool) (netip.Addr, error) {
	if prefix.Contains(req) {
		return req, nil
	}
	if a, ok := firstIn(prefix, mine); ok {
		return a, nil
	}
	if a, ok := firstIn(prefix, shown); ok && !taken[a] {
		return a, nil
	}
	for a := prefix.Addr().Next(); usableIn(prefix, a); a = a.Next() {
		if !taken[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%w %s (%s): delete a LoadBalancer Service, or choose a larger pool",
		ErrPoolExhausted, prefix, configFlag(familyOf(prefix.Addr())))
}

// requested is svc's spec.loadBalancerIP, the zero Addr if none. It
// errors when the address is not one of the pool of its family, that
// family is not among fams, or another Service holds it.
func (p *Pool) requested(svc *v1.Service, fams []v1.IPFamily, taken map[netip.Addr]bool) (netip.Addr, error) {
	req := svc.Spec.LoadBalancerIP
	if req == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(req)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %q: not an IP address", req)
	}
	f := familyOf(a)
	prefix, ok := p.prefixOf(f)
	switch {
	case !ok:
		return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %s: %w %s (no --pool of it)", a, ErrNoPool, f)
	case !usableIn(prefix, a):
		return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %q: not an address of the LoadBalancer pool %s (%s)", req, prefix, configFlag(f))
	case !slices.Contains(fams, f):
		return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %s: the Service has no %s family (spec.ipFamilies %v)", a, f, fams)
	case taken[a]:
		return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %s: taken by another Service", a)
	}
	return a, nil
}

// familiesOf are the IP families svc gets an address of, in order: its
// spec.ipFamilies, or, where no apiserver has set them, the pools'
// families as the apiserver would default them: the primary one, or all
// for a PreferDualStack or RequireDualStack Service.
func (p *Pool) familiesOf(svc *v1.Service) []v1.IPFamily {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies
	}
	var out []v1.IPFamily
	for _, prefix := range p.prefixes {
		out = append(out, familyOf(prefix.Addr()))
	}
	if pol := svc.Spec.IPFamilyPolicy; pol == nil || *pol == v1.IPFamilyPolicySingleStack {
		return out[:1]
	}
	return out
}

// taken are the pool's addresses other Services hold: those handed out
// here and those their statuses show. Call with mu held.
func (p *Pool) taken(self types.UID) (map[netip.Addr]bool, error) {
	out := map[netip.Addr]bool{}
	for uid, addrs := range p.byUID {
		if uid == self {
			continue
		}
		for _, a := range addrs {
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
		for _, a := range p.statusAddrs(s) {
			out[a] = true
		}
	}
	return out, nil
}

// held are the addresses of svc: those handed out here, else those its
// status shows. Call with mu held.
func (p *Pool) held(svc *v1.Service) []netip.Addr {
	if addrs, ok := p.byUID[svc.UID]; ok {
		return addrs
	}
	return p.statusAddrs(svc)
}

// statusAddrs are the ingress IPs of svc's status that the pool could have
// handed out, the first of each family, in the status's order.
func (p *Pool) statusAddrs(svc *v1.Service) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		a, err := netip.ParseAddr(in.IP)
		if err != nil || slices.ContainsFunc(out, func(b netip.Addr) bool { return b.Is4() == a.Is4() }) {
			continue
		}
		if prefix, ok := p.prefixOf(familyOf(a)); ok && usableIn(prefix, a) {
			out = append(out, a)
		}
	}
	return out
}

// prefixOf is the pool's prefix of family f.
func (p *Pool) prefixOf(f v1.IPFamily) (netip.Prefix, bool) {
	for _, prefix := range p.prefixes {
		if familyOf(prefix.Addr()) == f {
			return prefix, true
		}
	}
	return netip.Prefix{}, false
}

// firstIn is the first address of addrs in prefix.
func firstIn(prefix netip.Prefix, addrs []netip.Addr) (netip.Addr, bool) {
	for _, a := range addrs {
		if prefix.Contains(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// status is the LoadBalancer status naming addrs, in order, as VIPs that
// kube-proxy serves on every node.
func status(addrs []netip.Addr) *v1.LoadBalancerStatus {
	vip := v1.LoadBalancerIPModeVIP
	st := &v1.LoadBalancerStatus{}
	for _, a := range addrs {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: a.String(), IPMode: &vip})
	}
	return st
}
