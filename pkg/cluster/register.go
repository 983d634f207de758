package cluster

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/util/retry"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/node"
)

// register adds every component of the cluster (describeAll) to the
// registry, each with the behaviours its describer gave it (described.live)
// and, on a node, the node's wrapper (its sandbox's, for a process in it).
func (c *Cluster) register(r *boot.Sequence) error {
	all, err := describeAll(c.Plan)
	if err != nil {
		return err
	}
	ds := make([]components.Description, len(all))
	for i, d := range all {
		ds[i] = d.Description
	}
	for i, d := range components.ResolveNeeds(ds) {
		var h components.Hooks
		if all[i].live != nil {
			h = all[i].live(liveCluster{c})
		}
		nd := c.Plan.nodeByName(d.Scope)
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

// Live is what the components' behaviours (components.Hooks, built by
// their describers) do with the running cluster: its API and its nodes'
// image stores. The supervisor's Cluster provides it (liveCluster). Each
// error is the API's or the node's.
type Live interface {
	// ApplyManifest server-side applies the manifest of addon task d.
	ApplyManifest(ctx context.Context, d components.Description) error
	// WaitAvailable returns nil once Deployment deployment
	// ("namespace/name") is Available with its pods Ready since this up
	// began.
	WaitAvailable(ctx context.Context, deployment string) error
	// MakeControllerAccounts creates the controllers' service accounts
	// in kube-system.
	MakeControllerAccounts(ctx context.Context) error
	// ApplyAdminBindings applies kubernix's ClusterRoleBindings.
	ApplyAdminBindings(ctx context.Context) error
	// DeleteStaleNodes deletes the Nodes, with their pods, of nodes the
	// cluster no longer has.
	DeleteStaleNodes(ctx context.Context) error
	// RegisterNode creates or updates nd's Node with its addresses and
	// pod CIDR, retrying while the apiserver still refuses for a moment.
	RegisterNode(ctx context.Context, nd *node.Node) error
	// NodeReady returns nil once nd's Node is Ready in a status its
	// kubelet posted at or after since.
	NodeReady(ctx context.Context, nd *node.Node, since time.Time) error
	// ImportImages imports the built-in images into nd's containerd and
	// syncs the images folder there; SyncImagesFolder syncs the folder
	// alone.
	ImportImages(ctx context.Context, nd *node.Node) error
	SyncImagesFolder(ctx context.Context, nd *node.Node) error
	// NodeFailed gives nd up: its kubelet and kube-proxy are stopped and
	// reason recorded (FailedFile).
	NodeFailed(nd *node.Node, reason error)
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
// node's containerd is given up on, its kubelet and kube-proxy are stopped.
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
