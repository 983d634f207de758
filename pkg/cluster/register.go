package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/retry"

	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/components"
	ctrdcomp "github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/components/kubeproxy"
	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/components/scheduler"
	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
)

// register adds every component of the cluster (Describe) to the
// registry, each with the behaviours that need the live cluster (hooks).
func (c *Cluster) register(r *component.Registry) error {
	ds, err := Describe(c.Plan)
	if err != nil {
		return err
	}
	for _, d := range components.ResolveNeeds(ds) {
		comp, err := components.New(d, c.hooks(d), c.Log)
		if err != nil {
			return err
		}
		if nd := c.Plan.nodeByName(d.Scope); nd != nil && d.Phase == component.NodeAgent {
			comp = c.captured(nd, comp)
		}
		if err := r.Add(comp); err != nil {
			return err
		}
	}
	return nil
}

// hooks returns what d does that needs the live cluster: tasks by their
// data (an addon's manifest and Deployment) or name, and the node
// components', the scheduler's and the writable registry's extra steps. A component without any
// (a new process, say) needs none.
func (c *Cluster) hooks(d components.Description) components.Hooks {
	var h components.Hooks
	nd := c.Plan.nodeByName(d.Scope)
	if nd != nil {
		h.Wrap = nd.Exec.Wrapper
	}
	switch {
	case d.Manifest != nil:
		h.Task = func(ctx context.Context) error { return c.applyAddon(ctx, d) }
	case d.Available != "":
		h.Task = func(ctx context.Context) error { return c.waitAvailable(ctx, d.Available) }
	}
	switch {
	case d.Name == controllerAccountsTask:
		h.Task = c.makeControllerAccounts
	case d.Name == clusterAdminsTask:
		h.Task = c.applyAdminBindings
	case d.Name == scheduler.Name:
		// Before it schedules anything onto a node a smaller cluster no
		// longer has.
		h.Prepare = c.deleteStaleNodes
	case d.Name == registry.LocalName:
		// Its htpasswd file, and the account the owner's tools log in with.
		h.Prepare = func(context.Context) error {
			_, err := registry.EnsureCredentials(c.Plan.Paths.RegistryAuth())
			return err
		}
	case nd == nil:
	case d.Name == node.SandboxName:
		return nd.Exec.SandboxHooks(
			func(pid int) error { return network.AttachNode(c.Plan.NetworkPlan(), nd.Index, pid) },
			func() error { return network.DetachNode(c.Plan.Cfg.Name, nd.Index) })
	case d.Name == ctrdcomp.Name:
		c.containerdHooks(nd, &h)
	case d.Name == kubelet.Name:
		c.kubeletHooks(nd, &h)
	case d.Name == kubeproxy.Name:
		c.kubeProxyHooks(nd, &h)
	}
	return h
}

// containerdHooks import the built-in images and sync the images folder
// once containerd is ready, and again after each restart. A containerd
// that keeps failing is a failed node (nodeFailed), not a crash loop:
// the node's pods cannot run, and its kubelet and kube-proxy are stopped
// rather than left half-alive.
func (c *Cluster) containerdHooks(nd *node.Node, h *components.Hooks) {
	h.AfterReady = func(ctx context.Context) error {
		if err := c.importBuiltins(ctx, nd); err != nil {
			return err
		}
		return c.syncImagesFolder(ctx, nd)
	}
	h.AfterRestart = func(ctx context.Context) error { return c.syncImagesFolder(ctx, nd) }
	h.GiveUpAfter = containerdGiveUpAfter
	h.OnGiveUp = func(err error) { c.nodeFailed(nd, err) }
}

// kubeProxyHooks register the node's Node (with its addresses and pod
// CIDR) before kube-proxy starts, which waits for it, and have kube-proxy
// ready only once it has written its Service rules (the kubelet, which
// needs it, starts the Node's pods after that). Node 0's, whose rules
// serve the host, then routes the host's traffic to Service IPs (see
// network.RouteServices).
func (c *Cluster) kubeProxyHooks(nd *node.Node, h *components.Hooks) {
	if nd.Index == 0 {
		h.AfterReady = func(context.Context) error { return network.RouteServices(c.Plan.NetworkPlan()) }
	}
	h.Prepare = func(ctx context.Context) error {
		// The apiserver is ready, but its admission and storage can
		// still refuse for a moment.
		return retry.OnError(registerBackoff, isTransient, func() error {
			return c.registerNode(ctx, nd)
		})
	}
	h.Ready = c.Plan.kubeProxySpec(nd).Synced()
}

// kubeletHooks make the node's cgroup before the kubelet starts, and have
// it ready only once the Node is Ready in a status this kubelet posted.
func (c *Cluster) kubeletHooks(nd *node.Node, h *components.Hooks) {
	var started atomic.Int64 // Unix seconds of the current kubelet's start
	h.Prepare = func(ctx context.Context) error {
		if err := host.EnsureCgroup(c.Plan.CgroupRoot(nd)); err != nil {
			return err
		}
		started.Store(time.Now().Unix())
		return nil
	}
	h.Ready = func(ctx context.Context) error {
		return c.nodeReady(ctx, nd.Name, time.Unix(started.Load(), 0))
	}
}

// captured wraps a node agent so the cluster keeps its Stoppable: when the
// node's containerd is given up on, its kubelet and kube-proxy are stopped.
func (c *Cluster) captured(nd *node.Node, comp component.Component) component.Component {
	return &capturedComponent{Component: comp, keep: func(s component.Stoppable) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.agents[nd.Name] = append(c.agents[nd.Name], s)
	}}
}

type capturedComponent struct {
	component.Component
	keep func(component.Stoppable)
}

// Needs passes on the needs of the node agent.
func (cc *capturedComponent) Needs() []string {
	if n, ok := cc.Component.(component.Needer); ok {
		return n.Needs()
	}
	return nil
}

func (cc *capturedComponent) Start(ctx context.Context) (component.Stoppable, error) {
	s, err := cc.Component.Start(ctx)
	if err == nil {
		cc.keep(s)
	}
	return s, err
}

// errNodeFailed marks a node given up on.
var errNodeFailed = errors.New("node failed")
