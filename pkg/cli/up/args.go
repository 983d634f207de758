package up

import (
	"encoding/csv"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// internalFlags are up's flags that only kubernix itself sets, on a
// supervisor it starts, and --detach.
var internalFlags = []string{"detach", "notify-fd", "notify-path", "rootless-child"}

// passThroughArgs returns the flags set on the command line (parsed: up's
// own and the global ones, after parsing) as --name=value, for a
// supervisor that up starts: all but internalFlags and those in set, then
// those of set, by name. The supervisor parses them to the same settings
// whatever the short forms, grouping and order on the command line.
func passThroughArgs(parsed *pflag.FlagSet, set map[string]string) []string {
	var args []string
	parsed.Visit(func(fl *pflag.Flag) {
		if slices.Contains(internalFlags, fl.Name) {
			return
		}
		if _, ok := set[fl.Name]; ok {
			return
		}
		value := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok { // String() is "[a,b]"
			value = csvLine(sv.GetSlice())
		}
		args = append(args, "--"+fl.Name+"="+value)
	})
	for _, name := range slices.Sorted(maps.Keys(set)) {
		args = append(args, "--"+name+"="+set[name])
	}
	return args
}

// csvLine is values as one CSV record, as pflag's slice flags read it.
func csvLine(values []string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(values)
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}
