package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rootless-containers/rootlesskit/v2/pkg/port"
	v1 "k8s.io/api/core/v1"

	"github.com/kubernix/kubernix/pkg/rootless"
)

// Publisher makes a LoadBalancer IP's ports reachable where the cluster's
// network is not: in a rootless cluster, from the host's loopback. Pool
// gives it IPv4 addresses only: rootless IPv6 is not supported yet.
type Publisher interface {
	// Publish makes exactly ports of ip reachable (forwards of ip's
	// other ports are removed) and returns where, in ports' order.
	Publish(ctx context.Context, ip netip.Addr, ports []v1.ServicePort) ([]netip.AddrPort, error)
	// Unpublish removes every forward of ip; none is no error.
	Unpublish(ctx context.Context, ip netip.Addr) error
}

// HostLoopback is where RootlessPorts publishes on the host.
var HostLoopback = netip.MustParseAddr("127.0.0.1")

// RootlessPorts publishes through rootlesskit's port driver (its REST API
// on the socket <rootlesskit state dir>/api.sock): each port P of a
// LoadBalancer IP is forwarded from the host's 127.0.0.1:P into the
// namespace, to IP:P, which the host routes there serve, but for a port
// below 1024: an ordinary user cannot bind those on the host (below
// net.ipv4.ip_unprivileged_port_start, 1024 by default), so they are
// published at HostPort(P), 8000 above (80 on 8080, 443 on 8443), the
// ports rootless development setups use for them. A port taken on the
// host fails to publish, with rootlesskit's error. The forwards are
// rootlesskit's record: a restarted controller finds them (ListPorts) and
// they end with rootlesskit.
type RootlessPorts struct {
	ports port.Manager
}

// privilegedShift is how far above its own port RootlessPorts publishes
// a port below 1024 on the host.
const privilegedShift = 8000

// HostPort is the port of the host's 127.0.0.1 at which RootlessPorts
// publishes a LoadBalancer port p: p itself from 1024 up, else
// p+8000 (80 → 8080, 443 → 8443).
func HostPort(p int32) int32 {
	if p < 1024 {
		return p + privilegedShift
	}
	return p
}

// NewRootlessPorts returns the publisher of rootlesskit's API socket
// apiSocket. It errors when the socket is not a rootlesskit API.
func NewRootlessPorts(apiSocket string) (*RootlessPorts, error) {
	ports, err := rootless.PortManager(apiSocket)
	if err != nil {
		return nil, err
	}
	return &RootlessPorts{ports: ports}, nil
}

// Publish implements Publisher. It errors naming the port that rootlesskit
// could not publish (e.g. taken on the host, or below 1024), or a protocol
// other than TCP and UDP.
func (r *RootlessPorts) Publish(ctx context.Context, ip netip.Addr, ports []v1.ServicePort) ([]netip.AddrPort, error) {
	var want []port.Spec
	var out []netip.AddrPort
	var errs []error
	for _, sp := range ports {
		if sp.Protocol != v1.ProtocolTCP && sp.Protocol != v1.ProtocolUDP {
			errs = append(errs, fmt.Errorf("port %d/%s: only TCP and UDP can be published on the host", sp.Port, sp.Protocol))
			continue
		}
		hp := HostPort(sp.Port)
		want = append(want, port.Spec{Proto: strings.ToLower(string(sp.Protocol)), ParentIP: HostLoopback.String(),
			ParentPort: int(hp), ChildIP: ip.String(), ChildPort: int(sp.Port)})
		out = append(out, netip.AddrPortFrom(HostLoopback, uint16(hp)))
	}
	have, err := r.ports.ListPorts(ctx)
	if err != nil {
		return nil, fmt.Errorf("rootlesskit: list ports: %w", err)
	}
	for _, st := range have {
		if st.Spec.ChildIP == ip.String() && !slices.Contains(want, st.Spec) {
			if err := r.ports.RemovePort(ctx, st.ID); err != nil {
				errs = append(errs, fmt.Errorf("rootlesskit: remove stale port %d: %w", st.ID, err))
			}
		}
	}
	for _, s := range want {
		if slices.ContainsFunc(have, func(st port.Status) bool { return st.Spec == s }) {
			continue
		}
		if _, err := r.ports.AddPort(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("publish %s:%d/%s on the host: %w", s.ParentIP, s.ParentPort, s.Proto, err))
		}
	}
	return out, errors.Join(errs...)
}

// Unpublish implements Publisher.
func (r *RootlessPorts) Unpublish(ctx context.Context, ip netip.Addr) error {
	have, err := r.ports.ListPorts(ctx)
	if err != nil {
		return fmt.Errorf("rootlesskit: list ports: %w", err)
	}
	var errs []error
	for _, st := range have {
		if st.Spec.ChildIP == ip.String() {
			if err := r.ports.RemovePort(ctx, st.ID); err != nil {
				errs = append(errs, fmt.Errorf("rootlesskit: remove port %d: %w", st.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
