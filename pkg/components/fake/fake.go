//go:build kubernix_fake_component

// Package fake describes a component that exists to show what adding one
// takes: this package and one entry in the cluster's describers
// (pkg/cluster/fake_component.go), nothing else. It is compiled only with
// the build tag kubernix_fake_component, into the kubernix that the e2e
// test TestFakeComponent builds.
//
// The fake is this kubernix's port proxy with nothing to publish: a
// process that serves a plain-HTTP /healthz on the port it declares, so
// that its port is real (up probes it, preflight refuses it when taken)
// and its process is supervised, listed and stopped like any other.
package fake

import (
	"net/netip"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "fake"

// The fakes' TCP ports, beside the upstream components' (10248-10260).
const (
	// NodePort is where a node's fake listens, on its node IP.
	NodePort = 10270
	// ControlPlanePort is where the control plane's fake listens, on
	// the bridge address.
	ControlPlanePort = 10271
)

// Spec is one fake.
type Spec struct {
	// Self is the kubernix binary (os.Executable).
	Self string
	// Scope is config.ControlPlaneScope or a node's name.
	Scope string
	// IP and Port are where its /healthz listens.
	IP   netip.Addr
	Port int
	// Needs are the IDs of the components it waits for.
	Needs []string
}

// Describe returns the fake: in the control plane a Controller-phase
// process, on a node a NodeAgent-phase process in its node's sandbox,
// ready once its /healthz answers.
func Describe(s Spec) components.Description {
	d := components.Description{
		Name: Name, Scope: s.Scope, Kind: components.KindProcess, Phase: boot.Controller,
		Needs: s.Needs, Binary: components.SelfBinary,
		Command: process.Command{Path: s.Self, Args: []string{"port-proxy", "--healthz=" + netip.AddrPortFrom(s.IP, uint16(s.Port)).String()}},
		Ports:   []components.Port{{Name: "healthz", IP: s.IP, Port: s.Port}},
		Probe:   components.Probe{HTTPGet: components.HealthURL(s.IP, s.Port, false)},
	}
	if s.Scope != config.ControlPlaneScope {
		d.Phase, d.InSandbox = boot.NodeAgent, true
	}
	return d
}
