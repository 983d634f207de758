package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Runner runs external commands with a fixed environment and writes a
// transcript (command line, output, exit status, time) of each to Log.
type Runner struct {
	// Env is the complete environment of every command.
	Env []string
	// Log receives the transcript; may be nil.
	Log io.Writer
}

// CmdError is a failed command: its argv, its error (exit status, timeout)
// and the tail of its combined output.
type CmdError struct {
	Argv   []string
	Err    error
	Output string
}

func (e *CmdError) Error() string {
	return fmt.Sprintf("%s: %v\n%s", strings.Join(e.Argv, " "), e.Err, e.Output)
}

func (e *CmdError) Unwrap() error { return e.Err }

// Run runs argv, bounded by ctx, and returns its stdout and how long it ran
// (start to exit). A failure is a *CmdError carrying the last lines of its
// output.
func (r Runner) Run(ctx context.Context, argv ...string) ([]byte, time.Duration, error) {
	return r.RunWatched(ctx, nil, argv...)
}

// RunWatched is Run, also calling watch (unless nil) in a goroutine once
// the command started, with its PID and a channel closed when it exited;
// RunWatched returns only after watch did.
func (r Runner) RunWatched(ctx context.Context, watch func(pid int, exited <-chan struct{}), argv ...string) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = r.Env
	cmd.WaitDelay = 10 * time.Second
	var stdout bytes.Buffer
	combined := &lockedBuffer{}
	cmd.Stdout = io.MultiWriter(&stdout, combined)
	cmd.Stderr = combined
	begin := time.Now()
	err := cmd.Start()
	if err == nil {
		exited := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			if watch != nil {
				watch(cmd.Process.Pid, exited)
			}
		}()
		err = cmd.Wait()
		close(exited)
		<-watched
	}
	elapsed := time.Since(begin)
	if r.Log != nil {
		status := "ok"
		if err != nil {
			status = err.Error()
		}
		fmt.Fprintf(r.Log, "$ %s\n%s[%s after %s]\n\n", strings.Join(argv, " "), combined.String(), status, elapsed.Round(time.Millisecond))
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return stdout.Bytes(), elapsed, &CmdError{Argv: argv, Err: err, Output: tailLines(combined.String(), 15)}
	}
	return stdout.Bytes(), elapsed, nil
}

// lockedBuffer is a buffer that stdout and stderr copiers may write
// concurrently. (A plain bytes.Buffer as Stderr is filled by ReadFrom,
// which would drop what stdout writes meanwhile.)
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Kubernix drives the kubernix and kubectl binaries against one cluster.
type Kubernix struct {
	// BinDir holds kubernix, kubectl and the upstream binaries.
	BinDir string
	Layout Layout
	CIDR   string
	// Timeout bounds each command; up also gets it as --timeout.
	Timeout time.Duration
	// Addons, if set, is every up's --addons.
	Addons string
	// NetworkPolicyOff makes every up run with --network-policy=false.
	NetworkPolicyOff bool
	// IPFamily, if set, is every up's --ip-family.
	IPFamily string
	// Flags are more flags of every up (a -with-flags run's).
	Flags []string
	Run   Runner
}

func (k Kubernix) bin(name string) string { return filepath.Join(k.BinDir, name) }

// cluster are the flags selecting the cluster, which every verb that
// acts on one takes.
func (k Kubernix) cluster() []string {
	return []string{"--name", k.Layout.Name, "--state-dir", k.Layout.StateDir}
}

func (k Kubernix) run(ctx context.Context, args ...string) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, k.Timeout)
	defer cancel()
	return k.Run.Run(ctx, append([]string{k.bin("kubernix")}, args...)...)
}

