package common

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/config"
)

// Output formats of -o/--output, as kubectl names them.
const (
	OutputTable = ""
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// outputFormats are the accepted -o values; "" (the default) is the table.
var outputFormats = []string{OutputJSON, OutputYAML}

// AddOutputFlag registers -o/--output on cmd, bound to format: "" (a
// table for people, the default), "json" or "yaml" (for scripts), with
// shell completion of the formats.
func AddOutputFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", OutputTable, "output format: json or yaml (default: a table)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
}

// CheckOutput returns an error wrapping config.ErrInvalid (exit 2) naming
// --output when format is not one AddOutputFlag accepts. Verbs call it
// before they do anything else.
func CheckOutput(format string) error {
	if format == OutputTable || slices.Contains(outputFormats, format) {
		return nil
	}
	return fmt.Errorf("%w: --output %q: want json or yaml (or leave it out for a table)", config.ErrInvalid, format)
}

// PrintOutput writes v to w in format: JSON (indented, a trailing
// newline) or YAML (sigs.k8s.io/yaml, so the field names are v's json
// tags in both); for OutputTable it calls table with a tabwriter on w
// (columns two spaces apart) and flushes it. Errors are the encoder's or
// table's and the writer's.
func PrintOutput(w io.Writer, format string, v any, table func(tw io.Writer) error) error {
	switch format {
	case OutputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case OutputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case OutputTable:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if err := table(tw); err != nil {
			return err
		}
		return tw.Flush()
	}
	return CheckOutput(format)
}
