package network

import (
	"context"
	"flag"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/kubernix/kubernix/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGuardGolden renders the guard of a cluster whose three CIDRs lie in
// its whole range, of one with a service CIDR outside it and of a
// dual-stack one with an IPv6 service CIDR outside its whole IPv6 range,
// twice each (a second Setup must converge to the same table), and
// compares the ruleset with testdata/guard-<case>.nft; -update rewrites
// them.
func TestGuardGolden(t *testing.T) {
	outside := examplePlan("other")
	outside.ServiceCIDR = mp("10.99.0.0/20")
	dual := dualPlan("dual")
	dual.ServiceCIDR6 = mp("fd99::/112")
	for name, p := range map[string]Plan{"inside": examplePlan("kubernix"), "outside": outside, "dual": dual} {
		t.Run(name, func(t *testing.T) {
			p = p.normalized()
			n := NamesFor(p.Cluster)
			fake := knftables.NewFake(guardFamily, n.GuardTable())
			for range 2 {
				tx := fake.NewTransaction()
				guardTransaction(tx, p, n)
				if err := fake.Run(context.Background(), tx); err != nil {
					t.Fatal(err)
				}
			}
			got := fake.Dump()
			golden.Check(t, filepath.Join("testdata", "guard-"+name+".nft"), []byte(got), *update)
		})
	}
}

// TestGuardLegacyTable: a guard table of family ip, as kubernix made it
// before IPv6, shows in Leftovers, and Setup (which makes the inet one)
// and Teardown remove it.
func TestGuardLegacyTable(t *testing.T) {
	needRoot(t, "nft")
	cluster := testCluster(t, "legacy")
	n := NamesFor(cluster)
	legacy := "nftables table ip " + n.GuardTable()
	addLegacy := func() {
		t.Helper()
		nft, err := knftables.New(legacyGuardFamily, n.GuardTable())
		if err != nil {
			t.Fatal(err)
		}
		tx := nft.NewTransaction()
		tx.Add(&knftables.Table{})
		if err := nft.Run(context.Background(), tx); err != nil {
			t.Fatalf("add %s: %v", legacy, err)
		}
	}

	addLegacy()
	wantLeftovers(t, cluster, legacy)
	if err := Setup(examplePlan(cluster)); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if left := wantLeftovers(t, cluster, "nftables table inet "+n.GuardTable()); slices.Contains(left, legacy) {
		t.Errorf("Leftovers after Setup %q still list %q", left, legacy)
	}
	addLegacy()
	if err := Teardown(cluster); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	wantClean(t, cluster)
}
