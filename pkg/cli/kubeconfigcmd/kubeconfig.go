// Package kubeconfigcmd implements `kubernix kubeconfig`: the selected
// cluster's admin kubeconfig on standard output, standalone, as `kind get
// kubeconfig` prints it.
package kubeconfigcmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
)

// NewCommand returns `kubernix kubeconfig [--internal]`: the admin
// kubeconfig of the cluster (cluster.StandaloneKubeconfig) encoded by
// clientcmd.Write: its own cluster, user and context named
// kubernix-<name>, current-context set, certificates embedded, so it works
// wherever it is copied. With --internal its server is the apiserver's
// address on the cluster bridge, as the nodes and pods reach it.
func NewCommand(env *common.Env) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the cluster's admin kubeconfig (standalone, certificates embedded)",
		Long: `Print a standalone kubeconfig of the cluster: one cluster, user and context
named kubernix-<name>, current-context set, CA and client certificate and key
embedded. Save it anywhere:

  kubernix kubeconfig > kc && kubectl --kubeconfig kc get nodes

Its server is the apiserver's address as a client on this host reaches it;
--internal gives the address on the cluster bridge, as the nodes and pods
reach it (for a cluster run as root the two are the same; for a rootless one
the host's is rootlesskit's port forward on 127.0.0.1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			pl, err := common.Plan(cfg)
			if err != nil {
				return err
			}
			kc, err := cluster.StandaloneKubeconfig(pl, internal)
			if err != nil {
				return fmt.Errorf("kubeconfig of cluster %q: %w", cfg.Name, err)
			}
			b, err := clientcmd.Write(*kc)
			if err != nil {
				return err
			}
			_, err = env.Streams.Out.Write(b)
			return err
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().BoolVar(&internal, "internal", false, "use the apiserver's address on the cluster bridge (as nodes and pods reach it) instead of the host's")
	return cmd
}
