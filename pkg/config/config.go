// Package config holds kubernix's cluster configuration: its defaults, the
// sources it is read from (a TOML file, KUBERNIX_* environment variables and
// command-line flags, later sources winning), the values derived from it (the
// CIDR split, node names, per-node paths) and its validation.
package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/kubernix/kubernix/pkg/addons"
)

// Executor names accepted by Config.Executor.
const (
	// ExecutorAuto lets kubernix choose: container, except for a rootless
	// cluster of one node (see EffectiveExecutor).
	ExecutorAuto = ""
	// ExecutorProcess runs a node's containerd, kubelet and kube-proxy in
	// the host's namespaces: one node only, and as root one such cluster
	// per host (kube-proxy's nftables table and the kubelet's device
	// plugin directory have fixed names there).
	ExecutorProcess = "process"
	// ExecutorContainer runs each node in its own network, mount and UTS namespaces.
	ExecutorContainer = "container"
)

// Defaults of the settings that have one.
const (
	DefaultName             = "kubernix"
	DefaultCIDR             = "10.10.0.0/16"
	DefaultNodeCIDRMaskSize = 24
	DefaultAPIServerPort    = 6443
	// DefaultRegistryPort is the local registry's port, as in kind's
	// local registry guide.
	DefaultRegistryPort  = 5001
	DefaultClusterDomain = "cluster.local"
	// MaxNodes bounds Config.Nodes; each node costs roughly 300 MB of RSS.
	MaxNodes = 50
)

// IP families accepted by Config.IPFamily (kind's networking.ipFamily).
const (
	IPFamilyIPv4 = "ipv4"
	IPFamilyIPv6 = "ipv6"
	// IPFamilyDual is dual-stack with IPv4 as the primary family: the
	// first of each pair of ranges, node addresses and pod IPs.
	IPFamilyDual = "dual"
)

