// Package list implements `kubernix list` (also `kubernix get clusters`):
// the inventory of the calling user's clusters on this machine.
package list

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state"
)

// Cluster is one row of `kubernix list`, and one element of its JSON
// (and YAML) output; the field names are stable.
type Cluster struct {
	// Name is the cluster's name (--name); "" when its record is damaged
	// and no other record names it.
	Name string `json:"name"`
	// Nodes is the number of nodes it was last started with.
	Nodes int `json:"nodes"`
	// KubernetesVersion is the Kubernetes release it last ran, e.g.
	// "v1.36.3"; absent when its record is damaged.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// State is "running", "stopped" or "broken" (see state.State).
	State state.State `json:"state"`
	// Mode is "root" or "rootless".
	Mode string `json:"mode"`
	// StateDir is the cluster's state directory (absolute).
	StateDir string `json:"stateDir"`
	// Started is when its last up started (RFC 3339); absent if unknown.
	Started *time.Time `json:"started,omitempty"`
	// SupervisorPID is the live supervisor's PID; absent without one.
	SupervisorPID int `json:"supervisorPID,omitempty"`
	// Problems say what makes a broken cluster broken; absent otherwise.
	Problems []string `json:"problems,omitempty"`
}

// Modes of Cluster.Mode.
const (
	ModeRoot     = "root"
	ModeRootless = "rootless"
)

// NewCommand returns `kubernix list`: every cluster of the calling user
// on this machine (root's clusters as root, else the user's rootless
// ones) with its nodes, state, age, mode and state dir, found in the state
// root, the index of state dirs `up` keeps and (as root) the name claims
// (state.Inventory). It reads files and the process and mount tables
// only: no apiserver is asked and no binary is run.
func NewCommand(env *common.Env) *cobra.Command {
	return newCommand(env, "list", "ls")
}

// NewGetCommand returns `kubernix get` with its one subcommand, `get
// clusters`: `kubernix list` under kind's name for it.
func NewGetCommand(env *common.Env) *cobra.Command {
	get := &cobra.Command{
		Use:   "get clusters",
		Short: "Print resources of this machine (clusters)",
		// Without a known resource: a usage error (exit 2).
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%w: kubernix get: name what to get: clusters", config.ErrInvalid)
			}
			return fmt.Errorf("%w: kubernix get %s: unknown resource; known: clusters", config.ErrInvalid, args[0])
		},
	}
	get.AddCommand(newCommand(env, "clusters", "cluster"))
	return get
}

func newCommand(env *common.Env, use string, aliases ...string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   "List this user's clusters on this machine: nodes, version, state (running, stopped, broken), age, state dir",
		Long: `List this user's clusters on this machine (root's as root, the user's
rootless clusters otherwise): NAME, NODES, STATE, AGE (since the last up
started), MODE (root or rootless) and STATE DIR, after NODES the
VERSION of Kubernetes it last ran.

STATE is running (the supervisor is alive), stopped (no supervisor and
nothing of the cluster left on the host: what down leaves) or broken (no
supervisor but processes, mounts or claims of the cluster remain, e.g.
after the supervisor was killed; or a supervisor that gave up on a
component or node). ` + "`kubernix down`" + ` brings a broken cluster to stopped.

-o json and -o yaml print a list of objects with the fields name, nodes,
kubernetesVersion, state, mode, stateDir, started (RFC 3339), supervisorPID and problems
(why it is broken); the last three only when set. The table is followed,
on the error stream, by a line per broken cluster saying why. A cluster
whose record (kubernix.toml) cannot be read is broken too; down still
brings it down. A state dir that cannot be read is reported after the
list, and the exit code is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := common.CheckOutput(output); err != nil {
				return err
			}
			// What could be read is listed, then the rest is an error
			// (exit 1).
			infos, findErr := state.DefaultInventory().Find()
			if len(infos) == 0 && output == common.OutputTable && findErr == nil {
				common.Fprintf(env.Streams.Err, "no clusters found\n")
				return nil
			}
			if err := printClusters(env.Streams.Out, output, rows(infos), time.Now()); err != nil {
				return err
			}
			if output == common.OutputTable {
				for _, line := range brokenNotes(infos) {
					common.Fprintf(env.Streams.Err, "%s\n", line)
				}
			}
			if findErr != nil {
				return &common.ExitError{Code: 1, Err: findErr}
			}
			return nil
		},
	}
	common.AddOutputFlag(cmd, &output)
	return cmd
}

// rows turns the inventory into output rows.
func rows(infos []state.Info) []Cluster {
	out := make([]Cluster, 0, len(infos))
	for _, in := range infos {
		c := Cluster{Name: in.Name, Nodes: in.Nodes, KubernetesVersion: in.Kubernetes, State: in.State, Mode: ModeRoot, StateDir: in.StateDir,
			SupervisorPID: in.Supervisor, Problems: in.Problems}
		if in.Rootless {
			c.Mode = ModeRootless
		}
		if !in.Started.IsZero() {
			started := in.Started.UTC()
			c.Started = &started
		}
		out = append(out, c)
	}
	return out
}

// maxProblems is how many problems of a broken cluster brokenNotes
// names; the rest it counts.
const maxProblems = 3

// brokenNotes words a line for each broken cluster of infos: why it is
// broken (its first maxProblems problems, and how many more) and what
// brings it down. The table shows only the state; -o json has them all.
func brokenNotes(infos []state.Info) []string {
	var out []string
	for _, in := range infos {
		if in.State != state.StateBroken {
			continue
		}
		problems := in.Problems
		if len(problems) > maxProblems {
			problems = append(slices.Clone(problems[:maxProblems]), fmt.Sprintf("and %d more", len(in.Problems)-maxProblems))
		}
		hint := fmt.Sprintf("`kubernix down --state-dir %s` brings it down", in.StateDir)
		if in.Damaged && len(in.Problems) == 1 && in.Supervisor == 0 {
			hint = fmt.Sprintf("nothing else of it is on the host: fix or remove its kubernix.toml before the next up, or `kubernix delete --state-dir %s`", in.StateDir)
		}
		out = append(out, fmt.Sprintf("cluster %q (%s) is broken: %s; %s", orUnknown(in.Name), in.StateDir, strings.Join(problems, ", "), hint))
	}
	return out
}

// printClusters writes cs in format (see common.PrintOutput); the table's AGE is
// kubectl's short duration from Started to now.
func printClusters(w io.Writer, format string, cs []Cluster, now time.Time) error {
	return common.PrintOutput(w, format, cs, func(tw io.Writer) error {
		fmt.Fprintln(tw, "NAME\tNODES\tVERSION\tSTATE\tAGE\tMODE\tSTATE DIR")
		for _, c := range cs {
			age := "<unknown>"
			if c.Started != nil {
				age = duration.HumanDuration(now.Sub(*c.Started))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", orUnknown(c.Name), c.Nodes, orUnknown(c.KubernetesVersion), c.State, age, c.Mode, c.StateDir)
		}
		return nil
	})
}

// orUnknown is name, or "<unknown>" for the name (or version) of a
// cluster whose record is damaged and whose other records do not name it.
func orUnknown(name string) string {
	if name == "" {
		return "<unknown>"
	}
	return name
}
