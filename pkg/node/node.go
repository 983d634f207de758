// Package node decides how a node's processes (containerd, kubelet,
// kube-proxy) run, through an Executor. This follows k3s's change that let
// executors define containerd's behaviour: the cluster code asks the
// executor how to wrap a command, whether the node has a sandbox (and its
// component), and whether it shares the host's network, and never asks
// which executor is in use.
//
// Two executors exist:
//   - process: the node's processes run in the caller's namespaces. One
//     node only, chosen explicitly (or a rootless cluster of one node,
//     whose "host" namespaces are rootlesskit's).
//   - container: each node is a sandbox with its own network, mount and
//     UTS namespaces (see container.go); the default.
package node

import (
	"net/netip"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
)

// Executor runs a node's processes.
type Executor interface {
	// Name is config.ExecutorProcess or config.ExecutorContainer.
	Name() string
	// HostNetwork reports whether the node's processes run in the
	// caller's network namespace: the node's IP is then the cluster
	// bridge's, its pod routes are local, and its ports bind beside the
	// control plane's.
	HostNetwork() bool
	// Sandbox describes the component that holds the node's namespaces;
	// ok is false for a node without one.
	Sandbox() (d components.Description, ok bool)
	// SandboxHooks are the sandbox component's behaviours: attach joins
	// the sandbox, by its holder's PID, to the cluster network once it is
	// set up; detach leaves it before it stops. Zero without a sandbox.
	SandboxHooks(attach func(pid int) error, detach func() error) components.Hooks
	// Wrapper returns the argv prefix that runs a command inside the node
	// (empty for the caller's namespaces). The wrapper execs the command,
	// so its PID is the command's.
	Wrapper() []string
	// PlannedWrapper is Wrapper as a plan shows it before the sandbox
	// runs, its PID written <sandbox-pid>.
	PlannedWrapper() []string
}

// New returns the executor named (see config.Config.EffectiveExecutor);
// sandbox configures the container executor's.
func New(name string, sandbox *Container) Executor {
	if !HostNetwork(name) {
		return sandbox
	}
	return Process{}
}

// HostNetwork reports whether the executor named runs a node in the
// caller's network namespace (see Executor.HostNetwork).
func HostNetwork(executor string) bool { return executor == config.ExecutorProcess }

// Node is one node of the cluster.
type Node struct {
	Index int
	Name  string
	// IP is the node's IPv4 address on the node network (every IP
	// family has it).
	IP netip.Addr
	// PodCIDR is the node's IPv4 pod CIDR (unused in an IPv6 cluster).
	PodCIDR netip.Prefix
	// IP6 and PodCIDR6 are the node's IPv6 address and pod CIDR; zero
	// in an IPv4 cluster.
	IP6      netip.Addr
	PodCIDR6 netip.Prefix
	// IPs are the node's addresses as Kubernetes sees them (kubelet
	// --node-ip, the Node's InternalIPs), primary family first: [IP],
	// [IP, IP6] or [IP6].
	IPs []netip.Addr
	// PodCIDRs are the node's pod CIDRs (Node spec.podCIDRs), primary
	// family first, as IPs.
	PodCIDRs []netip.Prefix
	Exec     Executor
}

// PrimaryIP is the node's address of the primary IP family: IPs[0].
func (n *Node) PrimaryIP() netip.Addr { return n.IPs[0] }

// Process is the executor whose nodes are the host itself.
type Process struct{}

// Name implements Executor.
func (Process) Name() string { return config.ExecutorProcess }

// HostNetwork implements Executor.
func (Process) HostNetwork() bool { return true }

// Sandbox implements Executor: the host needs none.
func (Process) Sandbox() (components.Description, bool) { return components.Description{}, false }

// SandboxHooks implements Executor.
func (Process) SandboxHooks(func(int) error, func() error) components.Hooks {
	return components.Hooks{}
}

// Wrapper implements Executor: commands run as they are.
func (Process) Wrapper() []string { return nil }

// PlannedWrapper implements Executor.
func (Process) PlannedWrapper() []string { return nil }
