package cluster

import (
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// outside reports whether the plan is of a rootless cluster seen from the
// host, outside rootlesskit's namespaces: its network links, iptables
// rules and mounts are not visible from here and vanish with the
// namespaces.
func (p *Plan) outside() bool { return p.Rootless && !host.InUserNamespace() }

// WrapperPath is where the OCI runtime wrapper script of a rootless
// cluster is rendered.
func (p *Plan) WrapperPath() string {
	return filepath.Join(p.Paths.State, "bin", rootless.WrapperName)
}
