// Package version implements `kubernix version`.
package version

import (
	"runtime"
	"runtime/debug"
	"sort"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/cli/common"
)

// Version is kubernix's own version, set at link time with
// -X github.com/kubernix/kubernix/pkg/cli/version.Version=...; "dev" otherwise.
var Version = "dev"

// NewCommand returns `kubernix version`: kubernix's version, its Go version
// and the pinned upstream versions it is built to run.
func NewCommand(env *common.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kubernix's version and the pinned upstream versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := env.Streams.Out
			rev := ""
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" {
						rev = " " + s.Value
					}
				}
			}
			common.Fprintf(out, "kubernix %s%s (%s %s/%s)\n", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			versions := assets.Versions()
			keys := make([]string, 0, len(versions))
			for k := range versions {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				common.Fprintf(out, "  %-20s %s\n", k, versions[k])
			}
			return nil
		},
	}
}
