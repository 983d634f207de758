package network

import (
	"context"
	"fmt"

	"github.com/coreos/go-iptables/iptables"
)

// The policy of the host's iptables filter FORWARD chain decides what
// the host forwards that no rule accepts. The cluster's chain
// (Names.ForwardChain) accepts the cluster's own traffic, so the cluster
// works under either policy; the cluster package sets DROP while clusters
// run when kubernix is the one that turned forwarding on, as Docker does,
// and records it in its host ledger.

// Forward policies of the filter FORWARD chain.
const (
	PolicyAccept = "ACCEPT"
	PolicyDrop   = "DROP"
)

// ForwardPolicy returns the policy of the host's iptables filter FORWARD
// chain, PolicyAccept or PolicyDrop (as `iptables -S FORWARD` prints it;
// ACCEPT when no filter table exists). It needs root; errors name the
// chain.
func ForwardPolicy() (string, error) {
	ipt, err := newIPTables()
	if err != nil {
		return "", err
	}
	return forwardPolicy(ipt)
}

// SetForwardPolicy sets the policy of the host's iptables filter FORWARD
// chain to policy (PolicyAccept or PolicyDrop). With iptables-nft, a host
// without a filter table gets one: it is recorded as kubernix's (see
// hosttables.go), so the Teardown that leaves it empty removes it. It
// needs root; errors name the chain and the policy.
func SetForwardPolicy(policy string) error {
	ipt, err := newIPTables()
	if err != nil {
		return err
	}
	return setForwardPolicy(ipt, nftHostTable, hostTablesFile(), policy)
}

// forwardPolicy is ForwardPolicy with the runner ipt.
func forwardPolicy(ipt *iptables.IPTables) (string, error) {
	lines, err := ipt.List("filter", "FORWARD")
	if err != nil {
		return "", fmt.Errorf("list filter/FORWARD: %w", err)
	}
	for _, line := range lines {
		if f := splitRule(line); len(f) == 3 && f[0] == "-P" && f[1] == "FORWARD" {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("filter/FORWARD: no policy in %q", lines)
}

// setForwardPolicy is SetForwardPolicy with the runner ipt, recording a
// table it made in file through open.
func setForwardPolicy(ipt *iptables.IPTables, open hostTable, file, policy string) error {
	return withHostTables(file, func() error {
		missing := missingTables(context.Background(), open, []string{"filter"})
		if err := ipt.ChangePolicy("filter", "FORWARD", policy); err != nil {
			return fmt.Errorf("set the filter/FORWARD policy to %s: %w", policy, err)
		}
		if err := recordMadeTables(context.Background(), open, file, missing); err != nil {
			return fmt.Errorf("record the iptables table the filter/FORWARD policy made: %w", err)
		}
		return nil
	})
}
