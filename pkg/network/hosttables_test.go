package network

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/kubernix/kubernix/internal/made"
)

// fakeTables is a host of fake nftables tables of family ip, by name.
type fakeTables map[string]*knftables.Fake

func (f fakeTables) open(name string) (knftables.Interface, error) {
	if f[name] == nil {
		f[name] = knftables.NewFake(knftables.IPv4Family, name)
	}
	return f[name], nil
}

// iptables adds a rule to the base chain hook of table, as iptables-nft
// does: making the table and the chain when missing.
func (f fakeTables) iptables(t *testing.T, table, hook string) *knftables.Rule {
	t.Helper()
	nft, _ := f.open(table)
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Add(&knftables.Chain{Name: hook})
	tx.Add(&knftables.Rule{Chain: hook, Rule: "counter"})
	if err := nft.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	rules, err := nft.ListRules(context.Background(), hook)
	if err != nil || len(rules) == 0 {
		t.Fatal(rules, err)
	}
	return rules[len(rules)-1]
}

// deleteRule removes rule from table, as iptables -D does.
func (f fakeTables) deleteRule(t *testing.T, table string, rule *knftables.Rule) {
	t.Helper()
	tx := f[table].NewTransaction()
	tx.Delete(&knftables.Rule{Chain: rule.Chain, Handle: rule.Handle})
	if err := f[table].Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
}

func (f fakeTables) exists(table string) bool {
	return f[table] != nil && f[table].Table != nil
}

// TestMadeTables: the iptables tables a cluster's rules made are recorded
// and removed once empty, and only those: a table that existed before
// stays, empty or not, and a made table that still holds another
// cluster's rule stays recorded until the down that empties it.
func TestMadeTables(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "host", "iptables-tables.json")
	host := fakeTables{}
	theirs := host.iptables(t, "filter", "FORWARD") // the host had a filter table
	host.deleteRule(t, "filter", theirs)            // now empty, and not ours

	missing := missingTables(ctx, host.open, []string{"nat", "filter"})
	if !slices.Equal(missing, []string{"nat"}) {
		t.Fatalf("missing = %q, want [nat]", missing)
	}
	a := host.iptables(t, "nat", "POSTROUTING") // cluster A's rules
	host.iptables(t, "filter", "FORWARD")
	if err := recordMadeTables(ctx, host.open, file, missing); err != nil {
		t.Fatal(err)
	}
	if got, _ := made.Read(file); !slices.Equal(got, []string{"nat"}) {
		t.Fatalf("recorded %q, want [nat]", got)
	}
	b := host.iptables(t, "nat", "POSTROUTING") // cluster B's rule, B up while A runs

	host.deleteRule(t, "nat", a) // A down: B's rule is left
	if err := removeMadeTables(ctx, host.open, file); err != nil {
		t.Fatal(err)
	}
	if !host.exists("nat") {
		t.Fatal("nat deleted while cluster B's rule is in it")
	}
	host.deleteRule(t, "nat", b) // B down
	for _, r := range host["filter"].Table.Chains["FORWARD"].Rules {
		host.deleteRule(t, "filter", r)
	}
	if err := removeMadeTables(ctx, host.open, file); err != nil {
		t.Fatal(err)
	}
	if host.exists("nat") || !host.exists("filter") {
		t.Errorf("after the last down: nat exists %v (want false: kubernix made it), filter %v (want true: the host's)", host.exists("nat"), host.exists("filter"))
	}
	if got, err := made.Read(file); err != nil || len(got) != 0 {
		t.Errorf("record %q, %v; want it gone", got, err)
	}
}

// deletedMeanwhile is a table that another process deletes between a
// listing of its chains and of their rules, as another cluster's down
// (or the host's admin) may.
type deletedMeanwhile struct {
	*knftables.Fake
}

func (d deletedMeanwhile) ListRules(ctx context.Context, chain string) ([]*knftables.Rule, error) {
	tx := d.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := d.Run(ctx, tx); err != nil {
		return nil, err
	}
	return d.Fake.ListRules(ctx, chain)
}

// TestMadeTableDeletedMeanwhile: a recorded table that goes while down
// reads it is gone, not an error, and is forgotten.
func TestMadeTableDeletedMeanwhile(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "host", "iptables-tables.json")
	host := fakeTables{}
	rule := host.iptables(t, "nat", "POSTROUTING")
	host.deleteRule(t, "nat", rule)
	if err := made.Write(file, []string{"nat"}); err != nil {
		t.Fatal(err)
	}
	open := func(name string) (knftables.Interface, error) {
		nft, _ := host.open(name)
		return deletedMeanwhile{nft.(*knftables.Fake)}, nil
	}
	if err := removeMadeTables(ctx, open, file); err != nil {
		t.Fatalf("removeMadeTables with the table deleted meanwhile: %v", err)
	}
	if got, _ := made.Read(file); len(got) != 0 {
		t.Fatalf("still recorded: %q", got)
	}
}

// TestMadeTableWithObjectsKept: a recorded table whose chains are empty
// but which holds another object (someone's set or named counter) is not
// empty: it stays, and stays recorded.
func TestMadeTableWithObjectsKept(t *testing.T) {
	for _, obj := range []knftables.Object{
		&knftables.Set{Name: "theirs", Type: "ipv4_addr"},
		&knftables.Counter{Name: "theirs"},
	} {
		ctx := context.Background()
		file := filepath.Join(t.TempDir(), "host", "iptables-tables.json")
		host := fakeTables{}
		host.deleteRule(t, "nat", host.iptables(t, "nat", "POSTROUTING"))
		tx := host["nat"].NewTransaction()
		tx.Add(obj)
		if err := host["nat"].Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if err := made.Write(file, []string{"nat"}); err != nil {
			t.Fatal(err)
		}
		if err := removeMadeTables(ctx, host.open, file); err != nil {
			t.Fatal(err)
		}
		if got, _ := made.Read(file); !host.exists("nat") || !slices.Equal(got, []string{"nat"}) {
			t.Errorf("with a %T: table exists %v, recorded %q; want it kept and recorded", obj, host.exists("nat"), got)
		}
	}
}

// TestTableContentNft: tableContent on real nftables tables (an ip table
// of this test's own): gone, empty with an empty base chain, not empty
// with a rule, and not empty with a set and no rule.
func TestTableContentNft(t *testing.T) {
	needRoot(t, "nft")
	ctx := context.Background()
	name := fmt.Sprintf("kxtest-%d", os.Getpid())
	nft := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("nft", args...).CombinedOutput(); err != nil {
			t.Fatalf("nft %q: %v: %s", args, err, out)
		}
	}
	check := func(what string, wantEmpty, wantExists bool) {
		t.Helper()
		empty, exists, err := tableContent(ctx, nftHostTable, name)
		if err != nil || empty != wantEmpty || exists != wantExists {
			t.Errorf("%s: empty %v, exists %v, err %v; want %v, %v, nil", what, empty, exists, err, wantEmpty, wantExists)
		}
	}
	check("no table", false, false)
	nft("add", "table", "ip", name)
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "ip", name).Run() })
	nft("add", "chain", "ip", name, "POSTROUTING", "{ type nat hook postrouting priority srcnat; }")
	check("an empty base chain", true, true)
	nft("add", "rule", "ip", name, "POSTROUTING", "counter")
	check("a rule", false, true)
	nft("flush", "chain", "ip", name, "POSTROUTING")
	nft("add", "set", "ip", name, "theirs", "{ type ipv4_addr; }")
	check("a set, no rule", false, true)
}
