//go:build kubernix_fake_component

package cluster

// This file is compiled only into the kubernix that the e2e test
// TestFakeComponent builds (go build -tags kubernix_fake_component). It
// adds components to the cluster the way a new one is added: one entry
// in describers, nothing else. The test then shows that up, status,
// logs, and down after a SIGKILLed supervisor all handle them.

import (
	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

func init() { describers = append(describers, describeFake) }

// FakeName names the fake components: one in the control plane, ready
// once the apiserver serves, and one per node in the node's sandbox,
// ready once the node's kubelet answers. Each is our pause program, given
// its own run dir as an argument so that its command line names the
// state dir.
const FakeName = "fake"

func describeFake(p *Plan) ([]components.Description, error) {
	b := pki.Files(p.PKISpec())
	cp := config.ControlPlaneScope
	out := []components.Description{{
		Name: FakeName, Scope: cp, Kind: components.KindProcess, Phase: component.Controller,
		Needs: []string{apiserver.Name}, Binary: "pause",
		Command: process.Command{Path: p.Bin("pause"), Args: []string{p.Paths.Run(cp, FakeName)}},
		Probe: components.Probe{HTTPGet: apiserver.Spec{IP: p.APIServerIP, Port: p.Cfg.APIServerPort}.URL() + "/livez/ping",
			CAFile: b.CA.Cert, Client: b.SuperAdmin},
	}}
	for _, nd := range p.Nodes {
		out = append(out, components.Description{
			Name: FakeName, Scope: nd.Name, Kind: components.KindProcess, Phase: component.NodeAgent,
			Needs: []string{components.ID(kubelet.Name, nd.Name)}, Binary: "pause", InSandbox: true,
			Command: process.Command{Path: p.Bin("pause"), Args: []string{p.Paths.Run(nd.Name, FakeName)}},
			Probe:   components.Probe{HTTPGet: p.kubeletSpec(nd).HealthURL()},
		})
	}
	return out, nil
}
