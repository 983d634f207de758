// Package image implements `kubernix image`: `load` imports image tarballs
// into the nodes' containerd, `list` shows the nodes' images with where
// they came from.
package image

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/cri"
)

// NewCommand returns `kubernix image` and its subcommands.
func NewCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Load image tarballs into the nodes, list the nodes' images",
		Long: `Manage the images in the nodes' containerd ("k8s.io" namespace, where the
kubelet finds them). The cluster works offline: no public registry is
reached, so images get in by:

  kubernix image load FILE|DIR...   import tarballs now, into every node
  <state>/images/                   drop tarballs or .txt lists of refs there,
                                    imported into every node while it runs
                                    and whenever a node starts
  localhost:<registry port>/...     push to the cluster's local registry (the
                                    registry addon, port 5001 by default);
                                    every node pulls from it by that name`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newLoadCommand(env), newListCommand(env))
	return cmd
}

// node is a node of the running cluster.
type node struct {
	name, socket string
	root         string // containerd's root directory (containerd.Target.Root)
}

// selectNodes returns the cluster's nodes, or only node index when
// selected; an index out of range wraps config.ErrInvalid.
func selectNodes(cfg config.Config, index int, selected bool) ([]node, error) {
	if selected && (index < 0 || index >= cfg.Nodes) {
		return nil, fmt.Errorf("%w: --node %d: the cluster has nodes 0..%d", config.ErrInvalid, index, cfg.Nodes-1)
	}
	var out []node
	for i := range cfg.Nodes {
		if selected && i != index {
			continue
		}
		name := cfg.NodeName(i)
		np := cfg.Paths().Node(name)
		out = append(out, node{name: name, socket: np.ContainerdSocket(), root: np.ContainerdRoot()})
	}
	return out, nil
}

// checkReachable fails, naming them, unless every node's containerd
// answers within a few seconds.
func checkReachable(ctx context.Context, clusterName string, nodes []node) error {
	var down []string
	for _, nd := range nodes {
		if err := ping(ctx, nd.socket); err != nil {
			down = append(down, nd.name)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("containerd of node %s not running: is cluster %q up? (`kubernix status --name %s`)",
			strings.Join(down, ", "), clusterName, clusterName)
	}
	return nil
}

func ping(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cri.Ping(ctx, socket)
}
