// Package plan turns a resolved config and the host's facts into the plan
// of a cluster: its addresses, paths, release, binaries and nodes
// (Plan), and the description of every component (Describe, DescribeAll:
// command, needs, files, ports, with the live hooks built next to each).
// It starts nothing and talks to no API server: `up --dry-run` prints
// it, preflight checks it, and pkg/cluster runs it.
package plan

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/release"
)

// Plan is everything derived from the config and the host that Up needs.
type Plan struct {
	Cfg   config.Config
	Net   config.Network
	Paths config.Paths
	Facts doctor.Facts
	// Release is the Kubernetes release the cluster runs (Facts.Release:
	// the one its binaries were checked for); every component's Spec
	// receives it.
	Release release.Release
	// Names of the host interfaces and iptables chains of the cluster.
	Names network.Names
	// APIServerIP is where the control plane listens: the bridge address
	// of the primary IP family.
	APIServerIP netip.Addr
	Nodes       []*node.Node
	// ImagesDir holds the built-in image tarballs (pause, CoreDNS, agnhost).
	ImagesDir string
	Executor  string
	// Rootless: the cluster runs in rootlesskit's user namespace (a
	// RootlessState is recorded in the state dir).
	Rootless bool
	// RootlesskitStateDir is rootlesskit's --state-dir of a rootless
	// cluster (state.RootlessState), whose api.sock publishes the
	// cluster's ports on the host; "" before it is recorded and as root.
	RootlesskitStateDir string
	// Checked is set by Prepare once every check passed: Up starts
	// nothing else.
	Checked bool
	// AuditPolicy is the user's audit policy (Cfg.AuditPolicy) as
	// CheckComponents read it, which the apiserver runs with: a copy
	// written to the state dir, so that editing the file changes the
	// cluster at its next up only. Nil means kubernix's policy.
	AuditPolicy []byte
}

// Rootless is how a plan's cluster runs rootless: as its state dir's
// rootless.json records it (state.RootlessState) or, before that is
// written, as up chose.
type Rootless struct {
	// Enabled: the cluster runs in rootlesskit's namespaces.
	Enabled bool
	// StateDir is rootlesskit's --state-dir; "" until it is recorded.
	StateDir string
}

// New derives the plan of cfg, which must be resolved and valid; facts
// come from doctor.Check (or doctor.Locate) and hold the binary paths,
// imagesDir holds the built-in image tarballs, rootless says whether and
// where the cluster runs rootless (the caller reads the state dir; New
// reads nothing). The error is CheckRootless's, or the config's network
// that does not split.
func New(cfg config.Config, facts doctor.Facts, imagesDir string, rootless Rootless) (*Plan, error) {
	if rootless.Enabled {
		if err := CheckRootless(cfg); err != nil {
			return nil, err
		}
	}
	n, err := cfg.Network()
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Cfg:                 cfg,
		Net:                 n,
		Paths:               cfg.Paths(),
		Facts:               facts,
		Release:             facts.Release,
		Names:               network.NamesFor(cfg.Name),
		APIServerIP:         n.BridgeIP(),
		ImagesDir:           imagesDir,
		Rootless:            rootless.Enabled,
		RootlesskitStateDir: rootless.StateDir,
	}
	p.Executor = cfg.EffectiveExecutor(p.Rootless)
	if n.Family == config.IPFamilyIPv6 {
		// The kubernetes Service's endpoint (--advertise-address) must be
		// of its family.
		p.APIServerIP = n.BridgeIP6()
	}
	for i := range cfg.Nodes {
		nd, err := p.newNode(i)
		if err != nil {
			return nil, err
		}
		p.Nodes = append(p.Nodes, nd)
	}
	return p, nil
}

