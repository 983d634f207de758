// Package controllermanager builds the kube-controller-manager command line.
// It allocates node pod CIDRs from the cluster CIDR; kubernix pre-assigns
// each node's pod CIDR on its Node object, which the allocator respects.
package controllermanager

import (
	"net/netip"
	"slices"
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
	Release    release.Release
	Binary     string
	Kubeconfig string
	IP         netip.Addr // bind address of the secure port
	// ClusterCIDRs are the pod ranges, one per IP family, primary first.
	ClusterCIDRs []netip.Prefix
	// NodeMaskSize and NodeMaskSize6 are the prefix lengths of a node's
	// IPv4 and IPv6 pod CIDRs.
	NodeMaskSize, NodeMaskSize6 int
	// ServiceCIDRs are the service CIDRs, one per IP family, primary first.
	ServiceCIDRs []netip.Prefix
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

// nodeMaskSizes are the flags of the pod CIDR sizes: one
// --node-cidr-mask-size for a single family, or the two per family of a
// dual-stack cluster (k8s.io/kubernetes pkg/controller/nodeipam:
// --node-cidr-mask-size is then refused).
func nodeMaskSizes(s Spec) []string {
	switch {
	case len(s.ClusterCIDRs) == 2:
		return []string{"--node-cidr-mask-size-ipv4=" + strconv.Itoa(s.NodeMaskSize), "--node-cidr-mask-size-ipv6=" + strconv.Itoa(s.NodeMaskSize6)}
	case len(s.ClusterCIDRs) == 1 && s.ClusterCIDRs[0].Addr().Is6():
		return []string{"--node-cidr-mask-size=" + strconv.Itoa(s.NodeMaskSize6)}
	}
	return []string{"--node-cidr-mask-size=" + strconv.Itoa(s.NodeMaskSize)}
}

// Command returns kube-controller-manager's process. Leader election is off:
// there is one instance, and electing would delay a restart by a lease.
func Command(s Spec) process.Command {
	return process.Command{
		Path: s.Binary,
		Args: slices.Concat(components.ControllerArgs(s.Kubeconfig, s.IP, SecurePort, s.PKI.ControllerManagerServing,
			s.PKI.CA.Cert, s.PKI.FrontProxyCA.Cert),
			[]string{"--allocate-node-cidrs=true", "--cluster-cidr=" + components.JoinPrefixes(s.ClusterCIDRs)},
			nodeMaskSizes(s),
			[]string{
				"--service-cluster-ip-range=" + components.JoinPrefixes(s.ServiceCIDRs),
				"--cluster-signing-cert-file=" + s.PKI.CA.Cert,
				"--cluster-signing-key-file=" + s.PKI.CA.Key,
				"--root-ca-file=" + s.PKI.CA.Cert,
				"--service-account-private-key-file=" + s.PKI.ServiceAccountKey,
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
			}, components.FeatureGatesArgs(s.FeatureGates)),
	}
}
