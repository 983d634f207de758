package network

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Limits of the names NamesFor derives.
const (
	// MaxLinkName is the longest Linux interface name in bytes (IFNAMSIZ - 1).
	MaxLinkName = 15
	// MaxChainName is the longest iptables chain name in bytes
	// (XT_EXTENSION_MAXNAMELEN - 1).
	MaxChainName = 28
	// MaxNodeIndex is the largest node index whose host veth name fits
	// MaxLinkName: "kx" + 7 hex + "n" + at most 5 digits.
	MaxNodeIndex = 99999
)

// Names are the host-side interface and iptables chain names of one
// cluster. They derive from a hash of the cluster name alone, so they are
// stable across restarts, differ between clusters, and let Teardown find
// everything after a crash without any saved state.
type Names struct {
	// Cluster is the cluster name the names derive from.
	Cluster string
	// Hash is the first 8 hex digits (lower case) of the SHA-256 of Cluster.
	Hash string
	// Bridge is the cluster bridge, "kx-<hash>" (11 bytes).
	Bridge string
	// CNIBridge is the pod bridge of a process-executor node on the host,
	// "kc-<hash>" (11 bytes); the CNI bridge plugin creates it, Teardown
	// removes it.
	CNIBridge string
	// VethPrefix starts the name of every host veth of the cluster,
	// "kx<first 7 hex of hash>n"; HostVeth appends the node index.
	VethPrefix string
	// NATChain is the nat-table chain with the masquerade rules,
	// "KUBERNIX-<HASH>" (17 bytes), jumped to from POSTROUTING.
	NATChain string
	// ForwardChain is the filter-table chain accepting traffic in and out of
	// the cluster's bridges, "KUBERNIX-FWD-<HASH>" (21 bytes), jumped to
	// from FORWARD.
	ForwardChain string
	// Metric is the route metric (priority) of the cluster's unreachable
	// routes: Protocol's value in the top byte and 24 bits of the hash
	// below, so it is higher than any metric a real route of the same
	// prefix normally has, and it tells this cluster's unreachable routes
	// (which have no device) from another cluster's.
	Metric int
	// BridgeMAC is the fixed, locally administered MAC address of the
	// cluster bridge, so the bridge does not take over the address of
	// whichever port joined first.
	BridgeMAC net.HardwareAddr
}

// NamesFor derives the Names of cluster. It accepts any string; distinct
// names collide only if their SHA-256 hashes share 32 bits.
func NamesFor(cluster string) Names {
	sum := sha256.Sum256([]byte(cluster))
	h := hex.EncodeToString(sum[:4])
	return Names{
		Cluster:      cluster,
		Hash:         h,
		Bridge:       "kx-" + h,
		CNIBridge:    "kc-" + h,
		VethPrefix:   "kx" + h[:7] + "n",
		NATChain:     "KUBERNIX-" + strings.ToUpper(h),
		ForwardChain: "KUBERNIX-FWD-" + strings.ToUpper(h),
		Metric:       int(Protocol)<<24 | int(sum[0])<<16 | int(sum[1])<<8 | int(sum[2]),
		BridgeMAC:    net.HardwareAddr{0x02, byte(Protocol), sum[0], sum[1], sum[2], sum[3]},
	}
}

// HostVeth is the host end of node i's veth pair, "kx<7 hex>n<i>". It fits
// MaxLinkName for 0 <= i <= MaxNodeIndex; AttachNode rejects other i.
func (n Names) HostVeth(i int) string { return n.VethPrefix + strconv.Itoa(i) }

// isHostVeth reports whether link name is one of this cluster's host veths.
func (n Names) isHostVeth(name string) bool {
	rest, ok := strings.CutPrefix(name, n.VethPrefix)
	if !ok || rest == "" {
		return false
	}
	i, err := strconv.Atoi(rest)
	return err == nil && i >= 0 && strconv.Itoa(i) == rest
}

// owns reports whether the host link called name belongs to this cluster.
func (n Names) owns(name string) bool {
	return name == n.Bridge || name == n.CNIBridge || n.isHostVeth(name)
}

// GuardTable is the name of the cluster's nftables table (family inet) that
// drops traffic into the cluster from outside this machine:
// "kubernix-<8 hex>".
func (n Names) GuardTable() string { return "kubernix-" + n.Hash }

// NetpolTable is the name of the nftables table (family inet) of the
// NetworkPolicy agent (pkg/netpol) of a cluster whose node runs in the
// host's network namespace (process executor); in a node sandbox the
// agent's table is netpolagent.SandboxTable and goes with the sandbox.
func (n Names) NetpolTable() string { return "kubernix-netpol-" + n.Hash }

// comment is the iptables comment on the cluster's jump rules.
func (n Names) comment() string { return fmt.Sprintf("kubernix cluster %s", n.Cluster) }
