package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/images"
)

// Issue #23 item 8: a damaged record never strands a cluster. Each test
// appends one line of garbage to a cluster's <state>/kubernix.toml (the
// record of its run) and checks that kubernix still brings the whole
// cluster down: by asking its supervisor while it runs, from the run
// records after it was killed.

// damagedGarbage is the line appended to the record.
const damagedGarbage = "this line is not TOML\n"

// damage appends damagedGarbage to the cluster's kubernix.toml and
// returns the file's path. Before the cleanup's down, the record is put
// back as it was if the state dir is still there: a kubernix that fails
// the test must not strand the cluster on the test machine.
func (e *env) damage(t *testing.T) string {
	t.Helper()
	record := e.keepRecord(t)
	f, err := os.OpenFile(record, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(damagedGarbage); err != nil {
		t.Fatal(err)
	}
	return record
}

// keepRecord returns the path of the cluster's kubernix.toml and has the
// test's cleanup, before its down, write back what the file holds now, if
// the state dir is still there (see damage).
func (e *env) keepRecord(t *testing.T) string {
	t.Helper()
	record := filepath.Join(e.stateDir, "kubernix.toml")
	orig, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(e.stateDir); err == nil {
			_ = os.WriteFile(record, orig, 0o600)
		}
	})
	return record
}

// clusterProcesses lists the cluster's processes, PID -> start time
// (field 22 of /proc/<pid>/stat), found without kubernix: those whose
// command line mentions the state dir (components, shims) and those in
// the nodes' cgroups (/kubernix/<node>, the pods' processes). It fails the
// test unless the nodes' cgroups hold at least minInCgroups processes.
func (e *env) clusterProcesses(t *testing.T, nodes []string, minInCgroups int) map[int]string {
	t.Helper()
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && strings.Contains(string(cmdline), e.stateDir) {
			out[pid] = startTime(pid)
		}
	}
	inCgroups := 0
	for _, n := range nodes {
		roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubernix/" + n)
		for _, root := range roots {
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.Name() != "cgroup.procs" {
					return nil
				}
				b, _ := os.ReadFile(path)
				for _, field := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(field); err == nil {
						if _, seen := out[pid]; !seen {
							inCgroups++
						}
						out[pid] = startTime(pid)
					}
				}
				return nil
			})
		}
	}
	if inCgroups < minInCgroups {
		t.Fatalf("the nodes' cgroups hold %d processes besides the components, want at least %d (the pods'): %v", inCgroups, minInCgroups, out)
	}
	return out
}

