// Package controllermanager builds the kube-controller-manager command line.
// It allocates node pod CIDRs from the cluster CIDR; kubernix pre-assigns
// each node's pod CIDR on its Node object, which the allocator respects.
package controllermanager

import (
	"net/netip"
	"strconv"

	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// SecurePort is kube-controller-manager's HTTPS port (its upstream default).
const SecurePort = 10257

// Spec is what the command line is built from.
type Spec struct {
	Binary       string
	Kubeconfig   string
	IP           netip.Addr // bind address of the secure port
	ClusterCIDR  netip.Prefix
	NodeMaskSize int
	ServiceCIDR  netip.Prefix
	PKI          *pki.Bundle
	// CAKey signs CSRs (the cluster CA's key).
	LogFile, RunDir, Scope string
}

// HealthURL is the /healthz endpoint.
func (s Spec) HealthURL() string {
	return "https://" + netip.AddrPortFrom(s.IP, SecurePort).String() + "/healthz"
}

// Command returns kube-controller-manager's process. Leader election is off:
// there is one instance, and electing would delay a restart by a lease.
func Command(s Spec) process.Command {
	return process.Command{
		Name:  "kube-controller-manager",
		Scope: s.Scope,
		Path:  s.Binary,
		Args: []string{
			"--kubeconfig=" + s.Kubeconfig,
			"--authentication-kubeconfig=" + s.Kubeconfig,
			"--authorization-kubeconfig=" + s.Kubeconfig,
			"--bind-address=" + s.IP.String(),
			"--secure-port=" + strconv.Itoa(SecurePort),
			"--tls-cert-file=" + s.PKI.ControllerManagerServing.Cert,
			"--tls-private-key-file=" + s.PKI.ControllerManagerServing.Key,
			"--client-ca-file=" + s.PKI.CA.Cert,
			"--requestheader-client-ca-file=" + s.PKI.FrontProxyCA.Cert,
			"--allocate-node-cidrs=true",
			"--cluster-cidr=" + s.ClusterCIDR.String(),
			"--node-cidr-mask-size=" + strconv.Itoa(s.NodeMaskSize),
			"--service-cluster-ip-range=" + s.ServiceCIDR.String(),
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
		},
		LogFile: s.LogFile,
		RunDir:  s.RunDir,
	}
}
