// Package scheduler builds the kube-scheduler command line.
package scheduler

import (
	"net/netip"

	"github.com/kubernix/kubernix/pkg/release"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "kube-scheduler"

// SecurePort is kube-scheduler's HTTPS port (its upstream default).
const SecurePort = 10259

// Spec is what the command line is built from.
type Spec struct {
	// Release is the Kubernetes release Binary is built for: flags and
	// config fields that differ between releases are chosen from it.
	Release    release.Release
	Binary     string
	Kubeconfig string
	IP         netip.Addr // bind address of the secure port
	CAFile     string
	// RequestHeaderCAFile is the front-proxy CA: the only CA whose
	// certificates may assert a user in request headers.
	RequestHeaderCAFile string
	// Serving is the secure port's certificate and key.
	Serving pki.Pair
	// FeatureGates are set with --feature-gates, gate name to on or off
	// (config.Config.FeatureGates); none when empty.
	FeatureGates map[string]bool
}

// HealthURL is the /healthz endpoint.
func (s Spec) HealthURL() string { return components.HealthURL(s.IP, SecurePort, true) }

// Describe returns the scheduler. It lists and watches as
// system:kube-scheduler, whose RBAC bindings exist only once the
// apiserver is ready (apiserver.ReadyName); a forbidden list would back
// off for up to 1.6 s. Its /healthz is served with a certificate of the
// cluster CA and needs no client certificate.
func Describe(s Spec) components.Description {
	return components.Description{
		Name: Name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.Controller,
		Needs: []string{apiserver.ReadyName}, Binary: Name, Command: Command(s),
		Ports: []components.Port{{IP: s.IP, Port: SecurePort}},
		Probe: components.Probe{HTTPGet: s.HealthURL(), CAFile: s.CAFile},
	}
}

// Command returns kube-scheduler's process, leader election off (one instance).
func Command(s Spec) process.Command {
	return process.Command{
		Path: s.Binary,
		Args: append(append(components.ControllerArgs(s.Kubeconfig, s.IP, SecurePort, s.Serving, s.CAFile, s.RequestHeaderCAFile),
			"--leader-elect=false",
			"--profiling=false",
		), components.FeatureGatesArgs(s.FeatureGates)...),
	}
}
