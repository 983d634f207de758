// Package kubeproxy renders a node's KubeProxyConfiguration (nftables mode)
// and builds the kube-proxy command line.
//
// kube-proxy runs in nftables mode (GA since Kubernetes 1.33): each sync is
// one `nft -f` transaction in its own table, where iptables mode ran some
// forty iptables processes per sync and start. Its PATH holds nft alone
// (ToolDir): at start, nftables mode removes what an iptables- or
// IPVS-mode kube-proxy may have left, by running iptables, ip6tables and
// modprobe some forty times (about 0.5 s of CPU per node); a node's network
// namespace is new with its sandbox, and in the host's namespace (process
// executor) those rules would belong to someone else. Without the
// binaries, kube-proxy skips that cleanup (upstream's "best effort").
package kubeproxy

import (
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/release"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbase "k8s.io/component-base/config/v1alpha1"
	proxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "kube-proxy"

// Ports kube-proxy listens on, on its node IP.
const (
	HealthzPort = 10256
	MetricsPort = 10249
)

// Spec is what kube-proxy's config and command line are built from.
type Spec struct {
	// Release is the Kubernetes release Binary is built for: flags and
	// config fields that differ between releases are chosen from it.
	Release  release.Release
	Binary   string
	NodeName string
	// NodeIP is the node's IPv4 address: /healthz and /metrics listen
	// there.
	NodeIP netip.Addr
	// NodeIPs are the node's addresses as Kubernetes sees them, primary
	// IP family first: NodePorts answer on them, and the first decides
	// kube-proxy's primary family. Empty means [NodeIP].
	NodeIPs    []netip.Addr
	Kubeconfig string
	ConfigFile string
	// ClusterCIDRs are the pod ranges, one per IP family, primary first.
	ClusterCIDRs []netip.Prefix
	// CanLowerOOMScore is false without CAP_SYS_RESOURCE: kube-proxy then
	// keeps its oom_score_adj instead of failing to lower it.
	CanLowerOOMScore bool
	// SetConntrack lets kube-proxy tune the conntrack sysctls; false in
	// rootless mode, where /proc/sys is read-only.
	SetConntrack bool
	// ToolDir is kube-proxy's whole PATH: a directory holding only a
	// link to NFT, the absolute path of the nft binary.
	ToolDir, NFT string
	// Sandbox is the ID of the node's sandbox component, which kube-proxy
	// runs in; "" for a node without one.
	Sandbox string
	// FeatureGates are the config's featureGates, gate name to on or off
	// (config.Config.FeatureGates).
	FeatureGates map[string]bool
}

// HealthURL is kube-proxy's /healthz endpoint.
func (s Spec) HealthURL() string { return components.HealthURL(s.NodeIP, HealthzPort, false) }

// Config returns the node's KubeProxyConfiguration.
func Config(s Spec) *proxyv1alpha1.KubeProxyConfiguration {
	nodeIPs := components.NodeIPs(s.NodeIPs, s.NodeIP)
	var nodePorts []string
	for _, ip := range nodeIPs {
		nodePorts = append(nodePorts, netip.PrefixFrom(ip, ip.BitLen()).String())
	}
	c := &proxyv1alpha1.KubeProxyConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: "kubeproxy.config.k8s.io/v1alpha1", Kind: "KubeProxyConfiguration"},
		ClientConnection:   componentbase.ClientConnectionConfiguration{Kubeconfig: s.Kubeconfig},
		HostnameOverride:   s.NodeName,
		BindAddress:        nodeIPs[0].String(),
		HealthzBindAddress: netip.AddrPortFrom(s.NodeIP, HealthzPort).String(),
		MetricsBindAddress: netip.AddrPortFrom(s.NodeIP, MetricsPort).String(),
		Mode:               "nftables",
		ClusterCIDR:        components.JoinPrefixes(s.ClusterCIDRs),
		// NodePorts answer on the node IPs only, not on every host address.
		NodePortAddresses: nodePorts,
		FeatureGates:      maps.Clone(s.FeatureGates),
	}
	if !s.CanLowerOOMScore {
		zero := int32(0)
		c.OOMScoreAdj = &zero
	}
	if !s.SetConntrack {
		zero := int32(0)
		c.Conntrack.MaxPerCore = &zero
		c.Conntrack.TCPEstablishedTimeout = &metav1.Duration{}
		c.Conntrack.TCPCloseWaitTimeout = &metav1.Duration{}
	}
	return c
}

// Render returns the node's KubeProxyConfiguration as YAML.
func Render(s Spec) ([]byte, error) { return components.RenderYAML(Config(s), "kube-proxy config") }

// Describe returns the node's kube-proxy, run in its node's sandbox. It
// needs the apiserver ready, whose Services and EndpointSlices it
// watches (under the bootstrap RBAC policy), and its node's sandbox. It
// errors when nft is not an absolute path or the config does not render.
func Describe(s Spec) (components.Description, error) {
	if !filepath.IsAbs(s.NFT) {
		return components.Description{}, fmt.Errorf("kube-proxy needs nft (apt-get install nftables): got %q", s.NFT)
	}
	b, err := Render(s)
	if err != nil {
		return components.Description{}, err
	}
	needs := []string{apiserver.ReadyName}
	if s.Sandbox != "" {
		needs = append(needs, s.Sandbox)
	}
	return components.Description{
		Name: Name, Scope: s.NodeName, Kind: components.KindProcess, Phase: boot.NodeAgent,
		Needs: needs, Binary: Name, Command: Command(s), InSandbox: true,
		Files: []components.File{
			{Path: filepath.Join(s.ToolDir, "nft"), Link: s.NFT},
			{Path: s.ConfigFile, Content: b},
		},
		Ports: []components.Port{{Name: "healthz", IP: s.NodeIP, Port: HealthzPort}, {Name: "metrics", IP: s.NodeIP, Port: MetricsPort}},
		Probe: components.Probe{HTTPGet: s.HealthURL(),
			Then: "its Service rules written once (a last update in /healthz's status), after the Node " + s.NodeName + " is registered with its addresses and pod CIDR"},
	}, nil
}

// Command returns kube-proxy's process, whose PATH is s.ToolDir.
func Command(s Spec) process.Command {
	return process.Command{
		Env:  []string{"PATH=" + s.ToolDir},
		Path: s.Binary,
		Args: []string{"--config=" + s.ConfigFile},
	}
}
