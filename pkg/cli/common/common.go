// Package common holds what every kubernix verb shares: the I/O streams, the
// logger and the loading of the effective config from flags and environment.
package common

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state"
)

// Streams are the standard streams a command reads and writes.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Env is handed to every verb's constructor.
type Env struct {
	Streams Streams
	// Flags binds the config flags: each verb binds those it takes to its
	// own flag set (BindConfig, BindSelector).
	Flags *config.Flags
	// Environ is the process environment as KEY=VALUE strings.
	Environ []string
	// Verbose is the number of -v flags given.
	Verbose *int
}

// BindConfig gives cmd --config and the flag of each setting named by its
// toml key in keys, every setting when keys is empty (up, config view).
func (e *Env) BindConfig(cmd *cobra.Command, keys ...string) {
	e.Flags.Bind(cmd.Flags(), keys...)
	for flag, values := range map[string][]string{
		"addons":     addons.Names(),
		"executor":   {config.ExecutorContainer, config.ExecutorProcess},
		"log-level":  {"debug", "info", "warn", "error"},
		"log-format": {"text", "json"},
	} {
		if cmd.Flags().Lookup(flag) != nil {
			_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
	}
}

// BindSelector gives cmd the flags that pick an existing cluster:
// --name, --state-dir (alias --root) and --config, for the verbs that act
// on one (down, status, logs, env, image, kubeconfig, delete).
func (e *Env) BindSelector(cmd *cobra.Command) {
	e.Flags.Bind(cmd.Flags(), config.SelectorKeys...)
	_ = cmd.RegisterFlagCompletionFunc("name", completeClusterNames)
}

// completeClusterNames completes --name with the names of this user's
// clusters on this machine (state.DefaultInventory), each described by
// its state and state dir.
func completeClusterNames(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	infos, _ := state.DefaultInventory().Find()
	var out []cobra.Completion
	for _, info := range infos {
		out = append(out, cobra.CompletionWithDesc(info.Name, fmt.Sprintf("%s, %s", info.State, info.StateDir)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// Config loads the effective config from the --config file, KUBERNIX_*
// variables and flags, and validates it. Errors wrap config.ErrInvalid.
func (e *Env) Config() (config.Config, error) {
	cfg, err := config.Load(e.Flags, e.Environ)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// UseClusterSettings makes the selected cluster's last asked settings
// (config.Paths.AskedConfigFile) the config file, when no config file is
// given (--config, $KUBERNIX_CONFIG) and that cluster ran before, as k3s
// and minikube start again from a cluster's saved config: flags and
// KUBERNIX_* variables then change only what they set. It returns the
// file's path, "" when it uses none, as for a state dir that is not the
// caller's alone (config.CheckStateDirOwner), which Config then refuses.
func (e *Env) UseClusterSettings() string {
	if e.Flags.File != "" || slices.ContainsFunc(e.Environ, func(kv string) bool {
		return strings.HasPrefix(kv, config.EnvPrefix+"CONFIG=")
	}) {
		return ""
	}
	cfg, err := config.Load(e.Flags, e.Environ)
	if err != nil {
		return "" // Config reports it
	}
	if config.CheckStateDirOwner(cfg.StateDir) != nil {
		return ""
	}
	asked := cfg.Paths().AskedConfigFile()
	if _, err := os.Stat(asked); err != nil {
		return ""
	}
	e.Flags.File = asked
	return asked
}

// Logger returns a slog.Logger on the error stream at the config's level and
// format; each -v lowers the level by one step (info -> debug).
func (e *Env) Logger(cfg config.Config) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	if e.Verbose != nil {
		level -= slog.Level(4 * *e.Verbose)
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(e.Streams.Err, opts))
	}
	return slog.New(slog.NewTextHandler(e.Streams.Err, opts))
}

// ExitError carries a process exit code other than 1 through cobra.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode maps an error from a verb to the process exit code: 0 for nil, 2
// for invalid configuration or usage, an ExitError's Code, else 1.
func ExitCode(err error) int {
	var exit *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, config.ErrInvalid):
		return 2
	}
	return 1
}

// Fprintf writes to w, ignoring the error as fmt.Printf callers do.
func Fprintf(w io.Writer, format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }

// DefaultStreams are the process's own standard streams.
func DefaultStreams() Streams { return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// CheckTimeout returns an error wrapping config.ErrInvalid (exit 2)
// naming --timeout when d, its value, is not positive: a verb would
// otherwise give up (or, for down, kill the supervisor) at once.
func CheckTimeout(d time.Duration) error {
	if d > 0 {
		return nil
	}
	return fmt.Errorf("%w: --timeout %s: must be positive, e.g. 2m", config.ErrInvalid, d)
}
