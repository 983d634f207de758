package common

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
)

// SavedConfig returns the config a cluster was started with, from
// <state>/kubernix.toml, for the verbs that act on an existing cluster
// (down, status, logs, env, image). The name and state dir come from flags
// and environment as usual. It errors wrapping os.ErrNotExist when no
// cluster was ever started there.
func (e *Env) SavedConfig() (config.Config, error) {
	cfg, err := config.Load(e.Flags, e.Environ)
	if err != nil {
		return cfg, err
	}
	path := cfg.Paths().ConfigFile()
	if _, err := os.Stat(path); err != nil {
		return cfg, fmt.Errorf("no cluster %q in %s (%w); start one with `kubernix up`", cfg.Name, cfg.StateDir, os.ErrNotExist)
	}
	saved, err := config.Load(nil, []string{config.EnvPrefix + "CONFIG=" + path})
	if err != nil {
		return cfg, err
	}
	// Where the state lives is where we found it, whatever the file says.
	saved.StateDir = cfg.StateDir
	return saved, nil
}

// Plan builds the cluster plan of cfg. With check (up), it runs the
// doctor's checks for the binary paths and host facts, and failed checks
// are an error; without (down, status, logs), the plan only locates the
// cluster's state and binaries (doctor.Locate) and starts nothing.
func Plan(ctx context.Context, cfg config.Config, check bool) (*cluster.Plan, doctor.Report, error) {
	finder := bins.NewFinder(cfg.BinDir, cfg.BundleDir)
	if !check {
		imagesDir, _ := finder.ImagesDir()
		plan, err := cluster.NewPlan(cfg, doctor.Locate(finder, cfg.CNIDir), imagesDir)
		return plan, nil, err
	}
	report, facts, err := Check(ctx, cfg)
	if err != nil {
		return nil, report, err
	}
	imagesDir, err := finder.ImagesDir()
	if err != nil {
		return nil, report, err
	}
	plan, err := cluster.NewPlan(cfg, facts, imagesDir)
	return plan, report, err
}

// CheckedPlan is Plan with the doctor's checks, for up: a failed check's
// report is printed to the error stream, and the error returned.
func (e *Env) CheckedPlan(ctx context.Context, cfg config.Config) (*cluster.Plan, error) {
	plan, report, err := Plan(ctx, cfg, true)
	if err != nil && report != nil {
		report.Failures().Print(e.Streams.Err)
	}
	return plan, err
}

// Check runs the doctor's checks for cfg (see doctor.Check: which ones
// depends on who runs them). Failed checks are an error naming each.
func Check(ctx context.Context, cfg config.Config) (doctor.Report, doctor.Facts, error) {
	finder := bins.NewFinder(cfg.BinDir, cfg.BundleDir)
	report, facts := doctor.Check(ctx, finder, doctor.Options{CNIDir: cfg.CNIDir, CgroupParent: cfg.CgroupParent})
	if report.Failed() {
		var failed []string
		for _, f := range report.Failures() {
			failed = append(failed, f.Name+": "+f.Detail)
		}
		what := "a cluster"
		if facts.Mode == doctor.ModeRootless {
			what = "a rootless cluster"
		}
		return report, facts, fmt.Errorf("the host is not ready for %s (`kubernix doctor` shows how to fix it):\n  %s",
			what, strings.Join(failed, "\n  "))
	}
	return report, facts, nil
}

// BinDir is the directory of the bundled kubectl and crictl, "" if not found.
func BinDir(cfg config.Config) string {
	p, err := bins.NewFinder(cfg.BinDir, cfg.BundleDir).Find("kubectl")
	if err != nil {
		return ""
	}
	return filepath.Dir(p)
}

// CompleteNodeIndex completes a --node flag with the selected cluster's
// node indices, 0..nodes-1, each described by its node name; nothing when
// the cluster is not found.
func (e *Env) CompleteNodeIndex(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := e.SavedConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for i, name := range cfg.NodeNames() {
		out = append(out, cobra.CompletionWithDesc(strconv.Itoa(i), name))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
