// Package envcmd implements `kubernix env` and `kubernix shell`: the
// environment that points kubectl and crictl at a cluster.
package envcmd

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state"
)

// Vars returns the cluster's environment as KEY=VALUE: KUBECONFIG (the
// file up merged the context into when given --kubeconfig, else the admin
// kubeconfig for clients on the host, see state.ClientKubeconfig),
// CONTAINER_RUNTIME_ENDPOINT and IMAGE_SERVICE_ENDPOINT (node 0's
// containerd, for crictl), KUBERNIX_NAME (so kubernix verbs run there act
// on this cluster, found by name as SavedConfig finds it), and PATH led
// by the directories holding the cluster's release's kubectl and the
// bundled crictl.
func Vars(cfg config.Config) []string {
	p := cfg.Paths()
	sock := "unix://" + p.Node(cfg.NodeName(0)).ContainerdSocket()
	kc := state.ClientKubeconfig(p)
	if cfg.Kubeconfig != "" {
		kc = cfg.Kubeconfig
	}
	vars := []string{
		"KUBECONFIG=" + kc,
		"CONTAINER_RUNTIME_ENDPOINT=" + sock,
		"IMAGE_SERVICE_ENDPOINT=" + sock,
		"KUBERNIX_NAME=" + cfg.Name,
	}
	if dirs := common.BinDirs(cfg); len(dirs) > 0 {
		vars = append(vars, "PATH="+strings.Join(append(dirs, os.Getenv("PATH")), string(os.PathListSeparator)))
	}
	return vars
}

// NewEnvCommand returns `kubernix env`: the variables as shell exports, for
// `eval "$(kubernix env)"`.
func NewEnvCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print shell exports pointing kubectl and crictl at the cluster",
		Long: `Print shell exports for the cluster: KUBECONFIG, CONTAINER_RUNTIME_ENDPOINT and
IMAGE_SERVICE_ENDPOINT (node 0's containerd, for crictl), KUBERNIX_NAME (so
kubernix verbs act on this cluster), and PATH led by the bundled kubectl and
crictl. Use as eval "$(kubernix env)".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			for _, kv := range Vars(cfg) {
				k, v, _ := strings.Cut(kv, "=")
				common.Fprintf(env.Streams.Out, "export %s=%s\n", k, shellQuote(v))
			}
			return nil
		},
	}
	env.BindSelector(cmd)
	return cmd
}

// NewShellCommand returns `kubernix shell`: the user's shell (or the given
// command) with the cluster's environment.
func NewShellCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shell [-- COMMAND [ARG...]]",
		Short: "Start a shell (or run a command) with the cluster's environment",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				if cfg.Shell == "" {
					return fmt.Errorf("no shell: set $SHELL, or give the command to run after --")
				}
				args = []string{cfg.Shell}
			}
			// exec looks a bare name up on our PATH, not the child's:
			// the bundle's kubectl and crictl must win over older ones.
			if dirs := common.BinDirs(cfg); len(dirs) > 0 && !strings.Contains(args[0], "/") {
				if p, err := (&bins.Finder{Path: strings.Join(dirs, string(os.PathListSeparator))}).Find(args[0]); err == nil {
					args[0] = p
				}
			}
			c := exec.CommandContext(cmd.Context(), args[0], args[1:]...)
			c.Stdin, c.Stdout, c.Stderr = env.Streams.In, env.Streams.Out, env.Streams.Err
			c.Env = append(os.Environ(), Vars(cfg)...)
			if err := c.Run(); err != nil {
				if exit, ok := err.(*exec.ExitError); ok {
					return &common.ExitError{Code: exit.ExitCode(), Err: err}
				}
				return err
			}
			return nil
		},
	}
	env.BindSelector(cmd)
	return cmd
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
