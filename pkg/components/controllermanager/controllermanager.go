// Package controllermanager builds the kube-controller-manager command line.
// It allocates node pod CIDRs from the cluster CIDR; kubernix pre-assigns
// each node's pod CIDR on its Node object, which the allocator respects.
package controllermanager

import (
	"net/netip"
	"strconv"

	"github.com/kubernix/kubernix/pkg/release"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "kube-controller-manager"

// SecurePort is kube-controller-manager's HTTPS port (its upstream default).
const SecurePort = 10257

// Spec is what the command line is built from.
type Spec struct {
	// Release is the Kubernetes release Binary is built for: flags and
	// config fields that differ between releases are chosen from it.
	Release      release.Release
	Binary       string
	Kubeconfig   string
	IP           netip.Addr // bind address of the secure port
	ClusterCIDR  netip.Prefix
	NodeMaskSize int
	ServiceCIDR  netip.Prefix
	PKI          *pki.Bundle
	// FeatureGates are set with --feature-gates, gate name to on or off
	// (config.Config.FeatureGates); none when empty.
	FeatureGates map[string]bool
}

// HealthURL is the /healthz endpoint.
func (s Spec) HealthURL() string { return components.HealthURL(s.IP, SecurePort, true) }

// Describe returns the controller-manager. It starts with the apiserver
// serving: it waits for the apiserver's /healthz itself (up to 10 s, then
// it exits and is restarted) before it makes its controllers, and its
// process start-up (1 to 1.5 s on 2 busy cores) overlaps the apiserver's
// post-start hooks. Its /healthz is served with a certificate of the
// cluster CA and needs no client certificate.
func Describe(s Spec) components.Description {
	return components.Description{
		Name: Name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.Controller,
		Needs: []string{apiserver.Name}, Binary: Name, Command: Command(s),
		Ports: []components.Port{{IP: s.IP, Port: SecurePort}},
		Probe: components.Probe{HTTPGet: s.HealthURL(), CAFile: s.PKI.CA.Cert},
	}
}

// Command returns kube-controller-manager's process. Leader election is off:
// there is one instance, and electing would delay a restart by a lease.
func Command(s Spec) process.Command {
	return process.Command{
		Path: s.Binary,
		Args: append(append(components.ControllerArgs(s.Kubeconfig, s.IP, SecurePort, s.PKI.ControllerManagerServing,
			s.PKI.CA.Cert, s.PKI.FrontProxyCA.Cert),
			"--allocate-node-cidrs=true",
			"--cluster-cidr="+s.ClusterCIDR.String(),
			"--node-cidr-mask-size="+strconv.Itoa(s.NodeMaskSize),
			"--service-cluster-ip-range="+s.ServiceCIDR.String(),
			"--cluster-signing-cert-file="+s.PKI.CA.Cert,
			"--cluster-signing-key-file="+s.PKI.CA.Key,
			"--root-ca-file="+s.PKI.CA.Cert,
			"--service-account-private-key-file="+s.PKI.ServiceAccountKey,
			"--use-service-account-credentials=true",
			// Each controller gets its own service account and token
			// through the shared client, rate-limited by default to 20
			// requests/s (burst 30): on a fresh cluster that alone holds
			// the controllers back for seconds. The apiserver is local and
			// ours alone.
			"--kube-api-qps=200",
			"--kube-api-burst=400",
			"--configure-cloud-routes=false",
			"--leader-elect=false",
			"--profiling=false",
		), components.FeatureGatesArgs(s.FeatureGates)...),
	}
}
