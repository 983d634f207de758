package components

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/cri"
	"github.com/kubernix/kubernix/pkg/process"
)

// Hooks are what a component does that its Description cannot hold as
// data, because it needs the live cluster (an API client, the node's
// sandbox PID, the images folder). Every field may be nil.
type Hooks struct {
	// Wrap returns the argv prefix that runs the process in its node's
	// sandbox, at every start (InSandbox).
	Wrap func() []string
	// Prepare runs before every start, after Files and Dirs are written.
	Prepare func(ctx context.Context) error
	// Ready is checked after the description's probe passes (or alone,
	// for a probe the supervisor supplies): readiness needs both.
	Ready func(ctx context.Context) error
	// AfterReady, AfterRestart and BeforeStop: see Proc. BeforeStop runs
	// after the DrainCRI.
	AfterReady, AfterRestart, BeforeStop func(ctx context.Context) error
	// GiveUpAfter and OnGiveUp: see Proc.
	GiveUpAfter int
	OnGiveUp    func(err error)
	// Task is the work of a KindTask component; required for one.
	Task func(ctx context.Context) error
}

// New returns the registry component that runs d with hooks h. Errors
// name d's ID: a task without Task, a probe whose CA or client
// certificate cannot be read.
func New(d Description, h Hooks, log *slog.Logger) (boot.Component, error) {
	c, err := build(d, h, log)
	if err != nil {
		return nil, fmt.Errorf("component %s: %w", d.ID(), err)
	}
	return boot.WithNeeds(c, d.Needs...), nil
}

func build(d Description, h Hooks, log *slog.Logger) (boot.Component, error) {
	switch d.Kind {
	case KindTask:
		if h.Task == nil {
			return nil, errors.New("a task with nothing to do")
		}
		return &task{name: d.ID(), phase: d.Phase, run: h.Task}, nil
	case KindGate, KindProcess:
	default:
		return nil, fmt.Errorf("unknown kind %q", d.Kind)
	}
	probe, err := buildProbe(d.Probe, h.Ready)
	if err != nil {
		return nil, err
	}
	if d.Kind == KindGate {
		return &Gate{ComponentName: d.ID(), ComponentPhase: d.Phase, Probe: probe}, nil
	}
	cmd := d.Command
	cmd.Env = d.Environ()
	p := &Proc{
		ComponentName: d.ID(), ComponentPhase: d.Phase, Log: log, Command: cmd, Probe: probe,
		Prepare:    prepare(d, h.Prepare),
		AfterReady: h.AfterReady, AfterRestart: h.AfterRestart,
		BeforeStop:  beforeStop(d.DrainCRI, h.BeforeStop),
		GiveUpAfter: h.GiveUpAfter, OnGiveUp: h.OnGiveUp,
	}
	if d.InSandbox {
		p.Wrap = h.Wrap
	}
	if d.Liveness != nil {
		if p.Liveness, err = buildProbe(*d.Liveness, nil); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// buildProbe turns p into a check, followed by extra if set.
func buildProbe(p Probe, extra func(context.Context) error) (process.Probe, error) {
	var first process.Probe
	switch {
	case p.HTTPGet != "" && p.CAFile != "":
		tlsConfig, err := ClientTLS(p.CAFile, p.Client)
		if err != nil {
			return nil, err
		}
		first = process.HTTPGet(p.HTTPGet, tlsConfig)
	case p.HTTPGet != "":
		first = process.HTTPGet(p.HTTPGet, nil)
	case p.CRI != "":
		first = func(ctx context.Context) error { return cri.Ping(ctx, p.CRI) }
	}
	switch {
	case first == nil && extra == nil:
		return nil, errors.New("no readiness probe")
	case first == nil:
		return extra, nil
	case extra == nil:
		return first, nil
	}
	return func(ctx context.Context) error {
		if err := first(ctx); err != nil {
			return err
		}
		return extra(ctx)
	}, nil
}

// prepare writes d's files and dirs, then runs then.
func prepare(d Description, then func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := WriteFiles(d); err != nil {
			return err
		}
		if then != nil {
			return then(ctx)
		}
		return nil
	}
}

// WriteFiles creates d's Dirs and writes its Files atomically, each with
// its FileMode, creating their directories: the one place every
// component's rendered files are written. What it creates is its owner's
// alone (config.StateDirMode); a link already pointing at its target is
// kept.
func WriteFiles(d Description) error {
	for _, dir := range d.Dirs {
		if err := os.MkdirAll(dir, config.StateDirMode); err != nil {
			return err
		}
	}
	for _, f := range d.Files {
		if err := os.MkdirAll(filepath.Dir(f.Path), config.StateDirMode); err != nil {
			return err
		}
		if f.Link != "" {
			if err := symlink(f.Link, f.Path); err != nil {
				return err
			}
			continue
		}
		if err := atomicfile.Write(f.Path, f.Content, f.FileMode()); err != nil {
			return err
		}
	}
	return nil
}

// symlink makes path a symbolic link to target, replacing what is there.
func symlink(target, path string) error {
	if cur, err := os.Readlink(path); err == nil && cur == target {
		return nil
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// DrainTimeout bounds the removal of a node's pods through CRI before its
// containerd stops.
const DrainTimeout = 30 * time.Second

func beforeStop(socket string, then func(context.Context) error) func(context.Context) error {
	if socket == "" {
		return then
	}
	return func(ctx context.Context) error {
		err := Drain(ctx, socket)
		if then != nil {
			err = errors.Join(err, then(ctx))
		}
		return err
	}
}

// Drain removes every pod and container through the CRI at socket,
// within DrainTimeout. A containerd that does not answer is an error
// naming the socket.
func Drain(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, DrainTimeout)
	defer cancel()
	client, err := cri.DialReady(ctx, socket)
	if err != nil {
		return err
	}
	defer client.Close()
	return client.RemoveAll(ctx)
}

// task is a KindTask component: ready once run returns nil.
type task struct {
	name  string
	phase boot.Phase
	run   func(ctx context.Context) error
}

func (t *task) Name() string      { return t.name }
func (t *task) Phase() boot.Phase { return t.phase }

func (t *task) Start(ctx context.Context) (boot.Stoppable, error) {
	if err := t.run(ctx); err != nil {
		return nil, err
	}
	return boot.StopFunc(func(context.Context) error { return nil }), nil
}