// startTime is field 22 of /proc/<pid>/stat, "" if pid is gone or has
// exited (a zombie, not yet reaped by the process it was re-parented to).
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// checkGone fails the test for each process of procs (clusterProcesses)
// that still runs: the same PID with the same start time.
func checkGone(t *testing.T, procs map[int]string) {
	t.Helper()
	for pid, start := range procs {
		if start != "" && startTime(pid) == start {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("process %d still runs: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
}

// checkLeftNothing fails the test, after verb (down or delete), for what
// of e's cluster (nodes) is left on the host (env.leftovers) and for each
// of procs that still runs (checkGone).
func checkLeftNothing(t *testing.T, e *env, verb string, nodes []string, procs map[int]string) {
	t.Helper()
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Errorf("%s left behind:\n%s", verb, strings.Join(left, "\n"))
	}
	checkGone(t, procs)
}

// checkDownOutput checks that a down or delete of a damaged cluster
// exited 0 and named the damaged record.
func checkDownOutput(t *testing.T, verb, out string, code int, record string) {
	t.Helper()
	t.Logf("%s of the damaged cluster:\n%s", verb, out)
	if code != 0 {
		t.Errorf("%s of a cluster whose %s is damaged exited %d, want 0", verb, record, code)
	}
	if !strings.Contains(out, record) {
		t.Errorf("%s does not name the damaged record %s", verb, record)
	}
}

// TestDamagedRecordDown: `down` of a running 2-node cluster with a pod on
// each node, whose kubernix.toml got a line of garbage, brings it all
// down: the leak check finds nothing, no process of it runs, and the
// output names the damaged file. `status` says it is damaged.
func TestDamagedRecordDown(t *testing.T) {
	e := newEnv(t, "dmg-run", "10.231.0.0/16", "--nodes", "2", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()
	nodes := []string{"dmg-run-node-0", "dmg-run-node-1"}
	e.mustKubernix(ctx, "up", "--detach")
	for i, n := range nodes {
		e.runPod(ctx, fmt.Sprintf("app-%d", i), n, images.AgnhostRef())
	}
	record := e.damage(t)
	procs := e.clusterProcesses(t, nodes, 2)

	out, code := e.kubernix(ctx, "status")
	if code != 1 || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, record) {
		t.Errorf("status of the damaged cluster exited %d, want 1 saying it is DAMAGED and naming %s:\n%s", code, record, out)
	}

	out, code = e.kubernix(ctx, "down")
	checkDownOutput(t, "down", out, code, record)
	checkLeftNothing(t, e, "down", nodes, procs)
}

// TestDamagedRecordKilled: a 2-node cluster whose supervisor was SIGKILLed
// and whose kubernix.toml then got a line of garbage is listed as broken,
// with the damage as the reason, and `down` removes all of it from the
// run records.
func TestDamagedRecordKilled(t *testing.T) {
	e := newEnv(t, "dmg-kill", "10.232.0.0/16", "--nodes", "2", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()
	nodes := []string{"dmg-kill-node-0", "dmg-kill-node-1"}
	e.mustKubernix(ctx, "up", "--detach")
	for i, n := range nodes {
		e.runPod(ctx, fmt.Sprintf("app-%d", i), n, images.AgnhostRef())
	}
	e.killSupervisor(t)
	record := e.damage(t)
	procs := e.clusterProcesses(t, nodes, 2)

	c, ok := e.listed(ctx, t)
	if !ok {
		t.Errorf("list does not show the cluster in %s", e.stateDir)
	} else if c.State != "broken" || c.Name != e.name || len(c.Problems) == 0 || !strings.Contains(c.Problems[0], record) {
		t.Errorf("list shows %+v, want %s broken, its first problem naming the damaged %s", c, e.name, record)
	}

	out, code := e.kubernix(ctx, "down")
	checkDownOutput(t, "down", out, code, record)
	checkLeftNothing(t, e, "down", nodes, procs)
}

// TestDamagedRecordMissing: a killed cluster whose kubernix.toml is gone
// is found by down all the same (its supervisor's and components' run
// records remain), and down removes all of it.
func TestDamagedRecordMissing(t *testing.T) {
	e := newEnv(t, "dmg-miss", "10.233.0.0/16", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()
	nodes := []string{"dmg-miss-node-0"}
	e.mustKubernix(ctx, "up", "--detach")
	e.killSupervisor(t)
	record := e.keepRecord(t)
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	procs := e.clusterProcesses(t, nodes, 0)

	out, code := e.kubernix(ctx, "down")
	checkDownOutput(t, "down", out, code, record)
	checkLeftNothing(t, e, "down", nodes, procs)
}

// TestDamagedRecordDelete: `delete` of a running cluster whose
// kubernix.toml got a line of garbage brings it down and removes its
// state dir, its name claim and its kubeconfig context.
func TestDamagedRecordDelete(t *testing.T) {
	e := newEnv(t, "dmg-del", "10.234.0.0/16", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()
	nodes := []string{"dmg-del-node-0"}
	e.mustKubernix(ctx, "up", "--detach")
	e.runPod(ctx, "app", nodes[0], images.AgnhostRef())
	record := e.damage(t)
	procs := e.clusterProcesses(t, nodes, 1)

	out, code := e.kubernix(ctx, "delete")
	checkDownOutput(t, "delete", out, code, record)
	if _, err := os.Stat(e.stateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("delete left the state dir %s: %v", e.stateDir, err)
	}
	if _, err := os.Stat("/run/kubernix/names/" + e.name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("delete left the name claim: %v", err)
	}
	if kc, _ := os.ReadFile(e.kubeconfig); strings.Contains(string(kc), "kubernix-"+e.name) {
		t.Errorf("delete left the context kubernix-%s in %s", e.name, e.kubeconfig)
	}
	checkLeftNothing(t, e, "delete", nodes, procs)
}

// listedCluster is an element of `kubernix list -o json`.
type listedCluster struct {
	Name     string   `json:"name"`
	State    string   `json:"state"`
	StateDir string   `json:"stateDir"`
	Problems []string `json:"problems"`
}

// listed returns the cluster of e's state dir as `kubernix list -o json`
// shows it; false when it shows none. A list that exits non-zero for
// another user's cluster it cannot read still lists the others.
func (e *env) listed(ctx context.Context, t *testing.T) (listedCluster, bool) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), "list", "-o", "json")
	cmd.Env = e.environ()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var all []listedCluster
	if jerr := json.Unmarshal(out, &all); jerr != nil {
		t.Fatalf("list -o json: %v, %v:\n%s%s", err, jerr, out, stderr.String())
	}
	if err != nil {
		t.Logf("list -o json: %v: %s", err, stderr.String())
	}
	for _, c := range all {
		if c.StateDir == e.stateDir {
			return c, true
		}
	}
	return listedCluster{}, false
}
