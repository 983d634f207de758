package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// inputCIDR is the range of this file's clusters and of the route it
// adds to the host.
const inputCIDR = "10.61.0.0/16"

// TestInputRefused runs the built kubernix with bad input (issue 11,
// item 8): each `up` exits 2 naming the flag, and leaves nothing behind on
// the host (no process, mount, link, chain, route or file of the cluster;
// the state dir untouched).
func TestInputRefused(t *testing.T) {
	e := newEnv(t, "inp-e2e-bad", inputCIDR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	toUsr := e.stateDir + "-to-usr"
	if err := os.Symlink("/usr", toUsr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(toUsr) })
	tests := []struct {
		name  string
		args  []string
		route string // a route the host has during the run
		want  string
	}{
		{"link-local CIDR", []string{"--cidr", "169.254.0.0/16"}, "", "--cidr 169.254.0.0/16: not a private range"},
		{"public service CIDR", []string{"--service-cidr", "8.8.8.0/24"}, "", "--service-cidr 8.8.8.0/24: not a private range"},
		{"state dir through a link to /usr", []string{"--state-dir", toUsr}, "", "--state-dir: /usr is a system directory"},
		{"colon in the state dir", []string{"--state-dir", e.stateDir + "/a:b"}, "", `contains ":"`},
		{"name too long for the socket paths", []string{"--name", strings.Repeat("n", 45)}, "", `--name "` + strings.Repeat("n", 45) + `" (45 bytes) makes socket path`},
		{"CIDR over a route of the host", nil, "10.61.64.0/24", `--cidr 10.61.0.0/16 overlaps route "unreachable 10.61.64.0/24 proto 4" on this host; choose a free range, e.g. --cidr`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var route *netlink.Route
			if tt.route != "" {
				_, dst, _ := net.ParseCIDR(tt.route)
				route = &netlink.Route{Dst: dst, Type: unix.RTN_UNREACHABLE, Protocol: unix.RTPROT_STATIC, Table: unix.RT_TABLE_MAIN}
				if err := netlink.RouteAdd(route); err != nil {
					t.Fatalf("add route unreachable %s: %v", tt.route, err)
				}
			}
			before := dirList(t, e.stateDir)
			out, code := e.kubernix(ctx, "up", append([]string{"--detach"}, tt.args...)...)
			if code == 0 { // wrongly accepted: take the cluster down again
				t.Cleanup(func() { e.kubernix(context.Background(), "down", selectorArgs(tt.args)...) })
			}
			if route != nil { // before the leftover check, which lists routes in the CIDR
				if err := netlink.RouteDel(route); err != nil {
					t.Errorf("delete route unreachable %s: %v", tt.route, err)
				}
			}
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Fatalf("up %s: exit %d, output:\n%s\nwant exit 2 mentioning %q", strings.Join(tt.args, " "), code, out, tt.want)
			}
			e.checkRefusedLeftNothing(t, before)
		})
	}
}

// dirList lists the names in dir.
func dirList(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestInputStateDirLink starts a cluster whose --state-dir is a symlink to
// the state dir of an older kubernix (a kubernix.toml, no marker): up
// resolves the link, records and uses the real path, marks the directory
// as kubernix's, and down through the link leaves nothing.
func TestInputStateDirLink(t *testing.T) {
	e := newEnv(t, "inp-e2e-link", inputCIDR, leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	old := "# written by an older kubernix\nname = 'inp-e2e-link'\nnodes = 1\n"
	if err := os.WriteFile(filepath.Join(e.stateDir, "kubernix.toml"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	link := e.stateDir + "-link"
	if err := os.Symlink(e.stateDir, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(link) })
	viaLink := *e
	viaLink.stateDir = link
	t.Cleanup(func() {
		if out, code := viaLink.kubernix(context.Background(), "down"); code != 0 {
			t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})

	t.Logf("up:\n%s", viaLink.mustKubernix(ctx, "up", "--detach"))
	if _, err := os.Stat(filepath.Join(e.stateDir, ".kubernix-state")); err != nil {
		t.Errorf("the older state dir was not marked as kubernix's: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(e.stateDir, "kubernix.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		StateDir string `toml:"state_dir"`
	}
	if err := toml.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	if saved.StateDir != e.stateDir {
		t.Errorf("recorded state_dir = %q, want the real path %q", saved.StateDir, e.stateDir)
	}
	if out, code := viaLink.kubernix(ctx, "status"); code != 0 {
		t.Errorf("status through the link: exit %d:\n%s", code, out)
	}
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node/inp-e2e-link-node-0", "--timeout=60s")

	t.Logf("down:\n%s", viaLink.mustKubernix(ctx, "down"))
	if left := e.leftovers([]string{"inp-e2e-link-node-0"}, true); len(left) > 0 {
		t.Fatalf("down through the link left:\n%s", strings.Join(left, "\n"))
	}
}

// selectorArgs are the --name and --state-dir flags (with their values)
// of up's args: those down takes to find the cluster they started.
func selectorArgs(args []string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--name" || args[i] == "--state-dir" {
			out = append(out, args[i], args[i+1])
			i++
		}
	}
	return out
}
