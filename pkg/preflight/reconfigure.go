package preflight

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/release"
	"github.com/kubernix/kubernix/pkg/state"
)

// unshapingKeys are the settings that do not shape the cluster, left out
// of ConfigChanges: name and state_dir select the cluster; the log level
// and format and the shell are kubernix's own, per invocation; kubeconfig
// is the user's file the context is merged into (up writes it again each
// time), not part of the cluster.
var unshapingKeys = []string{"name", "state_dir", "log_level", "log_format", "shell", "no_shell", "kubeconfig"}

// newClusterKeys maps each setting that an existing cluster cannot take
// a new value of to why: its old value lives on in etcd's data (each was
// tried: up of the stopped cluster fails). Every other change is applied
// by the next up, which renders every component's flags and files from
// the new config, reissues the certificates whose names or IPs changed
// (pki.Ensure), re-applies the addons, and deletes the Nodes the config
// no longer has (deleteStaleNodes). Tried and applied: node_cidr (the
// kubelets report the new node IPs, the apiserver moves the kubernetes
// Service's endpoints), cluster_domain (the kubelets, CoreDNS and the
// service-account issuer take it; up recreates every pod). Applied by
// the code: loadbalancer_cidr (the cloud controller gives a Service whose
// IP left the pool a new one), apiserver_port (kubeconfigs are written
// again each up), executor. cidr only needs a new cluster with the
// ranges carved from it (carvedKeys): see ConfigChanges.
var newClusterKeys = map[string]string{
	"service_cidr":        "existing Services (kubernetes, kube-dns) keep their ClusterIPs, which cannot change, in etcd",
	"cluster_cidr":        "a Node's pod CIDR (spec.podCIDR) cannot change once set",
	"node_cidr_mask_size": "a Node's pod CIDR (spec.podCIDR) cannot change once set",
	"ip_family":           "a Node's pod CIDRs (spec.podCIDRs) cannot change once set, and Services keep their IP families in etcd",
	"cidr6":               "a Node's pod CIDRs (spec.podCIDRs) cannot change once set, and Services keep their ClusterIPs in etcd",
	"ephemeral":           "down deletes an ephemeral cluster, and its etcd writes without fsync: a cluster's data does not change between the two",
}

// carvedKeys are the settings of newClusterKeys that Resolve derives from
// cidr when they are not set.
var carvedKeys = []string{"service_cidr", "cluster_cidr"}

// Change is a setting of a cluster's config that differs from the config
// the cluster last ran with.
type Change struct {
	config.Change
	// NewCluster says why the change needs a new cluster; "" when up
	// applies it to the existing one.
	NewCluster string
}

// String renders c as one line, saying when it needs a new cluster.
func (c Change) String() string {
	if c.NewCluster != "" {
		return fmt.Sprintf("%s (needs a new cluster: %s)", c.Change, c.NewCluster)
	}
	return c.Change.String()
}

// ConfigChanges compares cfg, resolved and valid, with the config its
// cluster last ran with (<state>/kubernix.toml, see LoadRecorded) and
// lists the settings that shape the cluster and differ, in config.Diff's
// order; none when there is no record. The executor compares as each
// config resolves it for a cluster that is rootless or not. A change
// needs a new cluster only when the cluster has etcd data to keep.
// Errors wrap config.ErrInvalid when the record cannot be read.
func ConfigChanges(cfg config.Config, rootless bool) ([]Change, error) {
	recorded, err := state.LoadRecorded(cfg.Paths().State)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the record of the last run: %w", err)
	}
	// Unset: the default release (recorded before the release was, or
	// given unresolved).
	for _, c := range []*config.Config{&recorded, &cfg} {
		if c.KubernetesVersion == "" {
			c.KubernetesVersion = release.Default().Kubernetes
		}
	}
	recorded.Executor = recorded.EffectiveExecutor(rootless)
	cfg.Executor = cfg.EffectiveExecutor(rootless)
	diff, err := config.Diff(recorded, cfg)
	if err != nil {
		return nil, err
	}
	hasData := fileinfo.Exists(cfg.Paths().EtcdData())
	var changes []Change
	for _, d := range diff {
		if slices.Contains(unshapingKeys, d.TopKey()) {
			continue
		}
		c := Change{Change: d}
		if hasData {
			c.NewCluster = newClusterKeys[d.TopKey()]
			if d.Key == "kubernetes_version" {
				c.NewCluster = upgradeRefusal(recorded.KubernetesVersion, cfg.KubernetesVersion)
			}
		}
		changes = append(changes, c)
	}
	// A new cidr alone changes the host's routes; it needs a new cluster
	// when the service or pod CIDR moves with it.
	if slices.ContainsFunc(changes, func(c Change) bool { return c.NewCluster != "" && slices.Contains(carvedKeys, c.Key) }) {
		if i := slices.IndexFunc(changes, func(c Change) bool { return c.Key == "cidr" }); i >= 0 {
			changes[i].NewCluster = "the service CIDR or pod CIDR carved from it moves with it"
		}
	}
	return changes, nil
}

// upgradeRefusal says why a cluster whose etcd data a release from wrote
// cannot run the release to (release.CheckUpgrade); "" when it can.
func upgradeRefusal(from, to string) string {
	err := release.CheckUpgrade(from, to)
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(err.Error(), release.ErrUpgrade.Error()+": ")
}

// refuseNewCluster returns nil when up can apply every change to the
// cluster named name, else an error wrapping config.ErrInvalid naming
// each change that needs a new cluster and how to get one.
func refuseNewCluster(name string, changes []Change) error {
	var errs []error
	for _, c := range changes {
		if c.NewCluster != "" {
			errs = append(errs, errors.New(c.String()))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	where := fmt.Sprintf(" for the existing cluster %q", name)
	return fmt.Errorf("%w\nkeep the cluster's values, or make a new cluster: `kubernix delete --name %s` (its state, etcd data included, is lost) then `kubernix up`",
		config.Invalid(where, errs), name)
}

// runningError is the error up returns for the cluster named name when
// its supervisor (pid) runs: ErrTaken, listing changes, what the
// config given differs in from the running one's.
func runningError(name string, pid int, changes []Change) error {
	if len(changes) == 0 {
		return fmt.Errorf("%w: %s (supervisor pid %d); use another --name, or `kubernix down --name %s`", ErrTaken, name, pid, name)
	}
	how := fmt.Sprintf("`kubernix down --name %s` then `kubernix up` applies the changes", name)
	if slices.ContainsFunc(changes, func(c Change) bool { return c.NewCluster != "" }) {
		how += fmt.Sprintf(" (those that need a new cluster: `kubernix delete --name %s` then `kubernix up`)", name)
	}
	return fmt.Errorf("%w: %s (supervisor pid %d); a running cluster does not change, and the config given differs from the one it runs with in:\n  %s\n%s",
		ErrTaken, name, pid, joinChanges(changes, "\n  "), how)
}

func joinChanges(changes []Change, sep string) string {
	lines := make([]string, len(changes))
	for i, c := range changes {
		lines[i] = c.String()
	}
	return strings.Join(lines, sep)
}

// WriteChanges writes the changes up applies to the cluster named name
// (those of changes that need no new cluster), one line a change;
// nothing when there are none.
func WriteChanges(w io.Writer, name string, changes []Change) {
	applied := slices.DeleteFunc(slices.Clone(changes), func(c Change) bool { return c.NewCluster != "" })
	if len(applied) == 0 {
		return
	}
	fmt.Fprintf(w, "cluster %q: applying the changes since its last run:\n  %s\n", name, joinChanges(applied, "\n  "))
}
