package plan

import (
	"net/netip"

	"github.com/kubernix/kubernix/pkg/components"
)

// HostPort is a TCP port a component of the cluster listens on in the
// network namespace of the host (or of rootlesskit, in rootless mode).
type HostPort struct {
	// Component listening: its ID, and which of its listeners when it
	// has several, e.g. "etcd (client)", "kubelet@kx-node-0 (healthz)".
	Component string
	// IP it binds, e.g. the cluster bridge's host address.
	IP netip.Addr
	// Port number (TCP).
	Port int
	// Flag that moves the port, e.g. "--apiserver-port"; "" for a port
	// fixed by kubernix (mostly the upstream default of the component).
	Flag string
}

// HostPorts lists the ports of plan's components (Description.Ports) that
// bind in the caller's network namespace, in Describe's order: every
// component's except those of a node process inside a node sandbox with a
// network namespace of its own (the container executor's). Errors are
// Describe's.
func HostPorts(plan *Plan) ([]HostPort, error) {
	ds, err := Describe(plan)
	if err != nil {
		return nil, err
	}
	var out []HostPort
	for _, d := range ds {
		if nd := plan.NodeByName(d.Scope); nd != nil && d.InSandbox && !nd.Exec.HostNetwork() {
			continue
		}
		for _, p := range d.Ports {
			out = append(out, HostPort{Component: portName(d, p), IP: p.IP, Port: p.Port, Flag: p.Flag})
		}
	}
	return out, nil
}

// portName names listener p of d: its ID, then p's name in parentheses.
func portName(d components.Description, p components.Port) string {
	if p.Name == "" {
		return d.ID()
	}
	return d.ID() + " (" + p.Name + ")"
}
