// Package doctor implements `kubernix doctor`.
package doctor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
)

// NewCommand returns `kubernix doctor`: the bundle and the Kubernetes
// releases it holds; for each binary a cluster of the release
// (--kubernetes-version, the default unless given) requires, its path and
// version, or where it looked and how to get it; then the host checks.
// It exits 1 when a required check fails.
func NewCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the binaries and the host a cluster needs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(env.Flags, env.Environ)
			if err != nil {
				return err
			}
			finder, rel, err := bins.ReleaseFinder(cfg.BinDir, cfg.BundleDir, cfg.KubernetesVersion)
			if err != nil {
				return config.Invalid("", []error{fmt.Errorf("--kubernetes-version %s: %w", cfg.KubernetesVersion, err)})
			}
			if cfg.BundleDir != "" {
				finder.Bundle.How = bundleSetBy(cmd, env.Environ)
			}
			report, facts := doctor.Check(cmd.Context(), finder,
				doctor.Options{Release: rel, CNIDir: cfg.CNIDir, CgroupParent: cfg.CgroupParent, SkipNetworkPolicy: !cfg.NetworkPolicy})
			if facts.Mode == doctor.ModeRootless {
				common.Fprintf(env.Streams.Out, "not root: checking for rootless mode (kubernix up runs the cluster under rootlesskit)\n")
			}
			report.Print(env.Streams.Out)
			if report.Failed() {
				return &common.ExitError{Code: 1, Err: errors.New("required checks failed (see FAIL lines above)")}
			}
			common.Fprintf(env.Streams.Out, "all required checks passed\n")
			return nil
		},
	}
	env.BindConfig(cmd, "bin_dir", "bundle_dir", "cni_dir", "cgroup_parent", "kubernetes_version")
	return cmd
}

// bundleSetBy names the source of the bundle_dir setting, in Load's
// precedence: the --bundle-dir flag, $KUBERNIX_BUNDLE_DIR in environ, else
// the --config file.
func bundleSetBy(cmd *cobra.Command, environ []string) string {
	if cmd.Flags().Changed("bundle-dir") {
		return "--bundle-dir"
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, config.EnvPrefix+"BUNDLE_DIR=") {
			return "$" + config.EnvPrefix + "BUNDLE_DIR"
		}
	}
	return "bundle_dir in the --config file"
}
