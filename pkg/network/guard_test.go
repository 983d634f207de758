package network

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/kubernix/kubernix/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGuardGolden renders the guard of a cluster whose three CIDRs lie in
// its whole range and of one with a service CIDR outside it, twice each
// (a second Setup must converge to the same table), and compares the
// ruleset with testdata/guard-<case>.nft; -update rewrites them.
func TestGuardGolden(t *testing.T) {
	outside := examplePlan("other")
	outside.ServiceCIDR = mp("10.99.0.0/20")
	for name, p := range map[string]Plan{"inside": examplePlan("kubernix"), "outside": outside} {
		t.Run(name, func(t *testing.T) {
			p = p.normalized()
			n := NamesFor(p.Cluster)
			fake := knftables.NewFake(knftables.IPv4Family, n.GuardTable())
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
