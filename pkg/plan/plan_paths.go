package plan

import (
	"net/netip"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// APIServerURL is the apiserver's URL on the cluster bridge,
// https://<bridge host address>:<Cfg.APIServerPort>: where the nodes'
// kubelets and kube-proxies reach it (their kubeconfigs hold it), and
// pods through the kubernetes Service, whose endpoint it is. For a
// cluster run as root the bridge address is also the host's own; a
// rootless cluster's exists only inside rootlesskit's namespaces.
func (p *Plan) APIServerURL() string {
	return "https://" + netip.AddrPortFrom(p.APIServerIP, uint16(p.Cfg.APIServerPort)).String()
}

// Outside reports whether the plan is of a rootless cluster seen from the
// host, outside rootlesskit's namespaces: its network links, iptables
// rules and mounts are not visible from here and vanish with the
// namespaces.
func (p *Plan) Outside() bool { return p.Rootless && !rootless.InUserNamespace() }

// WrapperPath is where the OCI runtime wrapper script of a rootless
// cluster is rendered.
func (p *Plan) WrapperPath() string {
	return filepath.Join(p.Paths.State, "bin", rootless.WrapperName)
}

// UsesHostNamespaces reports whether plan's node runs in the host's own
// namespaces: the process executor as root (a rootless cluster's "host"
// namespaces are rootlesskit's, private to it).
func (p *Plan) UsesHostNamespaces() bool {
	return len(p.Nodes) > 0 && p.Nodes[0].Exec.HostNetwork() && !p.Rootless
}

// NodeByName is the plan's node named name, nil if none.
func (p *Plan) NodeByName(name string) *node.Node {
	for _, nd := range p.Nodes {
		if nd.Name == name {
			return nd
		}
	}
	return nil
}
