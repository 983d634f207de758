package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/preflight"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state"
)

// Cleanup removes everything a cluster may have left on the host, working
// from the plan alone, as after a SIGKILLed supervisor: pass the plan of
// the recorded config (RecordedPlan, or Recover's when that record is
// damaged), not of new flags. It stops the live processes recorded in
// the state dir that the plan does not describe (undescribed), then the
// recorded processes of the plan's components (Describe) in the reverse
// of their start order, each after what needs it (removing pods through
// CRI before containerd), kills orphaned shims and containers, unmounts what the
// components mounted at or below their directories (Plan.MountRoots;
// nothing above them), removes the cluster's network (links, routes, its own
// chains, guard table and a process-executor node's NetworkPolicy table:
// network.Teardown), kube-proxy's nftables tables in the host's
// namespace only if this cluster's node held them (process executor), the
// nodes' cgroups, the mount points made on the host for their mounts
// (node.RemoveMountPoints) and the kubeconfig context, and, when it is the
// host's last cluster, restores the host's sysctls and FORWARD policy that
// still hold kubernix's values (network.LeaveSysctls). The state dir itself (PKI,
// etcd data) is kept. Idempotent; errors are joined and everything is
// attempted.
func Cleanup(ctx context.Context, pl *plan.Plan, log *slog.Logger) error {
	// The host-wide resources are named after the cluster: never touch
	// those of a live cluster of the same name in another state dir.
	if err := preflight.CheckName(pl); err != nil {
		return err
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(stopComponents(ctx, pl, log))
	if pl.Rootless {
		// rootlesskit ends when the supervisor in it does; one left
		// behind (or our own ancestor, inside) is stopped last.
		if runDir := pl.Paths.Run(state.RootlesskitScope, state.RootlesskitName); !recordsAncestor(runDir) {
			add(stopRecorded(ctx, runDir, log))
			// It removes its state dir when it exits, unless killed.
			if st, ok := state.ReadRootless(pl.Paths); ok && pl.Outside() && st.RootlesskitStateDir != "" {
				add(os.RemoveAll(st.RootlesskitStateDir))
			}
		}
	}
	add(os.RemoveAll(pl.Paths.ImageCache()))
	for _, nd := range pl.Nodes {
		add(killOrphans(ctx, pl, nd.Name))
		if err := os.Remove(state.FailedFile(pl.Paths, nd.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			add(err)
		}
	}
	if !pl.Rootless {
		// With every process of the cluster gone, and before the network:
		// the FORWARD policy is restored while the filter table it may
		// have made still holds the cluster's jump, so that table is
		// removed once empty, not earlier with the policy in it.
		add(network.LeaveSysctls(pl.Paths, stateDirRunning, log))
	}
	// Outside a rootless cluster's namespaces, its mounts, links and
	// iptables rules are not there to remove: they went with the
	// namespaces when the last process in them was stopped above.
	if !pl.Outside() {
		add(node.UnmountUnder(pl.MountRoots()...))
		add(network.Teardown(pl.Cfg.Name))
		add(releaseHostNamespaces(ctx, pl))
	}
	for _, nd := range pl.Nodes {
		add(node.RemoveHostResources(pl.CgroupRoot(nd), pl.MountPointsRecord(nd)))
	}
	if !pl.Rootless {
		// The parent of a rootless cluster's cgroups is the user's
		// delegated subtree: it stays.
		node.RemoveCgroupParent(pl.CgroupParent())
	}
	add(releaseName(pl))
	add(removeUserKubeconfig(pl, log))
	return errors.Join(errs...)
}

// stateDirRunning reports whether the cluster of state dir dir runs
// (its supervisor is alive).
func stateDirRunning(dir string) bool {
	_, ok := state.Running(config.Paths{State: dir})
	return ok
}

// stopComponents stops the live processes recorded for plan's
// components, in components.StopOrder, after those recorded in the state
// dir that plan does not describe (undescribed).
func stopComponents(ctx context.Context, pl *plan.Plan, log *slog.Logger) error {
	ds, err := plan.Describe(pl)
	if err != nil {
		return err
	}
	order, err := components.StopOrder(ds)
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range undescribed(pl, ds) {
		errs = append(errs, stopRecorded(ctx, dir, log))
	}
	for _, d := range order {
		// Through a containerd that still answers; after a crash its
		// pods go with the orphans below anyway.
		if d.DrainCRI != "" && fileinfo.Exists(d.DrainCRI) {
			if err := components.Drain(ctx, d.DrainCRI); err != nil {
				log.Debug("pods not removed through CRI", "socket", d.DrainCRI, "err", err)
			}
		}
		errs = append(errs, stopRecorded(ctx, d.Command.RunDir, log))
	}
	return errors.Join(errs...)
}

// undescribed lists the run dirs recorded in plan's state dir (RunDirs)
// that none of ds, plan's components, has: those of a run whose record is
// damaged (a plan of Recover describes the components of the default
// config, not what else the lost record enabled, such as the port proxy),
// or of a component an earlier config had. Their
// processes are the cluster's all the same (run.json pins each by its
// start time), and none that ds describes needs them, so Cleanup stops
// them first. A run dir of an ancestor of this process is left out.
func undescribed(pl *plan.Plan, ds []components.Description) []string {
	known := map[string]bool{}
	for _, d := range components.Processes(ds) {
		known[d.Command.RunDir] = true
	}
	return slices.DeleteFunc(state.RunDirs(pl.Paths), func(dir string) bool {
		return known[dir] || recordsAncestor(dir)
	})
}

// recordsAncestor reports whether runDir records a live process that is
// an ancestor of this one (rootlesskit, seen from the supervisor it runs).
func recordsAncestor(runDir string) bool {
	pid, ok := process.Running(runDir)
	return ok && process.IsAncestor(pid)
}

// stopRecorded stops the live process recorded in runDir, if any.
func stopRecorded(ctx context.Context, runDir string, log *slog.Logger) error {
	p, err := process.Adopt(runDir)
	if err != nil {
		if errors.Is(err, process.ErrNotRunning) || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	log.Debug("stopping leftover process", "run", runDir, "pid", p.PID())
	return p.Stop(ctx, 10*time.Second)
}

// orphans lists PIDs of a node's shims and of processes in the node's
// cgroups (node.Orphans).
func orphans(pl *plan.Plan, nodeName string) ([]int, error) {
	return node.Orphans(pl.Paths.Node(nodeName).ContainerdSocket(), pl.CgroupRoot(pl.NodeByName(nodeName)))
}

// killOrphans SIGKILLs a node's orphaned shims and container processes, by
// PID, and waits (up to 5 s) until they are gone.
func killOrphans(ctx context.Context, pl *plan.Plan, nodeName string) error {
	err := process.KillAndWait(ctx, func() ([]int, error) { return orphans(pl, nodeName) }, 5*time.Second)
	if err != nil {
		return fmt.Errorf("node %s: %w", nodeName, err)
	}
	return nil
}

// Leftovers lists what of the cluster exists on the host: live recorded
// processes (of the plan's components and undescribed ones), orphaned
// shims and containers, mounts at or below the components' directories,
// network links, routes, chains, guard table and NetworkPolicy table
// (network.Leftovers), the host namespaces
// claim and kube-proxy's tables there (process executor), and the nodes'
// cgroups and the mount points made for their mounts. Empty after a clean
// down.
func Leftovers(pl *plan.Plan) ([]string, error) {
	ds, err := plan.Describe(pl)
	if err != nil {
		return nil, err
	}
	runDirs := []string{state.SupervisorRunDir(pl.Paths)}
	if pl.Rootless {
		runDirs = append(runDirs, pl.Paths.Run(state.RootlesskitScope, state.RootlesskitName))
	}
	for _, d := range components.Processes(ds) {
		runDirs = append(runDirs, d.Command.RunDir)
	}
	runDirs = append(runDirs, undescribed(pl, ds)...)
	var out []string
	for _, runDir := range runDirs {
		if pid, ok := process.Running(runDir); ok && pid != os.Getpid() && !recordsAncestor(runDir) {
			rel, _ := filepath.Rel(pl.Paths.Run("", ""), runDir)
			out = append(out, fmt.Sprintf("process %s (pid %d)", rel, pid))
		}
	}
	for _, nd := range pl.Nodes {
		pids, _ := orphans(pl, nd.Name)
		for _, pid := range pids {
			out = append(out, fmt.Sprintf("orphaned process of node %s (pid %d)", nd.Name, pid))
		}
		out = append(out, node.HostLeftovers(nd.Name, pl.CgroupRoot(nd), pl.MountPointsRecord(nd))...)
	}
	if pl.Outside() {
		// Mounts, links and rules of a rootless cluster exist only in its
		// namespaces, which live as long as a process listed above does.
		sort.Strings(out)
		return out, nil
	}
	mps, err := node.MountsUnder(pl.MountRoots()...)
	if err != nil {
		return out, err
	}
	for _, mp := range mps {
		out = append(out, "mount "+mp)
	}
	netLeft, err := network.Leftovers(pl.Cfg.Name)
	if err != nil {
		return out, err
	}
	out = append(out, netLeft...)
	out = append(out, hostNamespacesLeftovers(context.Background(), pl)...)
	sort.Strings(out)
	return out, nil
}
