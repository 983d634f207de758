// Package scheduler builds the kube-scheduler command line.
package scheduler

import (
	"net/netip"
	"strconv"

	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// SecurePort is kube-scheduler's HTTPS port (its upstream default).
const SecurePort = 10259

// Spec is what the command line is built from.
type Spec struct {
	Binary     string
	Kubeconfig string
	IP         netip.Addr // bind address of the secure port
	CAFile     string
	// RequestHeaderCAFile is the front-proxy CA: the only CA whose
	// certificates may assert a user in request headers.
	RequestHeaderCAFile string
	// Serving is the secure port's certificate and key.
	Serving                pki.Pair
	LogFile, RunDir, Scope string
}

// HealthURL is the /healthz endpoint.
func (s Spec) HealthURL() string {
	return "https://" + netip.AddrPortFrom(s.IP, SecurePort).String() + "/healthz"
}

// Command returns kube-scheduler's process, leader election off (one instance).
func Command(s Spec) process.Command {
	return process.Command{
		Name:  "kube-scheduler",
		Scope: s.Scope,
		Path:  s.Binary,
		Args: []string{
			"--kubeconfig=" + s.Kubeconfig,
			"--authentication-kubeconfig=" + s.Kubeconfig,
			"--authorization-kubeconfig=" + s.Kubeconfig,
			"--client-ca-file=" + s.CAFile,
			"--requestheader-client-ca-file=" + s.RequestHeaderCAFile,
			"--bind-address=" + s.IP.String(),
			"--secure-port=" + strconv.Itoa(SecurePort),
			"--tls-cert-file=" + s.Serving.Cert,
			"--tls-private-key-file=" + s.Serving.Key,
			"--leader-elect=false",
			"--profiling=false",
		},
		LogFile: s.LogFile,
		RunDir:  s.RunDir,
	}
}
