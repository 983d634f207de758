// Package netpolagent describes a node's NetworkPolicy agent: the hidden
// `kubernix netpol-agent` subcommand (pkg/netpol), which keeps an
// nftables table of the node's network namespace compiled from the
// cluster's NetworkPolicies, pods and namespaces.
package netpolagent

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "netpol-agent"

// HealthzPort is the TCP port of its plain-HTTP /healthz on the node IP
// (beside kube-proxy's 10256; no upstream component uses it).
const HealthzPort = 10263

// SandboxTable is the name of the agent's inet table in a node sandbox,
// whose network namespace is the node's alone and goes with it.
const SandboxTable = "kubernix-netpol"

// Spec is what the command line is built from.
type Spec struct {
	// Self is the kubernix binary (os.Executable).
	Self string
	// NodeName and NodeIP are the node's; /healthz listens on NodeIP.
	NodeName string
	NodeIP   netip.Addr
	// Kubeconfig is the agents' identity (pki.NetpolAgentName); its RBAC
	// is applied by the components named in After.
	Kubeconfig string
	// Table is the inet table it owns: SandboxTable in a sandbox,
	// network.Names.NetpolTable in the host's namespace.
	Table string
	// ToolDir is its whole PATH: a directory holding only a link to NFT,
	// the absolute path of the nft binary (knftables runs `nft`).
	ToolDir, NFT string
	// Sandbox is the ID of the node's sandbox component, which the agent
	// runs in; "" for a node without one.
	Sandbox string
	// After are the IDs of components, besides the ready apiserver, it
	// waits for: those that grant its identity the RBAC it needs.
	After []string
}

// HealthURL is the /healthz endpoint: 200 once the first table is applied.
func (s Spec) HealthURL() string { return components.HealthURL(s.NodeIP, HealthzPort, false) }

// Describe returns the node's NetworkPolicy agent, a process of this
// binary run in its node's sandbox beside kube-proxy. It errors when nft
// is not an absolute path.
func Describe(s Spec) (components.Description, error) {
	if !filepath.IsAbs(s.NFT) {
		return components.Description{}, fmt.Errorf("the NetworkPolicy agent needs nft (apt-get install nftables): got %q", s.NFT)
	}
	needs := append([]string{apiserver.ReadyName}, s.After...)
	if s.Sandbox != "" {
		needs = append(needs, s.Sandbox)
	}
	return components.Description{
		Name: Name, Scope: s.NodeName, Kind: components.KindProcess, Phase: boot.NodeAgent,
		Needs: needs, Binary: components.SelfBinary, Command: Command(s), InSandbox: true,
		Files: []components.File{{Path: filepath.Join(s.ToolDir, "nft"), Link: s.NFT}},
		Ports: []components.Port{{Name: "healthz", IP: s.NodeIP, Port: HealthzPort}},
		Probe: components.Probe{HTTPGet: s.HealthURL(), Then: "its nftables table inet " + s.Table + " applied once"},
	}, nil
}

// Command returns the process: `kubernix netpol-agent`, whose PATH is
// s.ToolDir.
func Command(s Spec) process.Command {
	return process.Command{
		Env:  []string{"PATH=" + s.ToolDir},
		Path: s.Self,
		Args: []string{"netpol-agent",
			"--kubeconfig=" + s.Kubeconfig,
			"--node=" + s.NodeName,
			"--table=" + s.Table,
			"--healthz=" + netip.AddrPortFrom(s.NodeIP, HealthzPort).String(),
		},
	}
}
