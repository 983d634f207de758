// Package node decides how a node's processes (containerd, kubelet,
// kube-proxy) run, through an Executor. This follows k3s's change that let
// executors define containerd's behaviour: the cluster code asks the
// executor how to wrap a command and where the node's paths are, and never
// branches on which executor is in use.
//
// Two executors exist:
//   - process: the node's processes run in the host's namespaces. One node
//     only; the default for a single node.
//   - container: each node is a sandbox with its own network, mount and UTS
//     namespaces (see container.go).
package node

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Executor runs a node's processes.
type Executor interface {
	// Name is "process" or "container".
	Name() string
	// Setup creates the node's sandbox, if any. Idempotent.
	Setup(ctx context.Context) error
	// Wrapper returns the argv prefix that runs a command inside the node
	// (empty for the host). The wrapper execs the command, so its PID is
	// the command's.
	Wrapper() []string
	// Teardown removes the sandbox; processes in it must be stopped first.
	// Idempotent, and works after a crash from the node's state alone.
	Teardown(ctx context.Context) error
}

// Node is one node of the cluster.
type Node struct {
	Index   int
	Name    string
	IP      netip.Addr
	PodCIDR netip.Prefix
	Exec    Executor
}

// Run runs argv on the node and returns its combined output; the error
// carries the command line and the output. Running on the host and inside a
// sandbox are the same call.
func (n *Node) Run(ctx context.Context, argv ...string) ([]byte, error) {
	full := append(append([]string{}, n.Exec.Wrapper()...), argv...)
	out, err := exec.CommandContext(ctx, full[0], full[1:]...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("on node %s: %s: %w: %s", n.Name, strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Process is the executor whose nodes are the host itself.
type Process struct{}

// Name implements Executor.
func (Process) Name() string { return "process" }

// Setup implements Executor: the host needs no sandbox.
func (Process) Setup(context.Context) error { return nil }

// Wrapper implements Executor: commands run as they are.
func (Process) Wrapper() []string { return nil }

// Teardown implements Executor.
func (Process) Teardown(context.Context) error { return nil }
