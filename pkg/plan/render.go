package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/process"
)

// NodeFiles renders everything one node runs from, as `kubernix up` would:
// containerd's config.toml, its CNI conflist, the KubeletConfiguration, the
// KubeProxyConfiguration, and the command line of each node process (one
// per line, as JSON arrays), from the node's descriptions (Describe). Keys
// are the files' base names. Nothing is written. The sandbox's PID is not
// known before it runs: its wrapper shows as <sandbox-pid>.
func NodeFiles(plan *Plan, nd *node.Node) (map[string][]byte, error) {
	ds, err := Describe(plan)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	var argv bytes.Buffer
	for _, d := range ds {
		if d.Scope != nd.Name {
			continue
		}
		for _, f := range d.Files {
			if f.Link == "" {
				out[filepath.Base(f.Path)] = f.Content
			}
		}
		fmt.Fprintf(&argv, "%s: ", d.ID())
		enc := json.NewEncoder(&argv)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plannedArgv(plan, d)); err != nil {
			return nil, err
		}
	}
	out["commands.txt"] = argv.Bytes()
	return out, nil
}

// plannedArgv is d's full command line as it will run, a sandbox's PID
// written <sandbox-pid>.
func plannedArgv(plan *Plan, d components.Description) []string {
	cmd := d.Command
	if nd := plan.NodeByName(d.Scope); nd != nil && d.InSandbox {
		cmd.Wrapper = nd.Exec.PlannedWrapper()
	}
	return cmd.Argv()
}

// WritePlan writes what `kubernix up` would do for plan, for `up
// --dry-run`: every component in start order with what it needs, its
// command line and whole environment (URL passwords redacted), its log, run dir and probes, and each
// file it writes with its content. It changes nothing on the host.
func WritePlan(w io.Writer, plan *Plan) error {
	ds, err := Describe(plan)
	if err != nil {
		return err
	}
	order, err := components.StartOrder(ds)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# %s\n# %d components in start order; nothing was started or written.\n", plan, len(order))
	for _, d := range order {
		if err := writeComponent(w, plan, d); err != nil {
			return err
		}
	}
	return nil
}

func writeComponent(w io.Writer, plan *Plan, d components.Description) error {
	fmt.Fprintf(w, "\n== %s\n", d.ID())
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	field := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	field("kind", fmt.Sprintf("%s, phase %s, scope %s", d.Kind, d.Phase, d.Scope))
	needs := strings.Join(d.Needs, ", ")
	if d.AfterEarlierPhases {
		needs = strings.TrimPrefix(needs+", every component of the earlier phases", ", ")
	}
	if needs == "" {
		needs = "-"
	}
	field("needs", needs)
	if d.Kind == components.KindProcess {
		field("command", process.ShellJoin(plannedArgv(plan, d)))
		field("env", strings.Join(process.RedactEnv(d.Environ()), " "))
		field("log", d.Command.LogFile)
		field("run dir", d.Command.RunDir)
	}
	if d.Summary != "" {
		field("does", d.Summary)
	}
	if ready := d.Probe.Describe(); ready != "" {
		field("ready", ready)
	}
	if d.Liveness != nil {
		field("liveness", d.Liveness.String())
	}
	if d.DrainCRI != "" {
		field("before stop", "remove every pod through CRI on "+d.DrainCRI)
	}
	for _, dir := range d.Dirs {
		field("dir", dir)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range d.Files {
		writeFile := fmt.Sprintf("--- %s (%04o)\n%s", f.Path, f.FileMode(), f.Content)
		if f.Link != "" {
			writeFile = fmt.Sprintf("--- %s -> %s\n", f.Path, f.Link)
		}
		fmt.Fprint(w, strings.TrimSuffix(writeFile, "\n")+"\n")
	}
	if len(d.Manifest) > 0 {
		fmt.Fprintf(w, "--- manifest applied\n%s", strings.TrimSuffix(string(d.Manifest), "\n")+"\n")
	}
	return nil
}

// Placeholders replaces the machine-specific paths in rendered text with
// names, for golden files: each pair is (path, placeholder).
func Placeholders(b []byte, pairs ...string) []byte {
	s := string(b)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
	}
	return []byte(s)
}
