// Package apiserver builds the kube-apiserver command line: TLS everywhere,
// Node and RBAC authorization, the NodeRestriction admission plugin and
// secrets encrypted at rest, listening only on the cluster bridge address.
package apiserver

import (
	"net/netip"
	"strconv"

	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// Spec is what the kube-apiserver command line is built from.
type Spec struct {
	Binary string
	// IP is both the bind and the advertise address: the host side of the
	// cluster bridge, local to this machine and reachable from pods through
	// the kubernetes Service. (Advertising 127.0.0.1 is rejected by the
	// endpoint reconciler, and binding all interfaces would expose it.)
	IP            netip.Addr
	Port          int
	EtcdURL       string
	ServiceCIDR   netip.Prefix
	ClusterDomain string
	PKI           *pki.Bundle
	LogFile       string
	RunDir        string
	Scope         string
	// ExtraArgs are appended last, so they override.
	ExtraArgs []string
}

// URL is the apiserver's https endpoint.
func (s Spec) URL() string {
	return "https://" + netip.AddrPortFrom(s.IP, uint16(s.Port)).String()
}

// Command returns kube-apiserver's process.
func Command(s Spec) process.Command {
	p := s.PKI
	args := []string{
		"--advertise-address=" + s.IP.String(),
		"--bind-address=" + s.IP.String(),
		"--secure-port=" + strconv.Itoa(s.Port),
		"--etcd-servers=" + s.EtcdURL,
		"--etcd-cafile=" + p.CA.Cert,
		"--etcd-certfile=" + p.APIServerEtcdClient.Cert,
		"--etcd-keyfile=" + p.APIServerEtcdClient.Key,
		"--client-ca-file=" + p.CA.Cert,
		"--tls-cert-file=" + p.APIServer.Cert,
		"--tls-private-key-file=" + p.APIServer.Key,
		"--kubelet-client-certificate=" + p.APIServerKubeletClient.Cert,
		"--kubelet-client-key=" + p.APIServerKubeletClient.Key,
		"--kubelet-certificate-authority=" + p.CA.Cert,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-issuer=https://kubernetes.default.svc." + s.ClusterDomain,
		"--service-account-key-file=" + p.ServiceAccountPub,
		"--service-account-signing-key-file=" + p.ServiceAccountKey,
		"--service-cluster-ip-range=" + s.ServiceCIDR.String(),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--encryption-provider-config=" + p.EncryptionConfig,
		"--allow-privileged=true",
		"--profiling=false",
		"--enable-bootstrap-token-auth=false",
	}
	return process.Command{
		Name:    "kube-apiserver",
		Scope:   s.Scope,
		Path:    s.Binary,
		Args:    append(args, s.ExtraArgs...),
		LogFile: s.LogFile,
		RunDir:  s.RunDir,
	}
}