// newNode is node i of p: its addresses and pod CIDRs in each family
// of the cluster.
func (p *Plan) newNode(i int) (*node.Node, error) {
	n := p.Net
	nd := &node.Node{Index: i, Name: p.Cfg.NodeName(i)}
	var err error
	if nd.PodCIDR, err = n.PodCIDR(i); err != nil {
		return nil, err
	}
	if nd.PodCIDR6, err = n.PodCIDR6(i); err != nil {
		return nil, err
	}
	nd.Exec = node.New(p.Executor, p.sandbox(nd))
	nd.IP, nd.IP6 = n.BridgeIP(), n.BridgeIP6()
	if !nd.Exec.HostNetwork() {
		if nd.IP, err = n.NodeIP(i); err != nil {
			return nil, err
		}
		if nd.IP6, err = n.NodeIP6(i); err != nil {
			return nil, err
		}
	}
	switch n.Family {
	case config.IPFamilyIPv6:
		nd.IPs, nd.PodCIDRs = []netip.Addr{nd.IP6}, []netip.Prefix{nd.PodCIDR6}
	case config.IPFamilyDual:
		nd.IPs, nd.PodCIDRs = []netip.Addr{nd.IP, nd.IP6}, []netip.Prefix{nd.PodCIDR, nd.PodCIDR6}
	default:
		nd.IPs, nd.PodCIDRs = []netip.Addr{nd.IP}, []netip.Prefix{nd.PodCIDR}
	}
	return nd, nil
}

// CheckRootless refuses what a rootless cluster cannot do: mounts
// (nodes[].mounts), whose mount points would have to be made as the user
// inside rootlesskit's copied-up /etc, /run and /var/lib. The error wraps
// config.ErrInvalid (exit 2).
func CheckRootless(cfg config.Config) error {
	var errs []error
	for i, spec := range cfg.NodeSpecs {
		for j, m := range spec.Mounts {
			errs = append(errs, fmt.Errorf("nodes[%d].mounts[%d] %s: mounts are not supported in a rootless cluster (kubernix run as an ordinary user): their mount points would have to be made as that user, inside rootlesskit's copied-up directories; run kubernix up as root, or remove the mount", i, j, m.HostPath))
		}
	}
	return config.Invalid(" in rootless mode", errs)
}

// sandbox configures the sandbox of nd, for the container executor
// (node.Container).
func (p *Plan) sandbox(nd *node.Node) *node.Container {
	self, _ := os.Executable()
	name := nd.Name
	var binds []node.Bind
	for _, m := range p.Cfg.NodeSpec(nd.Index).Mounts {
		binds = append(binds, node.Bind{Source: m.HostPath, Target: m.Target(), ReadOnly: m.ReadOnly})
	}
	return &node.Container{
		Binds: binds, MountPointsRecord: p.MountPointsRecord(nd),
		RunDir:  p.Paths.Run(name, node.SandboxName),
		Unshare: p.Bin("unshare"), Nsenter: p.Bin("nsenter"), Self: self, Hostname: name,
		SharedDirs: []string{p.Paths.Node(name).KubeletRoot()},
		// The kubelet's device plugin sockets live there whatever its
		// root dir (k8s.io/kubelet/pkg/apis/deviceplugin DevicePluginPath).
		PrivateDirs: []string{"/var/lib/kubelet"},
		Pause:       p.Bin("pause"),
		IPv6:        config.HasIPv6(p.Net.Family),
	}
}

// MountPointsRecord is the file recording the mount points made on the
// host for nd's mounts (node.MakeMountPoints), in its node directory.
func (p *Plan) MountPointsRecord(nd *node.Node) string {
	return filepath.Join(p.Paths.Node(nd.Name).Dir, "mount-points.json")
}

// Bin returns the path of a required binary found by the doctor.
func (p *Plan) Bin(name string) string { return p.Facts.Paths[name] }

// NetworkPlan is the host network the cluster needs.
func (p *Plan) NetworkPlan() network.Plan {
	np := network.Plan{
		Cluster:     p.Cfg.Name,
		NodeCIDR:    p.Net.Node,
		BridgeIP:    p.Net.BridgeIP(),
		ClusterCIDR: p.Net.Cluster,
		ServiceCIDR: p.Net.Service,
		// kube-proxy serves LoadBalancer IPs once a Service's status has one.
		LoadBalancerCIDR: p.loadBalancerPool(),
	}
	if whole, err := netip.ParsePrefix(p.Cfg.CIDR); err == nil {
		np.Whole = whole.Masked()
	}
	for _, nd := range p.Nodes {
		np.Nodes = append(np.Nodes, network.NodeRoute{
			Index: nd.Index, IP: nd.IP, PodCIDR: nd.PodCIDR, Local: nd.Exec.HostNetwork(),
		})
	}
	p.addIPv6(&np)
	if len(p.Nodes) > 0 && !p.Nodes[0].Exec.HostNetwork() {
		np.ServiceVia = p.Nodes[0].IP
		np.ServiceVia6 = p.Nodes[0].IP6
	}
	return np
}

