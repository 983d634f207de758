package netpol

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/knftables"
)

// TestAgentFollowsTheAPI runs the agent on a fake API and a fake
// nftables: a policy created after the start isolates the node's pod, a
// pod added later on the node is isolated too, and deleting the policy
// lifts both, each within a few seconds.
func TestAgentFollowsTheAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := fake.NewClientset(ns("x"), testPod("x", "a", "n0", "10.1.0.10"), testPod("x", "b", "n1", "10.1.1.10"))
	nft := knftables.NewFake(knftables.InetFamily, "kubernix-netpol")
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), client, nft,
			Options{Node: "n0", Table: "kubernix-netpol", Healthz: netip.MustParseAddrPort("127.0.0.1:0")})
	}()
	isolated := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		var got []string
		for time.Now().Before(deadline) {
			got = nil
			if elems, err := nft.ListElements(ctx, "set", "ingress-isolated-v4"); err == nil {
				for _, e := range elems {
					got = append(got, e.Key...)
				}
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("ingress-isolated-v4 = %q, want %q", got, want)
	}
	isolated()
	deny := policy("x", "deny", networkingv1.NetworkPolicySpec{PolicyTypes: ingress})
	if _, err := client.NetworkingV1().NetworkPolicies("x").Create(ctx, deny, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	isolated("10.1.0.10") // b runs on n1: another node's table isolates it
	if _, err := client.CoreV1().Pods("x").Create(ctx, testPod("x", "c", "n0", "10.1.0.11"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	isolated("10.1.0.10/31") // both, as one interval
	if err := client.NetworkingV1().NetworkPolicies("x").Delete(ctx, "deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	isolated()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after its context ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("run did not return after its context ended")
	}
}

// countingNFT counts the transactions an agent compiles (NewTransaction)
// and those it runs.
type countingNFT struct {
	knftables.Interface
	compiled, ran atomic.Int32
}

func (c *countingNFT) NewTransaction() *knftables.Transaction {
	c.compiled.Add(1)
	return c.Interface.NewTransaction()
}

func (c *countingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	c.ran.Add(1)
	return c.Interface.Run(ctx, tx)
}

// TestAgentSkipsUnchangedTable: a pod update that changes nothing the
// table holds (here a condition of its status) is compiled, but nft does
// not run again; a change of the table (a policy) runs it.
func TestAgentSkipsUnchangedTable(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a := testPod("x", "a", "n0", "10.1.0.10")
	client := fake.NewClientset(ns("x"), a, policy("x", "deny", networkingv1.NetworkPolicySpec{PolicyTypes: ingress}))
	nft := &countingNFT{Interface: knftables.NewFake(knftables.InetFamily, "kubernix-netpol")}
	go func() {
		_ = run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), client, nft,
			Options{Node: "n0", Table: "kubernix-netpol", Healthz: netip.MustParseAddrPort("127.0.0.1:0")})
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s (compiled %d, ran %d)", what, nft.compiled.Load(), nft.ran.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the first apply", func() bool { return nft.ran.Load() == 1 })
	compiled := nft.compiled.Load()

	a.Status.Conditions = append(a.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	if _, err := client.CoreV1().Pods("x").UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("a compile after the pod's update", func() bool { return nft.compiled.Load() > compiled })
	if n := nft.ran.Load(); n != 1 {
		t.Errorf("nft ran %d times after an update that changes nothing in the table, want 1 (the first apply)", n)
	}

	if err := client.NetworkingV1().NetworkPolicies("x").Delete(ctx, "deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("an apply after the policy's deletion", func() bool { return nft.ran.Load() == 2 })
}
