package network

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/kubernix/kubernix/internal/made"
)

// TestForwardPolicy sets and reads the FORWARD policy in a network
// namespace of its own (no filter table there at first): DROP makes the
// table, which is recorded as made, and ACCEPT reads back.
func TestForwardPolicy(t *testing.T) {
	needRoot(t, "nft")
	// The thread stays in the new namespace and exits with the test's
	// goroutine; iptables and nft run from it.
	runtime.LockOSThread()
	ns, err := netns.New()
	if err != nil {
		t.Fatalf("new network namespace: %v", err)
	}
	defer ns.Close()
	ipt, err := newIPTables()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := forwardPolicy(ipt); err != nil || got != PolicyAccept {
		t.Fatalf("policy without a filter table: %q, %v; want ACCEPT", got, err)
	}
	record := filepath.Join(t.TempDir(), "tables.json")
	for _, policy := range []string{PolicyDrop, PolicyAccept} {
		if err := setForwardPolicy(ipt, nftHostTable, record, policy); err != nil {
			t.Fatal(err)
		}
		if got, err := forwardPolicy(ipt); err != nil || got != policy {
			t.Errorf("after setting %s: policy %q, %v", policy, got, err)
		}
	}
	if got, err := made.Read(record); err != nil || !slices.Equal(got, []string{"filter"}) {
		t.Errorf("recorded tables %q, %v; want [filter], made by the first policy change", got, err)
	}
}
