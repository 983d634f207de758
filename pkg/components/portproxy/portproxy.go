// Package portproxy describes kubernix's port proxy: the hidden
// `kubernix port-proxy` subcommand (pkg/portproxy), which publishes the
// ports of [[nodes]] ports (config.PortMapping) on the host.
package portproxy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/portproxy"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "port-proxy"

// HealthzPort is the TCP port of its plain-HTTP /healthz on the bridge
// address: next to the upstream components' (10257 controller-manager,
// 10258 cloud-controller-manager, 10259 scheduler), one none of them uses.
const HealthzPort = 10260

// Spec is what the command line is built from.
type Spec struct {
	// Self is the kubernix binary (os.Executable).
	Self string
	// Forwards are the published ports, in [[nodes]] order.
	Forwards []portproxy.Forward
	// IP is where /healthz listens: the bridge address.
	IP netip.Addr
	// RootlesskitAPI is rootlesskit's API socket in a rootless cluster,
	// whose port driver then publishes the ports on the host; "" as root.
	RootlesskitAPI string
}

// HealthURL is the /healthz endpoint: 200 once every port is published.
func (s Spec) HealthURL() string {
	return components.HealthURL(s.IP, HealthzPort, false)
}

// Describe returns the port proxy: an Infrastructure-phase process of this
// binary that needs nothing (it dials a node only when a connection
// comes), so that the host ports are taken, or their conflict is
// reported, before the rest of the cluster boots.
func Describe(s Spec) components.Description {
	var lines []string
	for _, f := range s.Forwards {
		lines = append(lines, fmt.Sprintf("%s/%s -> %s", f.Listen, f.Proto, f.Target))
	}
	return components.Description{
		Name: Name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.Infrastructure,
		Binary: components.SelfBinary, Command: Command(s), Probe: components.Probe{HTTPGet: s.HealthURL()},
		Ports:   []components.Port{{Name: "healthz", IP: s.IP, Port: HealthzPort}},
		Summary: "publish on the host " + strings.Join(lines, ", "),
	}
}

// Command returns the process: `kubernix port-proxy --forward=... --healthz=...`.
func Command(s Spec) process.Command {
	args := []string{"port-proxy", "--healthz=" + netip.AddrPortFrom(s.IP, HealthzPort).String()}
	for _, f := range s.Forwards {
		args = append(args, "--forward="+f.String())
	}
	if s.RootlesskitAPI != "" {
		args = append(args, "--rootlesskit-api="+s.RootlesskitAPI)
	}
	return process.Command{Path: s.Self, Args: args}
}
