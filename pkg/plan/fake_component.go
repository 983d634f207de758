//go:build kubernix_fake_component

package plan

// This file is compiled only into the kubernix that the e2e test
// TestFakeComponent builds (go build -tags kubernix_fake_component). It
// adds a component to the cluster the way a new one is added: its
// package (pkg/components/fake) and one entry in describers, nothing
// else. The test then shows that up, preflight, status, logs, down after
// a SIGKILLed supervisor and up --dry-run all handle it.

import (
	"os"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/components/fake"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/config"
)

func init() { describers = append(describers, describeFake) }

// describeFake describes a fake in the control plane, on the bridge
// address once the apiserver serves, and one on each node, on its node
// IP once the node's kubelet answers.
func describeFake(p *Plan) ([]Described, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	out := []components.Description{fake.Describe(fake.Spec{Self: self, Scope: config.ControlPlaneScope,
		IP: p.APIServerIP, Port: fake.ControlPlanePort, Needs: []string{apiserver.Name}})}
	for _, nd := range p.Nodes {
		out = append(out, fake.Describe(fake.Spec{Self: self, Scope: nd.Name, IP: nd.IP, Port: fake.NodePort,
			Needs: []string{components.ID(kubelet.Name, nd.Name)}}))
	}
	return plain(out...), nil
}