// Config is the effective configuration of one cluster. The zero value is
// not useful: start from Default and call Resolve once every source is
// applied. The toml tags are the keys of the --config file; each key K is
// also read from the environment variable KUBERNIX_<K in upper case>.
type Config struct {
	// Name of the cluster: a DNS label. The kubeconfig context is "kubernix-<Name>".
	Name string `toml:"name" flag:"name" usage:"cluster name (a DNS label); the kubeconfig context is kubernix-<name>"`
	// StateDir holds everything the cluster writes: PKI, data, logs, per-node
	// directories. Empty means /var/lib/kubernix/<name> for root and
	// $XDG_DATA_HOME/kubernix/<name> (~/.local/share/...) for other users.
	StateDir string `toml:"state_dir" flag:"state-dir" alias:"root" usage:"state directory (default /var/lib/kubernix/<name>, or ~/.local/share/kubernix/<name> when not root)"`
	// BinDir is searched first for the upstream binaries; empty means skip it.
	BinDir string `toml:"bin_dir" flag:"bin-dir" usage:"directory searched first for etcd, kube-apiserver, containerd, ... (then the bundle, then PATH, /usr/sbin, /sbin)"`
	// BundleDir is the bundle of component binaries (BundleDir/bin) and
	// built-in images (BundleDir/images), as `make install` lays it out in
	// PREFIX/lib/kubernix; empty means the one beside the kubernix
	// executable (pkg/bins.LocateBundle).
	BundleDir string `toml:"bundle_dir" flag:"bundle-dir" usage:"bundle of component binaries (bin/) and built-in images (images/), searched after --bin-dir (default: ../lib/kubernix beside kubernix, or the source tree's _output)"`
	// CNIDir holds the CNI plugins (bridge, host-local, loopback, portmap);
	// empty means the first of /usr/lib/cni and /opt/cni/bin that has them.
	CNIDir string `toml:"cni_dir" flag:"cni-dir" usage:"directory of the CNI plugins (default /usr/lib/cni or /opt/cni/bin)"`
	// Nodes is the number of worker nodes, 1..MaxNodes.
	Nodes int `toml:"nodes" flag:"nodes" usage:"number of nodes"`
	// KubernetesVersion is the Kubernetes release the cluster runs: one
	// kubernix builds (release.Known), e.g. "v1.36.3", or its minor,
	// "v1.36", for the newest patch built; empty means the default
	// release. up records the full version the cluster ran, and a stopped
	// cluster moves to another only as release.CheckUpgrade allows.
	KubernetesVersion string `toml:"kubernetes_version" flag:"kubernetes-version" usage:"Kubernetes release to run: a version or its minor, e.g. v1.36 (the newest patch built); kubernix doctor lists those built (default: the newest)"`
	// Executor decides how node processes run: "" (auto), "process" or "container".
	Executor string `toml:"executor" flag:"executor" usage:"how nodes run: container (a sandbox per node, the default) or process (the host's namespaces: 1 node, one such cluster per host)"`
	// CIDR is the whole cluster address range (IPv4). Unset NodeCIDR,
	// ServiceCIDR and ClusterCIDR are carved out of it, see Resolve.
	CIDR string `toml:"cidr" flag:"cidr" usage:"IPv4 range the node network, service CIDR and cluster (pod) CIDR are carved from (a new cluster given none moves off a taken default to the next free range)"`
	// NodeCIDR is the node network: the cluster bridge's host address is its
	// first address, node i gets the (i+2)th.
	NodeCIDR string `toml:"node_cidr" flag:"node-cidr" usage:"node network (default: first /24 of --cidr)"`
	// ServiceCIDR is the Service ClusterIP range (kube-apiserver --service-cluster-ip-range).
	ServiceCIDR string `toml:"service_cidr" flag:"service-cidr" usage:"Service ClusterIP range (default: second /20 of --cidr)"`
	// ClusterCIDR is the pod range; node i gets its i-th subnet of size NodeCIDRMaskSize.
	ClusterCIDR string `toml:"cluster_cidr" flag:"cluster-cidr" usage:"pod range split into one pod CIDR per node (default: upper half of --cidr)"`
	// LoadBalancerCIDR is the pool the IPs of LoadBalancer Services come
	// from (status.loadBalancer.ingress): inside CIDR, overlapping none of
	// NodeCIDR, ServiceCIDR and ClusterCIDR. The host routes it into the
	// cluster like the service CIDR.
	LoadBalancerCIDR string `toml:"loadbalancer_cidr" flag:"loadbalancer-cidr" usage:"pool of LoadBalancer Service IPs, inside --cidr (default: third /20 of --cidr)"`
	// IPFamily is the cluster's IP family: IPFamilyIPv4, IPFamilyIPv6 or
	// IPFamilyDual (IPv4 first). It decides the families of pods,
	// Services, node addresses and LoadBalancer IPs; the node network
	// keeps its IPv4 addresses in every family (the control plane's etcd
	// and the nodes' link to the host use them).
	IPFamily string `toml:"ip_family" flag:"ip-family" usage:"IP family of pods, Services and nodes: ipv4, ipv6 or dual (IPv4 and IPv6, IPv4 first)"`
	// CIDR6 is the cluster's IPv6 range, a unique local (fc00::/7) prefix
	// of /32 to /56, from which the IPv6 node network, service CIDR, pod
	// CIDR and LoadBalancer pool are carved (see Resolve). Empty means
	// DefaultCIDR6(Name) when IPFamily has IPv6; it must stay empty for an
	// IPv4 cluster.
	CIDR6 string `toml:"cidr6,omitempty" flag:"cidr6" usage:"IPv6 unique local range (fc00::/7, /32 to /56) the IPv6 node network, service CIDR, pod CIDRs and LoadBalancer pool are carved from (default: a /48 derived from the cluster name)"`
	// NodeCIDRMaskSize is the prefix length of each node's pod CIDR (kube-controller-manager --node-cidr-mask-size).
	NodeCIDRMaskSize int `toml:"node_cidr_mask_size" flag:"node-cidr-mask-size" usage:"prefix length of each node's pod CIDR"`
	// APIServerPort is the kube-apiserver's secure port (TCP).
	APIServerPort int `toml:"apiserver_port" flag:"apiserver-port" usage:"kube-apiserver secure port"`
	// RegistryPort is the local registry's TCP port (pkg/components/registry)
	// on 127.0.0.1 and on the bridge address: images are pushed to and
	// pulled from localhost:<RegistryPort>/…; 0 runs no registry.
	RegistryPort int `toml:"registry_port" flag:"registry-port" usage:"port of the local registry on 127.0.0.1 (push and pull localhost:<port>/image); 0 for none"`
	// RegistryMirrors are registry host names (e.g. registry.k8s.io,
	// docker.io, or host:port) whose images every node pulls from the
	// local registry first, falling back to the real registry: an image
	// pushed as localhost:<RegistryPort>/<path>:<tag> is what the nodes
	// get for <mirror>/<path>:<tag> (containerd hosts.toml mirrors, as
	// k3s's registries.yaml). Needs the registry addon and a RegistryPort.
	RegistryMirrors []string `toml:"registry_mirrors" flag:"registry-mirrors" usage:"registry hosts (e.g. registry.k8s.io,docker.io) the nodes pull from the local registry first, falling back to the real one; comma-separated"`
	// ClusterDomain is the DNS domain of Services (kubelet clusterDomain, CoreDNS zone).
	ClusterDomain string `toml:"cluster_domain" flag:"cluster-domain" usage:"DNS domain of Services"`
	// Addons to deploy once the nodes are Ready: names from addons.Table.
	Addons []string `toml:"addons" flag:"addons" usage:"addons to deploy, comma-separated, empty for none; known: {addons}"`
	// NetworkPolicy enforces NetworkPolicies on every node (a netpol-agent
	// per node, pkg/netpol); false accepts them without enforcing any.
	NetworkPolicy bool `toml:"network_policy" flag:"network-policy" usage:"enforce NetworkPolicies on every node (an nftables table per node); false accepts them without enforcing any"`
	// Ephemeral makes a throw-away cluster, e.g. for a CI job: `down`
	// deletes it (state dir, kubeconfig context, entry in `kubernix
	// list`) as `delete` does; etcd does not fsync (etcd
	// --unsafe-no-fsync: what it wrote is lost if the machine, not the
	// process, crashes) and the apiserver keeps no watch cache
	// (--watch-cache=false: lists and watches are served from etcd).
	// An existing cluster that is not ephemeral cannot be made so (its
	// data would go at the next down).
	Ephemeral bool `toml:"ephemeral" flag:"ephemeral" usage:"a throw-away cluster (e.g. for CI): down deletes it, etcd does not fsync (--unsafe-no-fsync), the apiserver keeps no watch cache (--watch-cache=false)"`
	// LogLevel of kubernix itself: debug, info, warn or error.
	LogLevel string `toml:"log_level" flag:"log-level" usage:"log level: debug, info, warn, error"`
	// LogFormat of kubernix itself: text or json.
	LogFormat string `toml:"log_format" flag:"log-format" usage:"log format: text or json"`
	// Shell is the shell `up` starts in the foreground with the cluster's
	// environment (kubernix env), when standard input is a terminal; the
	// cluster goes down when it exits. Empty means $SHELL.
	Shell string `toml:"shell" flag:"shell" usage:"shell started by a foreground up on a terminal (default $SHELL)"`
	// NoShell keeps a foreground `up` from starting Shell.
	NoShell bool `toml:"no_shell" flag:"no-shell" usage:"do not start a shell in a foreground up"`
	// Kubeconfig is the kubeconfig file `up` merges the cluster's context
	// into and `down` removes it from, made absolute; empty means the
	// invoking user's, as kubectl chooses it: the first file of
	// $KUBECONFIG, else ~/.kube/config (kubeconfig.UserTarget).
	Kubeconfig string `toml:"kubeconfig" flag:"kubeconfig" usage:"kubeconfig file up merges the cluster's context into (default: $KUBECONFIG's first file, or ~/.kube/config)"`
	// CgroupParent is the cgroup (the same path in every hierarchy) under
	// which each node's kubelet cgroupRoot, <CgroupParent>/<node>, is made.
	// Empty means /kubernix as root; in rootless mode, the user's delegated
	// subtree: the process's own cgroup if the user may write it in every
	// hierarchy, else /kubernix-<uid>.
	CgroupParent string `toml:"cgroup_parent" flag:"cgroup-parent" usage:"cgroup under which each node's cgroup is made (default /kubernix as root; rootless: the user's delegated subtree, e.g. /kubernix-<uid>)"`
	// FeatureGates are set on every component that takes --feature-gates
	// (etcd excepted: its gates are its own), gate name to on or off.
	FeatureGates map[string]bool `toml:"feature_gates,omitempty" flag:"feature-gates" usage:"feature gates of every Kubernetes component, e.g. InPlacePodVerticalScaling=true,Foo=false"`
	// RuntimeConfig is kube-apiserver's --runtime-config: API group
	// versions (or api/all, api/alpha, api/beta) to "true" or "false".
	RuntimeConfig map[string]string `toml:"runtime_config,omitempty" flag:"runtime-config" usage:"API groups/versions the kube-apiserver serves or not (--runtime-config), e.g. api/beta=true,batch/v2alpha1=false"`
	// AuditPolicy is an audit policy file (audit.k8s.io/v1 Policy, YAML)
	// the kube-apiserver runs with instead of kubernix's (every request at
	// Metadata level); made absolute.
	AuditPolicy string `toml:"audit_policy" flag:"audit-policy" usage:"audit policy file of the kube-apiserver (default: every request at Metadata level)"`
	// Components holds each component's extra settings; file only.
	Components Components `toml:"components,omitempty" usage:"extra settings of each component: the tables [components.<name>] below"`
	// NodeSpecs are the settings of nodes 0, 1, ... (the file's [[nodes]]
	// tables); nodes past its end have none. Nodes is at least its length.
	NodeSpecs []NodeSpec `toml:"-"`
}

