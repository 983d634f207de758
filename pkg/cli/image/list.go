package image

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/containerd"
)

func newListCommand(env *common.Env) *cobra.Command {
	var index int
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the images of every node (or --node N), with where they came from",
		Long: `List the images in the containerd of every node (or node N): name, digest,
whether it is pinned (never garbage-collected by the kubelet), and its source:
builtin:<file> (kubernix's own), folder:<file> (the images folder),
load:<path> (kubernix image load), or nothing (pulled by the kubelet). The
extra names CRI gives pulled images (sha256:<id>, <repo>@<digest>) are left out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			return list(cmd.Context(), env.Streams.Out, nodes)
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().IntVar(&index, "node", 0, "list this node's images only (index from 0); default: every node")
	_ = cmd.RegisterFlagCompletionFunc("node", env.CompleteNodeIndex)
	return cmd
}

// list prints a table of the nodes' images.
func list(ctx context.Context, out io.Writer, nodes []node) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tIMAGE\tDIGEST\tPINNED\tSOURCE")
	for _, nd := range nodes {
		imgs, err := containerd.List(ctx, nd.socket)
		if err != nil {
			return fmt.Errorf("node %s: %w", nd.name, err)
		}
		for _, img := range imgs {
			extraName := strings.HasPrefix(img.Ref, "sha256:") || strings.Contains(img.Ref, "@")
			if extraName && img.Labels[containerd.LabelSource] == "" {
				continue
			}
			pinned := "no"
			if img.Labels[containerd.LabelPinned] == containerd.PinnedValue {
				pinned = "yes"
			}
			source := img.Labels[containerd.LabelSource]
			if source == "" {
				source = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", nd.name, img.Ref, img.Digest, pinned, source)
		}
	}
	return tw.Flush()
}
