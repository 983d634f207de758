package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubernix/kubernix/pkg/config"
)

// NamesDir holds one file per cluster name in use on this host (root
// mode), holding the state dir of the cluster that uses it. Host-wide
// resources (the bridge, iptables chains, cgroups) are named after the
// cluster name, so two clusters of one name would tear each other down.
const NamesDir = "/run/kubernix/names"

func nameFile(name string) string { return filepath.Join(NamesDir, name) }

// CheckName returns an error wrapping ErrTaken and config.ErrInvalid when a
// live cluster of plan's name runs from another state dir. Rootless
// clusters live in their own namespaces and are not checked.
func CheckName(plan *Plan) error {
	if plan.Rootless {
		return nil
	}
	b, err := os.ReadFile(nameFile(plan.Cfg.Name))
	if err != nil {
		return nil
	}
	other := strings.TrimSpace(string(b))
	if other == plan.Paths.State {
		return nil
	}
	if pid, ok := Running(config.Paths{State: other}); ok {
		return fmt.Errorf("%w: %w: cluster name %q is in use by the cluster in %s (supervisor pid %d); choose another --name, or stop it with `kubernix down --name %s --state-dir %s`",
			config.ErrInvalid, ErrTaken, plan.Cfg.Name, other, pid, plan.Cfg.Name, other)
	}
	return nil
}

// claimName records that plan's state dir uses its name.
func claimName(plan *Plan) error {
	if plan.Rootless {
		return nil
	}
	if err := os.MkdirAll(NamesDir, 0o755); err != nil {
		return err
	}
	return writeFile(nameFile(plan.Cfg.Name), []byte(plan.Paths.State+"\n"))
}

// releaseName drops the record if it is plan's.
func releaseName(plan *Plan) error {
	if plan.Rootless {
		return nil
	}
	b, err := os.ReadFile(nameFile(plan.Cfg.Name))
	if err != nil || strings.TrimSpace(string(b)) != plan.Paths.State {
		return nil
	}
	if err := os.Remove(nameFile(plan.Cfg.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
