// Package logs implements `kubernix logs`.
package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// NodeComponents are the components that run once per node.
var NodeComponents = []string{"containerd", "kubelet", "kube-proxy", "sandbox"}

// NewCommand returns `kubernix logs COMPONENT [--node N] [-f]`: the log of
// a control-plane component, or of a node component on node N (from 0).
func NewCommand(env *common.Env) *cobra.Command {
	var nodeIndex int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs COMPONENT",
		Short: "Print (or follow) a component's log",
		Long: `Print a component's log: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, supervisor, or per node (--node N, default 0) containerd,
kubelet, kube-proxy, sandbox.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			path, err := logPath(cfg, args[0], nodeIndex)
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
	cmd.Flags().IntVar(&nodeIndex, "node", 0, "node index, from 0, for node components")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is appended")
	return cmd
}

func logPath(cfg config.Config, component string, nodeIndex int) (string, error) {
	p := cfg.Paths()
	if component == "supervisor" {
		return p.Log("supervisor", "supervisor"), nil
	}
	scope := config.ControlPlaneScope
	for _, nc := range NodeComponents {
		if nc == component {
			if nodeIndex < 0 || nodeIndex >= cfg.Nodes {
				return "", fmt.Errorf("%w: --node %d: the cluster has nodes 0..%d", config.ErrInvalid, nodeIndex, cfg.Nodes-1)
			}
			scope = cfg.NodeName(nodeIndex)
		}
	}
	path := p.Log(scope, component)
	if _, err := os.Stat(path); err != nil {
		known, _ := filepath.Glob(filepath.Join(filepath.Dir(p.Log(config.ControlPlaneScope, "x")), "*.log"))
		var names []string
		for _, k := range known {
			names = append(names, strings.TrimSuffix(filepath.Base(k), ".log"))
		}
		names = append(names, NodeComponents...)
		sort.Strings(names)
		return "", fmt.Errorf("%w: no log for %q in scope %s (components: %s)", config.ErrInvalid, component, scope, strings.Join(names, ", "))
	}
	return path, nil
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