// addIPv6 adds the cluster's IPv6 ranges and the nodes' IPv6 addresses
// and pod CIDRs to np, when it has them.
func (p *Plan) addIPv6(np *network.Plan) {
	if !p.Net.Node6.IsValid() {
		return
	}
	np.NodeCIDR6, np.BridgeIP6, np.Whole6 = p.Net.Node6, p.Net.BridgeIP6(), p.Net.Whole6
	np.ClusterCIDR6, np.ServiceCIDR6 = p.Net.Cluster6, p.Net.Service6
	if p.Cfg.HasAddon(addons.LoadBalancer) {
		np.LoadBalancerCIDR6 = p.Net.LoadBalancer6
	}
	for i, nd := range p.Nodes {
		np.Nodes[i].IP6, np.Nodes[i].PodCIDR6 = nd.IP6, nd.PodCIDR6
	}
}

// PKISpec lists the identities the cluster needs.
func (p *Plan) PKISpec() pki.Spec {
	spec := pki.Spec{
		Dir:          p.Paths.PKI(),
		ClusterName:  p.Cfg.Name,
		APIServerIPs: []net.IP{p.APIServerIP.AsSlice(), p.Net.KubernetesServiceIP().AsSlice()},
		EtcdIPs:      []net.IP{p.APIServerIP.AsSlice()},
		APIServerDNSNames: []string{
			"kubernetes.default.svc." + p.Cfg.ClusterDomain,
		},
	}
	if bridge := p.Net.BridgeIP(); bridge != p.APIServerIP {
		spec.APIServerIPs = append(spec.APIServerIPs, bridge.AsSlice())
	}
	for _, nd := range p.Nodes {
		ips := []net.IP{nd.IP.AsSlice()}
		if nd.IP6.IsValid() {
			ips = append(ips, nd.IP6.AsSlice())
		}
		spec.Nodes = append(spec.Nodes, pki.Node{Name: nd.Name, IPs: ips})
	}
	spec.Services = p.addonServices()
	return spec
}

// DefaultCgroupParent is the cgroup the nodes' cgroups are made under as
// root, unless the config names another.
const DefaultCgroupParent = "/kubernix"

// CgroupParent is the cgroup under which each node's cgroup is made:
// Config.CgroupParent, else DefaultCgroupParent. (A rootless cluster's
// config always names it: the user's delegated subtree.)
func (p *Plan) CgroupParent() string {
	if p.Cfg.CgroupParent != "" {
		return p.Cfg.CgroupParent
	}
	return DefaultCgroupParent
}

// CgroupRoot is the kubelet cgroupRoot of a node: its own subtree.
func (p *Plan) CgroupRoot(nd *node.Node) string { return path.Join(p.CgroupParent(), nd.Name) }

// ResolvConf is the resolv.conf the kubelet hands to pods with dnsPolicy
// Default, CoreDNS among them (it forwards names outside the cluster there).
func (p *Plan) ResolvConf() string { return "/etc/resolv.conf" }

// String is the plan in one line, the head of WritePlan: the cluster's
// name, release, node count, executor and apiserver URL.
func (p *Plan) String() string {
	mode := ""
	if p.Rootless {
		mode = ", rootless"
	}
	return fmt.Sprintf("cluster %s: Kubernetes %s, %d node(s), executor %s%s, apiserver https://%s", p.Cfg.Name, p.Release, len(p.Nodes), p.Executor, mode,
		netip.AddrPortFrom(p.APIServerIP, uint16(p.Cfg.APIServerPort)))
}

// MountRoots are the directories under which the nodes' components mount
// (the kubelet its pods' volumes, containerd its snapshots, pod network
// namespaces and shm; the kubelet binds its root dir onto itself): each
// node's kubelet root dir and containerd root and state. Cleanup unmounts
// only what lies at or below them: a mount above them, such as a disk at
// the state dir, is never touched.
func (p *Plan) MountRoots() []string {
	var out []string
	for _, nd := range p.Nodes {
		np := p.Paths.Node(nd.Name)
		out = append(out, np.KubeletRoot(), np.ContainerdRoot(), np.ContainerdState())
	}
	return out
}

// loadBalancerPool is the LoadBalancer pool the host routes to the
// cluster: none without the loadbalancer addon.
func (p *Plan) loadBalancerPool() netip.Prefix {
	if !p.Cfg.HasAddon(addons.LoadBalancer) {
		return netip.Prefix{}
	}
	return p.Net.LoadBalancer
}
