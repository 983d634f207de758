// Package logs implements `kubernix logs`.
package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// NewCommand returns `kubernix logs [COMPONENT] [--node N] [-f]`: the log
// of a component of the cluster (its description, plan.Describe), of a
// node's on node N (from 0), or with no argument the list of every log.
func NewCommand(env *common.Env) *cobra.Command {
	var nodeIndex int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs [COMPONENT]",
		Short: "Print (or follow) a component's log, or list them all",
		Long: `Print a component's log: a control-plane component (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler), a node's (containerd, kubelet,
kube-proxy, sandbox: of node --node N, default 0, or named as
kubelet@<node>), the supervisor's, or the apiserver's audit log (audit).
With no COMPONENT it lists every log of the cluster.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeComponents(env),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			logs, err := clusterLogs(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return list(env.Streams.Out, logs)
			}
			path, err := find(cfg, logs, args[0], nodeIndex, cmd.Flags().Changed("node"))
			if err != nil {
				return err
			}
			if follow {
				return followFile(cmd.Context(), path, env.Streams.Out)
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(env.Streams.Out, f)
			return err
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().IntVar(&nodeIndex, "node", 0, "node index, from 0, for node components")
	_ = cmd.RegisterFlagCompletionFunc("node", env.CompleteNodeIndex)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is appended")
	return cmd
}

// completeComponents completes COMPONENT with the names of the selected
// cluster's logs, and each node's as <name>@<node>; nothing when the
// cluster is not found.
func completeComponents(env *common.Env) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := env.SavedConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		logs, err := clusterLogs(cmd.Context(), cfg)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completions(logs), cobra.ShellCompDirectiveNoFileComp
	}
}

// completions are the names of logs, each once, then <name>@<scope> of
// the logs of a node.
func completions(logs []clusterLog) []cobra.Completion {
	var names, scoped []cobra.Completion
	for _, l := range logs {
		if !slices.Contains(names, l.Name) {
			names = append(names, l.Name)
		}
		if l.Scope != config.ControlPlaneScope && l.Scope != state.SupervisorScope {
			scoped = append(scoped, l.Name+"@"+l.Scope)
		}
	}
	return append(names, scoped...)
}

// clusterLog is one log of the cluster.
type clusterLog struct {
	Name, Scope, Path string
}

// clusterLogs lists the logs of cfg's cluster: every process it
// describes, in start order, then the apiserver's audit log and the
// supervisor's.
func clusterLogs(ctx context.Context, cfg config.Config) ([]clusterLog, error) {
	pl, err := common.Plan(cfg)
	if err != nil {
		return nil, err
	}
	ds, err := plan.Describe(pl)
	if err != nil {
		return nil, err
	}
	order, err := components.StartOrder(ds)
	if err != nil {
		return nil, err
	}
	var out []clusterLog
	for _, d := range components.Processes(order) {
		out = append(out, clusterLog{d.Name, d.Scope, d.Command.LogFile})
	}
	p := cfg.Paths()
	return append(out,
		clusterLog{"audit", config.ControlPlaneScope, p.Log(config.ControlPlaneScope, "audit")},
		clusterLog{"supervisor", state.SupervisorScope, p.Log(state.SupervisorScope, "supervisor")},
	), nil
}

// list prints each log with its scope and path; a log not written yet
// says so.
func list(out io.Writer, logs []clusterLog) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSCOPE\tLOG")
	for _, l := range logs {
		path := l.Path
		if _, err := os.Stat(path); err != nil {
			path += " (none yet)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, l.Scope, path)
	}
	return tw.Flush()
}

// find returns the path of the log of component, given as a name (of
// node --node nodeIndex for a node's) or as "<name>@<node>". Errors wrap
// config.ErrInvalid and list the components.
func find(cfg config.Config, logs []clusterLog, component string, nodeIndex int, nodeSet bool) (string, error) {
	if nodeIndex < 0 || nodeIndex >= cfg.Nodes {
		return "", fmt.Errorf("%w: --node %d: the cluster has nodes 0..%d", config.ErrInvalid, nodeIndex, cfg.Nodes-1)
	}
	name, scope, named := strings.Cut(component, "@")
	var names []string
	for _, l := range logs {
		if !slices.Contains(names, l.Name) {
			names = append(names, l.Name)
		}
		if l.Name != name {
			continue
		}
		node := l.Scope != config.ControlPlaneScope && l.Scope != state.SupervisorScope
		switch {
		case named && l.Scope == scope, !named && !node, !named && l.Scope == cfg.NodeName(nodeIndex):
			if _, err := os.Stat(l.Path); err != nil {
				return "", fmt.Errorf("no log of %s in %s yet: %w", component, l.Scope, err)
			}
			return l.Path, nil
		}
	}
	hint := ""
	if nodeSet || named {
		hint = " on that node"
	}
	return "", fmt.Errorf("%w: no component %q%s (components: %s; `kubernix logs` lists every log)",
		config.ErrInvalid, component, hint, strings.Join(names, ", "))
}

// followFile copies path to out and then whatever is appended, until ctx
// ends; after a rotation in place it goes on from the file's start.
func followFile(ctx context.Context, path string, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(path); err != nil {
		return err
	}
	for {
		if _, err := io.Copy(out, f); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.Errors:
			return err
		case ev := <-w.Events:
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				return errors.New("log file removed")
			}
			if err := rewindIfTruncated(f); err != nil {
				return err
			}
		}
	}
}

// rewindIfTruncated moves f's offset back to the start when the file is
// now shorter than what was read: the supervisor rotated the log of a
// running component in place (process.CapLog).
func rewindIfTruncated(f *os.File) error {
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < off {
		_, err = f.Seek(0, io.SeekStart)
	}
	return err
}
