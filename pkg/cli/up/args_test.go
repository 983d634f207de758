package up

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// parseUp parses args (after `kubernix`) as the kubernix command tree
// does (global flags as in pkg/cli) and returns up's flags.
func parseUp(t *testing.T, args []string) *pflag.FlagSet {
	t.Helper()
	root := &cobra.Command{Use: "kubernix"}
	verbose := 0
	env := &common.Env{Flags: config.NewFlags(), Verbose: &verbose}
	root.PersistentFlags().CountVarP(&verbose, "verbose", "v", "more log output")
	root.AddCommand(NewCommand(env))
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return cmd.Flags()
}

// TestPassThroughArgs: the supervisor that `up --detach` starts gets the
// settings of the command line, whatever its spelling, without --detach
// and the internal flags, and parses them to the same values.
func TestPassThroughArgs(t *testing.T) {
	set := map[string]string{"notify-fd": "3", "no-shell": "true", "apiserver-port": "6444"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a value that is a verb", []string{"up", "--name", "up", "--detach"},
			[]string{"--name=up", "--apiserver-port=6444", "--no-shell=true", "--notify-fd=3"}},
		{"short flags grouped", []string{"up", "-vd", "--nodes", "2"},
			[]string{"--nodes=2", "--verbose=1", "--apiserver-port=6444", "--no-shell=true", "--notify-fd=3"}},
		{"global flags before the verb", []string{"-v", "-v", "up", "--state-dir", "/tmp/s", "--detach=true"},
			[]string{"--state-dir=/tmp/s", "--verbose=2", "--apiserver-port=6444", "--no-shell=true", "--notify-fd=3"}},
		{"lists, empty too", []string{"up", "-d", "--addons", "", "--retain", "--timeout", "90s"},
			[]string{"--addons=", "--retain=true", "--timeout=1m30s", "--apiserver-port=6444", "--no-shell=true", "--notify-fd=3"}},
		{"a list of two", []string{"up", "--addons=coredns,other", "-d"},
			[]string{"--addons=coredns,other", "--apiserver-port=6444", "--no-shell=true", "--notify-fd=3"}},
		{"our choices win, internal flags dropped", []string{"up", "-d", "--apiserver-port", "7000", "--notify-path", "/x", "--rootless-child", "--no-shell=false"},
			[]string{"--apiserver-port=6444", "--no-shell=true", "--notify-fd=3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parsed := parseUp(t, tt.args)
			got := passThroughArgs(parsed, set)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("passThroughArgs(%q) = %q, want %q", tt.args, got, tt.want)
			}
			// The supervisor's parse equals ours, but for what it is told.
			child := parseUp(t, append([]string{"up"}, got...))
			parsed.VisitAll(func(fl *pflag.Flag) {
				want := fl.Value.String()
				if v, ok := set[fl.Name]; ok {
					want = v
				} else if slices.Contains(internalFlags, fl.Name) {
					want = fl.DefValue
				}
				if c := child.Lookup(fl.Name).Value.String(); c != want {
					t.Errorf("the supervisor's --%s is %q, want %q", fl.Name, c, want)
				}
			})
		})
	}
}
