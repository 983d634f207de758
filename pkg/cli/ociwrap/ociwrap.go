// Package ociwrap implements the hidden `kubernix oci-runtime-wrap`, the
// OCI runtime containerd runs in a rootless cluster (through the
// crun-rootless script): it adapts a `create` or `run` bundle to the user
// namespace (rootless.RewriteBundle) and execs the real runtime.
package ociwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// NewCommand returns `kubernix oci-runtime-wrap --runtime PATH -- ARGS...`.
func NewCommand(_ *common.Env) *cobra.Command {
	var runtime string
	cmd := &cobra.Command{
		Use:    "oci-runtime-wrap --runtime PATH -- ARGS...",
		Short:  "internal: adapt an OCI bundle to rootless mode and exec the real runtime",
		Hidden: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if !filepath.IsAbs(runtime) {
				return errors.New("oci-runtime-wrap: --runtime must be an absolute path")
			}
			cwd, _ := os.Getwd()
			if bundle, ok := rootless.BundleOf(args, cwd); ok {
				if _, err := rootless.RewriteBundle(bundle, rootless.DefaultRewrite); err != nil {
					return fmt.Errorf("oci-runtime-wrap: rewrite bundle %s: %w", bundle, err)
				}
			}
			argv := append([]string{runtime}, args...)
			if err := syscall.Exec(runtime, argv, os.Environ()); err != nil {
				return fmt.Errorf("oci-runtime-wrap: exec %s: %w", runtime, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runtime, "runtime", "", "the real OCI runtime (runc or crun)")
	return cmd
}
