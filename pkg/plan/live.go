package plan

import (
	"context"
	"time"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/node"
)

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
	// DeployAfterReady has the cluster deploy addon task d (an
	// addons.Addon.AfterReady addon's) once it is Ready, in the
	// background: import the built-in images named into every node,
	// apply d's manifest, wait for d.Available. It returns at once.
	DeployAfterReady(d components.Description, images []string)
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