// Up runs `kubernix up --detach` for a cluster of nodes and returns its
// wall time: it exits once every node is Ready and CoreDNS Available. It
// also returns the children `up` had (polled every 200 ms while it ran):
// among them the detached supervisor, which outlives a failed, timed-out or
// interrupted `up` and may still be booting the cluster; see stopProcesses.
func (k Kubernix) Up(ctx context.Context, nodes int) (time.Duration, []procID, error) {
	args := append([]string{"up", "--detach", "--timeout", k.Timeout.String(),
		"--cidr", k.CIDR, "--nodes", strconv.Itoa(nodes), "--bin-dir", k.BinDir}, k.cluster()...)
	if k.Addons != "" {
		args = append(args, "--addons", k.Addons)
	}
	if k.NetworkPolicyOff {
		args = append(args, "--network-policy=false")
	}
	if k.IPFamily != "" {
		args = append(args, "--ip-family", k.IPFamily)
	}
	args = append(args, k.Flags...)
	seen := map[procID]bool{}
	watch := func(pid int, exited <-chan struct{}) {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, c := range childrenOf(pid) {
				seen[c] = true
			}
			select {
			case <-exited:
				return
			case <-tick.C:
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, k.Timeout)
	defer cancel()
	_, d, err := k.Run.RunWatched(ctx, watch, append([]string{k.bin("kubernix")}, args...)...)
	children := slices.SortedFunc(maps.Keys(seen), func(a, b procID) int { return a.PID - b.PID })
	return d, children, err
}

// Down runs `kubernix down` and returns its wall time.
func (k Kubernix) Down(ctx context.Context) (time.Duration, error) {
	_, d, err := k.run(ctx, append([]string{"down"}, k.cluster()...)...)
	return d, err
}

// Version runs `kubernix version`.
func (k Kubernix) Version(ctx context.Context) (Versions, error) {
	out, _, err := k.run(ctx, "version")
	if err != nil {
		return Versions{}, err
	}
	return parseVersion(string(out)), nil
}

// parseVersion reads `kubernix version`: kubernix's line, then one indented
// "KEY VALUE" line per pinned upstream version.
func parseVersion(out string) Versions {
	v := Versions{Upstream: map[string]string{}}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if i == 0 {
			v.Kubernix = strings.TrimSpace(line)
			continue
		}
		if f := strings.Fields(line); len(f) == 2 {
			v.Upstream[f[0]] = f[1]
		}
	}
	return v
}

// ImageLoadAvailable reports whether this kubernix has `image load`: its
// help exits 0 and documents that verb (an `image` command without `load`
// would print its own help and exit 0 too).
func (k Kubernix) ImageLoadAvailable(ctx context.Context) bool {
	out, _, err := k.run(ctx, "image", "load", "--help")
	return err == nil && strings.Contains(string(out), "image load")
}

// ImageLoad runs `kubernix image load file` (into every node) and returns
// its wall time.
func (k Kubernix) ImageLoad(ctx context.Context, file string) (time.Duration, error) {
	_, d, err := k.run(ctx, append(append([]string{"image", "load"}, k.cluster()...), file)...)
	return d, err
}

// CheckReady asks the bundled kubectl, with the cluster's admin kubeconfig,
// whether the expected nodes are all Ready. A Ready node whose last
// heartbeat is older than since is listed as stale: its condition may be a
// previous run's, kept in etcd.
func (k Kubernix) CheckReady(ctx context.Context, nodes int, since time.Time) Ready {
	r := Ready{Expected: nodes}
	kubeconfig := k.Layout.AdminKubeconfig()
	ctx, cancel := context.WithTimeout(ctx, k.Timeout)
	defer cancel()
	out, _, err := k.Run.Run(ctx, k.bin("kubectl"), "--kubeconfig", kubeconfig, "get", "nodes", "-o", "json")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var list corev1.NodeList
	if err := json.Unmarshal(out, &list); err != nil {
		r.Error = fmt.Sprintf("parse kubectl get nodes: %v", err)
		return r
	}
	return readiness(list, k.Layout, nodes, since)
}

// readiness evaluates a NodeList against the expected nodes.
func readiness(list corev1.NodeList, l Layout, nodes int, since time.Time) Ready {
	r := Ready{Expected: nodes, Total: len(list.Items)}
	byName := map[string]corev1.Node{}
	for _, n := range list.Items {
		byName[n.Name] = n
	}
	since = since.Truncate(time.Second) // heartbeats have second precision
	for i := range nodes {
		name := l.NodeName(i)
		n, ok := byName[name]
		if !ok {
			r.NotReady = append(r.NotReady, name+" (missing)")
			continue
		}
		ready, why := false, "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type != corev1.NodeReady {
				continue
			}
			why = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			if c.Status == corev1.ConditionTrue {
				ready = true
				if c.LastHeartbeatTime.Time.Before(since) {
					r.Stale = append(r.Stale, name)
				}
			}
		}
		if ready {
			r.Ready++
		} else {
			r.NotReady = append(r.NotReady, fmt.Sprintf("%s (%s)", name, why))
		}
	}
	return r
}

// Problem describes what is wrong with r, or "" when every expected node is
// Ready.
func (r Ready) Problem() string {
	switch {
	case r.Error != "":
		return "kubectl get nodes: " + r.Error
	case r.Ready < r.Expected || len(r.NotReady) > 0:
		return fmt.Sprintf("%d/%d nodes Ready after up returned; not Ready: %s", r.Ready, r.Expected, strings.Join(r.NotReady, ", "))
	}
	return ""
}
