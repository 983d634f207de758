// Package registrycmd implements `kubernix registry`: `login` hands the
// account that pushes to the cluster's local registry need to the owner's
// image tools, as `docker login` would.
package registrycmd

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/types"
	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/config"
)

// NewCommand returns `kubernix registry` and its subcommands.
func NewCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Log the owner's image tools in to the cluster's local registry",
		Long: `The cluster's local registry (the registry addon) takes pushes on
127.0.0.1:<registry port> from its owner alone: the account kubernix
generated for it (in <state>/registry-auth, readable by the owner only).
The nodes and pods pull from its read-only address on the cluster bridge.

  kubernix registry login       store the account for localhost:<port>
                                where docker, crane, podman and skopeo
                                look for it`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newLoginCommand(env))
	return cmd
}

// newLoginCommand returns `kubernix registry login [--password-stdout]`.
func newLoginCommand(env *common.Env) *cobra.Command {
	var passwordOut bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Store the local registry's push account in the Docker config",
		Long: `Store the account that pushes to the cluster's local registry need for
localhost:<registry port>, as ` + "`docker login`" + ` would: in the Docker config
($DOCKER_CONFIG/config.json, else ~/.docker/config.json), or in the credential
helper it names. docker, crane, podman, skopeo and buildah read it there:

  kubernix registry login && crane push app.tar localhost:5001/app:v1

Only the cluster's owner can read the account (root's cluster: run this
with sudo, and the tools too, or hand the password on yourself). The account
stays across down and up; if up moved the registry to another port, log in
again. --password-stdout prints only the password, for another tool:

  sudo kubernix registry login --password-stdout |
    docker login localhost:5001 --username kubernix --password-stdin`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			port := cfg.LocalRegistryPort()
			if port == 0 {
				return fmt.Errorf("%w: cluster %q runs no local registry (the registry addon, --registry-port)", config.ErrInvalid, cfg.Name)
			}
			cred, err := readCredentials(cfg)
			if err != nil {
				return err
			}
			if passwordOut {
				common.Fprintf(env.Streams.Out, "%s\n", cred.Password)
				return nil
			}
			host := "localhost:" + strconv.Itoa(port)
			where, err := store(dockerConfigDir(env.Environ), host, cred)
			if err != nil {
				return fmt.Errorf("log in to %s: %w", host, err)
			}
			common.Fprintf(env.Streams.Out, "logged in to %s as %s (%s)\n", host, cred.Username, where)
			return nil
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().BoolVar(&passwordOut, "password-stdout", false, "print only the password instead of storing the account")
	return cmd
}

// readCredentials reads the account of cfg's registry, saying what to
// do when there is none yet or the caller may not read it.
func readCredentials(cfg config.Config) (registry.Credentials, error) {
	dir := cfg.Paths().RegistryAuth()
	cred, err := registry.ReadCredentials(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cred, fmt.Errorf("cluster %q has no registry account yet in %s: `kubernix up` makes it", cfg.Name, dir)
	case errors.Is(err, fs.ErrPermission):
		return cred, fmt.Errorf("%w: only the cluster's owner may push to its registry; run this as that user", err)
	}
	return cred, err
}

// store saves cred for host in the Docker config in dir and says where it
// went: the config file, or the credential helper it names.
func store(dir, host string, cred registry.Credentials) (string, error) {
	cf, err := dockerconfig.Load(dir)
	if err != nil {
		return "", err
	}
	auth := types.AuthConfig{Username: cred.Username, Password: cred.Password, ServerAddress: host}
	if err := cf.GetCredentialsStore(host).Store(auth); err != nil {
		return "", err
	}
	if helper := cf.CredentialHelpers[host]; helper != "" {
		return "credential helper docker-credential-" + helper, nil
	}
	if cf.CredentialsStore != "" {
		return "credential helper docker-credential-" + cf.CredentialsStore, nil
	}
	return cf.Filename, nil
}

// dockerConfigDir is the Docker config directory the tools of the
// environment environ (KEY=VALUE strings) read: $DOCKER_CONFIG, else
// $HOME/.docker; "" (docker's own default) without either.
func dockerConfigDir(environ []string) string {
	if dir := lookup(environ, dockerconfig.EnvOverrideConfigDir); dir != "" {
		return dir
	}
	if home := lookup(environ, "HOME"); home != "" {
		return filepath.Join(home, ".docker")
	}
	return ""
}

// lookup returns the value of the last key= entry of environ, "" if none.
func lookup(environ []string, key string) string {
	value := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			value = v
		}
	}
	return value
}
