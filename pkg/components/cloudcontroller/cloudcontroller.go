// Package cloudcontroller describes kubernix's cloud controller: the
// hidden `kubernix cloud-controller` subcommand (pkg/loadbalancer), which
// runs the upstream service controller of k8s.io/cloud-provider so that
// LoadBalancer Services get an IP of the cluster's pool of each of their
// IP families, and, with the ingress addon, the Gateway provisioner
// (pkg/gateway).
package cloudcontroller

import (
	"net/netip"
	"strings"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "cloud-controller"

// HealthzPort is the TCP port of its plain-HTTP /healthz on the bridge
// address: the upstream cloud-controller-manager's port (10258).
const HealthzPort = 10258

// Spec is what the command line is built from.
type Spec struct {
	// Self is the kubernix binary (os.Executable).
	Self string
	// ClusterName is the cluster's name (config.Config.Name).
	ClusterName string
	// Kubeconfig is the controller's identity; its RBAC binding is
	// applied by the components named in After.
	Kubeconfig string
	// Pools are the LoadBalancer pools, one per IP family of the
	// cluster, primary first (config.Network.LoadBalancer and
	// LoadBalancer6).
	Pools []netip.Prefix
	// IP is where /healthz listens: the bridge address.
	IP netip.Addr
	// RootlesskitAPI is rootlesskit's API socket in a rootless cluster,
	// through which the ports of LoadBalancer IPs are published on the
	// host's 127.0.0.1; "" as root.
	RootlesskitAPI string
	// GatewayTemplate, with the ingress addon, is the namespace/name of
	// its traefik Deployment, from which the Gateway provisioner
	// (pkg/gateway) makes each Gateway's traefik; "" without it.
	GatewayTemplate string
	// After are the IDs of components, besides the ready apiserver, it
	// waits for: those that grant its identity the RBAC it needs.
	After []string
}

// HealthURL is the /healthz endpoint: 200 once the controller's Service
// and Node caches are synced.
func (s Spec) HealthURL() string {
	return "http://" + netip.AddrPortFrom(s.IP, HealthzPort).String() + "/healthz"
}

// Describe returns the cloud controller: a Controller-phase process
// of this binary that starts once the apiserver is ready and its RBAC
// exists (an earlier list would be forbidden and back off).
func Describe(s Spec) components.Description {
	return components.Description{
		Name: Name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.Controller,
		Needs: append([]string{apiserver.ReadyName}, s.After...), Binary: components.SelfBinary, Command: Command(s),
		Ports: []components.Port{{Name: "healthz", IP: s.IP, Port: HealthzPort}},
		Probe: components.Probe{HTTPGet: s.HealthURL()},
	}
}

// Command returns the process: `kubernix cloud-controller`, its pools in
// one --pool, comma-separated.
func Command(s Spec) process.Command {
	pools := make([]string, len(s.Pools))
	for i, p := range s.Pools {
		pools[i] = p.String()
	}
	args := []string{"cloud-controller",
		"--kubeconfig=" + s.Kubeconfig,
		"--pool=" + strings.Join(pools, ","),
		"--healthz=" + netip.AddrPortFrom(s.IP, HealthzPort).String(),
		"--cluster-name=" + s.ClusterName,
	}
	if s.RootlesskitAPI != "" {
		args = append(args, "--rootlesskit-api="+s.RootlesskitAPI)
	}
	if s.GatewayTemplate != "" {
		args = append(args, "--gateway-template="+s.GatewayTemplate)
	}
	return process.Command{Path: s.Self, Args: args}
}
