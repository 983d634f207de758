package image

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components/containerd"
)

func newListCommand(env *common.Env) *cobra.Command {
	var index int
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the images of every node (or --node N), with where they came from",
		Long: `List the images in the containerd of every node (or node N): name, digest,
whether it is pinned (never garbage-collected by the kubelet), and its source:
builtin:<file> (kubernix's own), folder:<file> (the images folder),
load:<path> (kubernix image load), or nothing (pulled by the kubelet). The
extra names CRI gives pulled images (sha256:<id>, <repo>@<digest>) are left out.
-o json|yaml prints the same as a List.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := common.CheckOutput(output); err != nil {
				return err
			}
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			nodes, err := selectNodes(cfg, index, cmd.Flags().Changed("node"))
			if err != nil {
				return err
			}
			if err := checkReachable(cmd.Context(), cfg.Name, nodes); err != nil {
				return err
			}
			l, err := list(cmd.Context(), nodes)
			if err != nil {
				return err
			}
			return common.PrintOutput(env.Streams.Out, output, l, l.Table)
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().IntVar(&index, "node", 0, "list this node's images only (index from 0); default: every node")
	_ = cmd.RegisterFlagCompletionFunc("node", env.CompleteNodeIndex)
	common.AddOutputFlag(cmd, &output)
	return cmd
}

// List is what `kubernix image list` reports (-o json|yaml), and what its
// table shows.
type List struct {
	// Images are the nodes' images, node by node in index order, each
	// node's in containerd's order.
	Images []Image `json:"images"`
}

// Image is one image in a node's containerd ("k8s.io" namespace).
type Image struct {
	// Node is the Kubernetes name of the node, e.g. "kubernix-node-0".
	Node string `json:"node"`
	// Image is the image's name (reference), e.g.
	// "registry.k8s.io/pause:3.10.2".
	Image string `json:"image"`
	// Digest is the digest of its manifest (or index), "sha256:<hex>".
	Digest string `json:"digest"`
	// Pinned reports that the kubelet never garbage-collects it (the CRI
	// pinned label).
	Pinned bool `json:"pinned"`
	// Source is where it came from: "builtin:<file>" (kubernix's own),
	// "folder:<file>" (the images folder), "load:<path>" (kubernix image
	// load), or "" (pulled by the kubelet).
	Source string `json:"source,omitempty"`
}

// Table writes l as `kubernix image list` prints it by default: one row
// per image, "yes"/"no" for pinned, "-" for no source.
func (l List) Table(w io.Writer) error {
	common.Fprintf(w, "NODE\tIMAGE\tDIGEST\tPINNED\tSOURCE\n")
	for _, img := range l.Images {
		pinned, source := "no", img.Source
		if img.Pinned {
			pinned = "yes"
		}
		if source == "" {
			source = "-"
		}
		common.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", img.Node, img.Image, img.Digest, pinned, source)
	}
	return nil
}

// list reads the images of the nodes' containerd, leaving out the extra
// names CRI gives a pulled image; the error names the node.
func list(ctx context.Context, nodes []node) (List, error) {
	l := List{Images: []Image{}}
	for _, nd := range nodes {
		imgs, err := containerd.List(ctx, nd.socket)
		if err != nil {
			return l, fmt.Errorf("node %s: %w", nd.name, err)
		}
		for _, img := range imgs {
			source := img.Labels[containerd.LabelSource]
			extraName := strings.HasPrefix(img.Ref, "sha256:") || strings.Contains(img.Ref, "@")
			if extraName && source == "" {
				continue
			}
			l.Images = append(l.Images, Image{
				Node: nd.name, Image: img.Ref, Digest: img.Digest, Source: source,
				Pinned: img.Labels[containerd.LabelPinned] == containerd.PinnedValue,
			})
		}
	}
	return l, nil
}
