package cluster

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/util/retry"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/plan"
)

// register adds every component of the cluster (describeAll) to the
// registry, each with the behaviours its describer gave it (described.live)
// and, on a node, the node's wrapper (its sandbox's, for a process in it).
func (c *Cluster) register(r *boot.Sequence) error {
	all, err := plan.DescribeAll(c.Plan)
	if err != nil {
		return err
	}
	ds := make([]components.Description, len(all))
	for i, d := range all {
		ds[i] = d.Description
	}
	for i, d := range components.ResolveNeeds(ds) {
		h := all[i].Hooks(liveCluster{c})
		nd := c.Plan.NodeByName(d.Scope)
		if nd != nil && d.InSandbox {
			h.Wrap = nd.Exec.Wrapper
		}
		comp, err := components.New(d, h, c.Log)
		if err != nil {
			return err
		}
		if nd != nil && d.Phase == boot.NodeAgent {
			comp = c.captured(nd, comp)
		}
		if err := r.Add(comp); err != nil {
			return err
		}
	}
	return nil
}

// liveCluster is Live on a running Cluster.
type liveCluster struct{ c *Cluster }

func (l liveCluster) ApplyManifest(ctx context.Context, d components.Description) error {
	return l.c.applyAddon(ctx, d)
}
func (l liveCluster) WaitAvailable(ctx context.Context, deployment string) error {
	return l.c.waitAvailable(ctx, deployment)
}
func (l liveCluster) MakeControllerAccounts(ctx context.Context) error {
	return l.c.makeControllerAccounts(ctx)
}
func (l liveCluster) ApplyAdminBindings(ctx context.Context) error {
	return l.c.applyAdminBindings(ctx)
}
func (l liveCluster) DeleteStaleNodes(ctx context.Context) error { return l.c.deleteStaleNodes(ctx) }
func (l liveCluster) RegisterNode(ctx context.Context, nd *node.Node) error {
	return retry.OnError(registerBackoff, isTransient, func() error { return l.c.registerNode(ctx, nd) })
}
func (l liveCluster) NodeReady(ctx context.Context, nd *node.Node, since time.Time) error {
	return l.c.nodeReady(ctx, nd.Name, since)
}
func (l liveCluster) ImportImages(ctx context.Context, nd *node.Node) error {
	if err := l.c.importBuiltins(ctx, nd); err != nil {
		return err
	}
	return l.c.syncImagesFolder(ctx, nd)
}
func (l liveCluster) SyncImagesFolder(ctx context.Context, nd *node.Node) error {
	return l.c.syncImagesFolder(ctx, nd)
}
func (l liveCluster) NodeFailed(nd *node.Node, reason error) { l.c.nodeFailed(nd, reason) }

// captured wraps a node agent so the cluster keeps its Stoppable: when the
// node's containerd is given up on, its node agents are stopped.
func (c *Cluster) captured(nd *node.Node, comp boot.Component) boot.Component {
	return &capturedComponent{Component: comp, keep: func(s boot.Stoppable) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.agents[nd.Name] = append(c.agents[nd.Name], s)
	}}
}

type capturedComponent struct {
	boot.Component
	keep func(boot.Stoppable)
}

// Needs passes on the needs of the node agent.
func (cc *capturedComponent) Needs() []string {
	if n, ok := cc.Component.(boot.Needer); ok {
		return n.Needs()
	}
	return nil
}

func (cc *capturedComponent) Start(ctx context.Context) (boot.Stoppable, error) {
	s, err := cc.Component.Start(ctx)
	if err == nil {
		cc.keep(s)
	}
	return s, err
}

// errNodeFailed marks a node given up on.
var errNodeFailed = errors.New("node failed")