// Default returns the defaults of every setting. Values that depend on other
// settings (StateDir, the CIDR split) stay empty until Resolve.
func Default() Config {
	return Config{
		Name:             DefaultName,
		Nodes:            1,
		CIDR:             DefaultCIDR,
		IPFamily:         IPFamilyIPv4,
		NodeCIDRMaskSize: DefaultNodeCIDRMaskSize,
		APIServerPort:    DefaultAPIServerPort,
		RegistryPort:     DefaultRegistryPort,
		ClusterDomain:    DefaultClusterDomain,
		Addons:           addons.Defaults(),
		NetworkPolicy:    true,
		LogLevel:         "info",
		LogFormat:        "text",
	}
}

// Resolve fills the settings derived from others, after every source is
// applied: StateDir from Name and the user (made absolute, with the
// symlinks of its longest existing prefix resolved, so everything
// downstream uses the real path), and the node network, service
// CIDR and cluster CIDR from CIDR (prefix p): the first /max(p+8,24), the
// second /(p+4) and the upper half /(p+1). It leaves a value it cannot
// derive (say, from an invalid CIDR) empty for Validate to report. The
// LoadBalancer pool is the third /(p+4), between the service CIDR and the
// cluster CIDR.
func (c *Config) Resolve() {
	if c.StateDir == "" && c.Name != "" {
		c.StateDir = defaultStateDir(c.Name)
	}
	if c.StateDir != "" {
		if abs, err := filepath.Abs(c.StateDir); err == nil {
			c.StateDir = resolveExisting(abs)
		}
	}
	for _, dir := range []*string{&c.BinDir, &c.BundleDir, &c.AuditPolicy} {
		if *dir != "" {
			if abs, err := filepath.Abs(*dir); err == nil {
				*dir = abs
			}
		}
	}
	if c.Kubeconfig != "" {
		if abs, err := filepath.Abs(c.Kubeconfig); err == nil {
			c.Kubeconfig = abs
		}
	}
	if c.Shell == "" {
		c.Shell = os.Getenv("SHELL")
	}
	c.resolveCIDR6()
	whole, err := netip.ParsePrefix(c.CIDR)
	if err != nil || !whole.Addr().Is4() || whole.Bits() > 20 {
		return
	}
	whole = whole.Masked()
	if c.NodeCIDR == "" {
		c.NodeCIDR = mustSubnet(whole, max(whole.Bits()+8, 24), 0).String()
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = mustSubnet(whole, whole.Bits()+4, 1).String()
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = mustSubnet(whole, whole.Bits()+1, 1).String()
	}
	if c.LoadBalancerCIDR == "" {
		c.LoadBalancerCIDR = mustSubnet(whole, whole.Bits()+4, 2).String()
	}
}

