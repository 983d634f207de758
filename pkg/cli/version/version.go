// Package version implements `kubernix version`.
package version

import (
	"io"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/cli/common"
)

// Version is kubernix's own version, set at link time with
// -X github.com/kubernix/kubernix/pkg/cli/version.Version=...; "dev" otherwise.
var Version = "dev"

// Info is what `kubernix version` reports (-o json|yaml), and what its
// table shows.
type Info struct {
	// Kubernix is kubernix's version (Version).
	Kubernix string `json:"kubernix"`
	// Revision is the VCS commit kubernix was built from (Go build info's
	// vcs.revision), "" when unknown (e.g. `go run`).
	Revision string `json:"revision,omitempty"`
	// GoVersion is the Go toolchain that built kubernix (runtime.Version,
	// e.g. "go1.25.4").
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH, e.g. "linux/amd64".
	Platform string `json:"platform"`
	// Upstream maps each pinned upstream version's name, as in
	// assets/versions (e.g. "KUBERNETES_VERSION", "CONTAINERD_VERSION"),
	// to the version kubernix is built to run (assets.Versions).
	Upstream map[string]string `json:"upstream"`
}

// Current returns the Info of this binary.
func Current() Info {
	info := Info{
		Kubernix:  Version,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
		Upstream:  assets.Versions(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Revision = s.Value
			}
		}
	}
	return info
}

// Table writes info as `kubernix version` prints it by default: a line
// with kubernix's version, revision, Go version and platform, then one
// line per upstream component, sorted by name.
func (info Info) Table(w io.Writer) error {
	rev := ""
	if info.Revision != "" {
		rev = " " + info.Revision
	}
	common.Fprintf(w, "kubernix %s%s (%s %s)\n", info.Kubernix, rev, info.GoVersion, info.Platform)
	keys := make([]string, 0, len(info.Upstream))
	for k := range info.Upstream {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		common.Fprintf(w, "  %s\t%s\n", k, info.Upstream[k])
	}
	return nil
}

// NewCommand returns `kubernix version`: kubernix's version, its Go version
// and the pinned upstream versions it is built to run, as a table or with
// -o json|yaml as an Info.
func NewCommand(env *common.Env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kubernix's version and the pinned upstream versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := common.CheckOutput(output); err != nil {
				return err
			}
			info := Current()
			return common.PrintOutput(env.Streams.Out, output, info, info.Table)
		},
	}
	common.AddOutputFlag(cmd, &output)
	return cmd
}
