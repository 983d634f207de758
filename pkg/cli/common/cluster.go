package common

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// SavedConfig returns the config a cluster was started with, from
// <state>/kubernix.toml, for the verbs that act on an existing cluster
// (down, delete, status, logs, env, image, kubeconfig), with StateDir
// where it was found. The cluster is the one in the state dir that
// --state-dir (or KUBERNIX_STATE_DIR or the --config file) names; without
// one, the one named --name: in its default state dir, else the one of
// that name that `kubernix list` finds (state.DefaultInventory), as up
// may have been given another --state-dir. Errors: one wrapping
// os.ErrNotExist when there is no such cluster; one wrapping
// config.ErrInvalid (exit 2) when several clusters of this user have the
// name, or --name contradicts the name of the cluster in --state-dir.
//
// A cluster whose record cannot be read (state.LoadCluster) is returned
// as the config state.Recover makes, with a *state.DamagedError: down
// and delete go on with it (WarnDamaged), the other verbs report it. Its
// name is the one the state dir's records give, else the selected one
// (--name, or the default).
func (e *Env) SavedConfig() (config.Config, error) {
	cfg, explicit, err := config.LoadExplicit(e.Flags, e.Environ)
	if err != nil {
		return cfg, err
	}
	if !fileinfo.Exists(cfg.Paths().ConfigFile()) && !slices.Contains(explicit, "state_dir") {
		if cfg.StateDir, err = findByName(state.DefaultInventory(), cfg.Name, cfg.StateDir); err != nil {
			return cfg, err
		}
	}
	saved, err := state.LoadCluster(cfg.StateDir)
	var damaged *state.DamagedError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return cfg, fmt.Errorf("no cluster %q in %s (%w); start one with `kubernix up`", cfg.Name, cfg.StateDir, os.ErrNotExist)
	case errors.As(err, &damaged) && saved.Name == "":
		saved = state.Recover(cfg.StateDir, cfg.Name)
	case err != nil && damaged == nil:
		return cfg, err
	}
	if slices.Contains(explicit, "name") && saved.Name != cfg.Name {
		return cfg, fmt.Errorf("%w: --name %s: the cluster in %s is named %q; leave out --name, or give the state dir of %q",
			config.ErrInvalid, cfg.Name, cfg.StateDir, saved.Name, cfg.Name)
	}
	return saved, err
}

// WarnDamaged returns nil after a warning on the error stream when err
// is a *state.DamagedError (a record that cannot be read), saying that
// the cluster is brought down from its other records; other errors it
// returns as they are. down and delete call it on SavedConfig's error.
func (e *Env) WarnDamaged(err error) error {
	var damaged *state.DamagedError
	if !errors.As(err, &damaged) {
		return err
	}
	Fprintf(e.Streams.Err, "WARNING: %v\n  working from the cluster's other records instead: its supervisor, the run records "+
		"(pidfile and run.json) of its processes, its node dirs and its mount, claim and kubeconfig records\n", damaged)
	return nil
}

// findByName returns the state dir of the one cluster of inv named name,
// or def when there is none. Several
// of that name are an error wrapping config.ErrInvalid naming their state
// dirs. A cluster whose record is damaged counts under the name its
// other records give (state.RecordedName).
func findByName(inv state.Inventory, name, def string) (string, error) {
	dirs, _ := inv.StateDirs()
	var found []string
	var damaged *state.DamagedError
	for _, d := range dirs {
		if c, err := state.LoadCluster(d); (err == nil || errors.As(err, &damaged)) && c.Name == name {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return def, nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: --name %s: %d clusters have that name, in %s; add --state-dir with the one you mean",
		config.ErrInvalid, name, len(found), strings.Join(found, " and "))
}

// Plan builds the plan of cfg's existing cluster, for the verbs that act
// on it (down, status, logs, config validate, kubeconfig): it locates the
// cluster's binaries (doctor.Locate), reads whether it runs rootless from
// its state dir (state.ReadRootless) and checks nothing; up's plan is
// preflight.Prepare's.
func Plan(cfg config.Config) (*plan.Plan, error) {
	finder, rel, _ := bins.ReleaseFinder(cfg.BinDir, cfg.BundleDir, cfg.KubernetesVersion)
	imagesDir, _ := finder.ImagesDir()
	st, rootless := state.ReadRootless(cfg.Paths())
	return plan.New(cfg, doctor.Locate(finder, rel, cfg.CNIDir), imagesDir,
		plan.Rootless{Enabled: rootless, StateDir: st.RootlesskitStateDir})
}

// BinDirs are the directories of the kubectl of cfg's release
// (bins.ReleaseFinder) and of the bundled crictl, each once, those found.
func BinDirs(cfg config.Config) []string {
	finder, _, _ := bins.ReleaseFinder(cfg.BinDir, cfg.BundleDir, cfg.KubernetesVersion)
	var dirs []string
	for _, name := range []string{"kubectl", "crictl"} {
		if p, err := finder.Find(name); err == nil && !slices.Contains(dirs, filepath.Dir(p)) {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	return dirs
}

// CompleteNodeIndex completes a --node flag with the selected cluster's
// node indices, 0..nodes-1, each described by its node name; nothing when
// the cluster is not found.
func (e *Env) CompleteNodeIndex(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := e.SavedConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for i, name := range cfg.NodeNames() {
		out = append(out, cobra.CompletionWithDesc(strconv.Itoa(i), name))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