func defaultStateDir(name string) string { return filepath.Join(StateRoot(), name) }

// StateRoot is the directory holding the default state dir of every
// cluster of the calling user, <StateRoot>/<name>: /var/lib/kubernix as
// root, else $XDG_DATA_HOME/kubernix (~/.local/share/kubernix when
// XDG_DATA_HOME is unset, as the XDG base directory spec says).
func StateRoot() string {
	if os.Geteuid() == 0 {
		return "/var/lib/kubernix"
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(data, "kubernix")
}

// ContextName is the kubeconfig context (and cluster and user) name of the cluster.
func (c *Config) ContextName() string { return "kubernix-" + c.Name }

// NodeName is the Kubernetes node name (and hostname) of node i, counted
// from 0: <name>-<suffix> when NodeSpecs gives node i a name suffix, else
// <name>-node-<i>.
func (c *Config) NodeName(i int) string {
	if spec := c.NodeSpec(i); spec.Name != "" {
		return c.Name + "-" + spec.Name
	}
	return c.Name + "-node-" + strconv.Itoa(i)
}

// NodeSpec returns the settings of node i: NodeSpecs[i], or none.
func (c *Config) NodeSpec(i int) NodeSpec {
	if i >= 0 && i < len(c.NodeSpecs) {
		return c.NodeSpecs[i]
	}
	return NodeSpec{}
}

// NodeNames lists NodeName(i) for every node.
func (c *Config) NodeNames() []string {
	names := make([]string, c.Nodes)
	for i := range names {
		names[i] = c.NodeName(i)
	}
	return names
}

// EffectiveExecutor resolves ExecutorAuto: container, so that nothing of
// a node (kube-proxy's rules, the kubelet's sockets) lands in the host's
// namespaces; but process for a rootless cluster of one node, whose "host"
// namespaces are rootlesskit's, already private to the cluster.
func (c *Config) EffectiveExecutor(rootless bool) string {
	if c.Executor != ExecutorAuto {
		return c.Executor
	}
	if rootless && c.Nodes == 1 {
		return ExecutorProcess
	}
	return ExecutorContainer
}

// String renders the config as its TOML file would read.
func (c Config) String() string {
	b, err := Marshal(c)
	if err != nil {
		return fmt.Sprintf("%+v", struct{ Config }{c})
	}
	return string(b)
}

// HasAddon reports whether Addons enables the addon named.
func (c *Config) HasAddon(name string) bool { return slices.Contains(c.Addons, name) }

// LocalRegistryPort is the port of the cluster's local registry: 0 when
// it runs none (the registry addon off, or RegistryPort 0).
func (c *Config) LocalRegistryPort() int {
	if !c.HasAddon(addons.Registry) {
		return 0
	}
	return c.RegistryPort
}
