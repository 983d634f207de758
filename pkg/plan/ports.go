package plan

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	ppcomp "github.com/kubernix/kubernix/pkg/components/portproxy"
	"github.com/kubernix/kubernix/pkg/portproxy"
)

// describePortProxy describes, when a node publishes ports ([[nodes]]
// ports), the port proxy that publishes them on the host
// (pkg/portproxy): as root a userland proxy on the host, rootless
// through rootlesskit's API socket.
func describePortProxy(p *Plan) ([]Described, error) {
	forwards := p.Forwards()
	if len(forwards) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec := ppcomp.Spec{Self: self, Forwards: forwards, IP: p.APIServerIP}
	if p.Rootless && p.RootlesskitStateDir != "" {
		spec.RootlesskitAPI = filepath.Join(p.RootlesskitStateDir, "api.sock")
	}
	return plain(ppcomp.Describe(spec)), nil
}

// Forwards are the ports the plan's nodes publish on the host, in
// [[nodes]] order: each mapping's host address (config.PortMapping.Listen)
// to its node's IP of the primary family (the NodePorts and hostPorts of
// an IPv6 cluster answer on its IPv6 address) and node_port.
func (p *Plan) Forwards() []portproxy.Forward {
	var out []portproxy.Forward
	for _, nd := range p.Nodes {
		for _, m := range p.Cfg.NodeSpec(nd.Index).Ports {
			out = append(out, portproxy.Forward{Proto: m.Proto(), Listen: m.Listen(),
				Target: netip.AddrPortFrom(nd.PrimaryIP(), uint16(m.NodePort))})
		}
	}
	return out
}

// Published is a port a node publishes on the host, as status shows it.
type Published struct {
	// Listen is the host address and port, e.g. "127.0.0.1:8080".
	Listen string `json:"listen"`
	// Protocol is "TCP" or "UDP".
	Protocol string `json:"protocol"`
	// Node is the node's name; NodePort the port it reaches there.
	Node     string `json:"node"`
	NodePort int    `json:"nodePort"`
}

// String is the status line of p, e.g. "127.0.0.1:8080/TCP -> node kubernix-node-1 port 30080".
func (p Published) String() string {
	return fmt.Sprintf("%s/%s -> node %s port %d", p.Listen, p.Protocol, p.Node, p.NodePort)
}

// Published lists the ports the plan's nodes publish, as Forwards does.
func (p *Plan) Published() []Published {
	var out []Published
	for _, nd := range p.Nodes {
		for _, m := range p.Cfg.NodeSpec(nd.Index).Ports {
			out = append(out, Published{Listen: m.Listen().String(), Protocol: string(m.Proto()), Node: nd.Name, NodePort: m.NodePort})
		}
	}
	return out
}
