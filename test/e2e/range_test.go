package e2e

import (
	"context"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/config"
)

// movedNotice is up's notice when it moved a new cluster off a taken
// default range (preflight.movedRange): its groups are what held the
// default and the range chosen.
var movedNotice = regexp.MustCompile(`--cidr 10\.10\.0\.0/16 is in use by (.*); using --cidr (\S+)`)

// TestDefaultRangeTaken: a second cluster needs no range of its own by
// hand (issue #28, item 5). Cluster a and then cluster b come up without
// --cidr: b is not refused but moved to a free range (it and a on the
// default would overlap), which up says, naming a; b runs there, keeps
// that range in its next up even once a is deleted, and `config view`
// shows it set. An explicit range beside a cluster that holds it is not
// moved but refused, as before.
//
// Isolation as TestInventory's (privateNS): the clusters recorded in
// the state root are this test's alone. A cluster of someone else that
// runs on the default range moves a too; the test then checks that b's
// range overlaps neither.
func TestDefaultRangeTaken(t *testing.T) {
	// The ranges up gives them on a host where nothing else holds the
	// default, claimed for the test (claims): no other test's overlaps.
	a := newEnv(t, "kxl-range-a", config.DefaultCIDR, leanAddons)
	b := newEnv(t, "kxl-range-b", "10.11.0.0/16", leanAddons)
	a.rangeChosen, b.rangeChosen = true, true
	a.parallel()
	b.parallel()
	ns := privateNS(t)
	a.downInOnCleanup(ns)
	b.downInOnCleanup(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	def := netip.MustParsePrefix(config.DefaultCIDR)

	out := a.mustKubernixIn(ctx, ns, "up", "--detach")
	aRange := def
	if m := movedNotice.FindStringSubmatch(out); m != nil {
		t.Logf("the default range is taken on this host; a moved: %s", m[0])
		aRange = netip.MustParsePrefix(m[2])
	}
	a.cidr = aRange.String()
	checkNodeIn(ctx, t, a, aRange)

	out = b.mustKubernixIn(ctx, ns, "up", "--detach")
	m := movedNotice.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("up of b beside a gave no notice matching %q:\n%s", movedNotice, out)
	}
	if aRange == def && !strings.Contains(m[1], `cluster "kxl-range-a"`) {
		t.Errorf("b's notice does not name cluster a as the default's holder: %s", m[0])
	}
	moved, err := netip.ParsePrefix(m[2])
	if err != nil || moved.Overlaps(def) || moved.Overlaps(aRange) || moved.Bits() != 16 {
		t.Fatalf("b moved to %q: want a /16 outside %s and a's %s (%v)", m[2], def, aRange, err)
	}
	b.cidr = moved.String()
	checkNodeIn(ctx, t, b, moved)
	view := b.mustKubernixIn(ctx, ns, "config", "view")
	if !strings.Contains(view, "\ncidr = '"+moved.String()+"'") {
		t.Errorf("config view of b does not set cidr = '%s':\n%s", moved, view)
	}

	// An explicit range is never moved: a's, given to c, is refused,
	// naming what holds it.
	c := newEnv(t, "kxl-range-c", aRange.String(), leanAddons)
	out, code := runIn(ctx, ns, c.environ(), filepath.Join(c.binDir, "kubernix"), append([]string{"up", "--dry-run"}, c.args()...)...)
	if code != 2 || !strings.Contains(out, "(inside --cidr "+aRange.String()+") overlaps") || strings.Contains(out, "using --cidr") {
		t.Errorf("up --dry-run --cidr %s beside a: exit %d, want 2 naming the overlap and moving nothing:\n%s", aRange, code, out)
	}

	b.mustKubernixIn(ctx, ns, "down")
	a.mustKubernixIn(ctx, ns, "delete")
	out = b.mustKubernixIn(ctx, ns, "up", "--detach")
	if strings.Contains(out, "using --cidr") {
		t.Errorf("b's second up moved it again:\n%s", out)
	}
	checkNodeIn(ctx, t, b, moved)
	b.mustKubernixIn(ctx, ns, "delete")
	for _, e := range []*env{a, b} {
		if left := e.leftovers([]string{e.name + "-node-0"}, false); len(left) > 0 {
			t.Errorf("%s left after delete:\n%s", e.name, strings.Join(left, "\n"))
		}
	}
}

// checkNodeIn checks that every node of e's cluster has its InternalIP in
// p.
func checkNodeIn(ctx context.Context, t *testing.T, e *env, p netip.Prefix) {
	t.Helper()
	out := e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={.items[*].status.addresses[?(@.type=="InternalIP")].address}`)
	ips := strings.Fields(out)
	if len(ips) == 0 {
		t.Fatalf("%s: no node InternalIP", e.name)
	}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err != nil || !p.Contains(a) {
			t.Errorf("%s: node InternalIP %s is not in %s", e.name, ip, p)
		}
	}
}
