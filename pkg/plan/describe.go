package plan

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	ctrdcomp "github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/components/controllermanager"
	"github.com/kubernix/kubernix/pkg/components/etcd"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/components/kubeproxy"
	"github.com/kubernix/kubernix/pkg/components/netpolagent"
	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/components/scheduler"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// The cluster's own tasks: work the supervisor does once the apiserver is
// ready (see accounts.go, admins.go).
const (
	controllerAccountsTask = "controller-accounts"
	clusterAdminsTask      = "cluster-admins"
)

// describers build the cluster's components from its plan, in order: the
// one table up, down, status, logs and `up --dry-run` all read. Adding a
// component is its package and an entry here.
var describers = []func(*Plan) ([]Described, error){
	describeControlPlane,
	describeNodes,
	describeCloudController,
	describePortProxy,
	describeAddons,
	describeRegistry,
}

// Describe returns every component of plan's cluster, as data, located in
// its state dir (components.Description.Locate) and in describers'
// order; see StartOrder for the order they start in. Each process's
// flags end with the user's (extraArgs), which replace kubernix's own of
// the same name (components.MergeArgs), and its environment has the
// components' PATH (searchPath) unless it sets its own. It renders files
// but writes nothing. Errors name the component whose description failed.
func Describe(plan *Plan) ([]components.Description, error) {
	all, err := DescribeAll(plan)
	if err != nil {
		return nil, err
	}
	out := make([]components.Description, len(all))
	for i, d := range all {
		out[i] = d.Description
	}
	return out, nil
}

// Described is a component as its describer made it: the description,
// and the behaviours it has in the running cluster.
type Described struct {
	components.Description
	// live builds its hooks when Up registers it; nil for none. A node's
	// wrapper is added to them (register).
	live func(Live) components.Hooks
}

// Hooks are d's behaviours in the running cluster l; none for a
// component that has none.
func (d Described) Hooks(l Live) components.Hooks {
	if d.live == nil {
		return components.Hooks{}
	}
	return d.live(l)
}

// plain is ds without behaviours.
func plain(ds ...components.Description) []Described {
	out := make([]Described, len(ds))
	for i, d := range ds {
		out[i] = Described{Description: d}
	}
	return out
}

// DescribeAll is Describe with each component's behaviours.
func DescribeAll(plan *Plan) ([]Described, error) {
	var out []Described
	for _, describe := range describers {
		ds, err := describe(plan)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
	}
	for i := range out {
		if out[i].Kind == components.KindProcess {
			out[i].Command.Args = components.MergeArgs(out[i].Command.Args, plan.extraArgs(out[i].Description))
		}
		out[i].Locate(plan.Paths)
		if out[i].Kind == components.KindProcess && !setsPath(out[i].Command.Env) {
			out[i].Command.Env = append([]string{"PATH=" + plan.searchPath()}, out[i].Command.Env...)
		}
		if out[i].Kind == components.KindProcess {
			// After kubernix's own: Environ lets the last of a key win.
			out[i].Command.Env = append(out[i].Command.Env, plan.Cfg.Components.Env(out[i].Name)...)
		}
	}
	return out, nil
}

// setsPath reports whether env (KEY=VALUE strings) sets PATH.
func setsPath(env []string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
}

// extraArgs are the user's flags of d's process: its [components.<name>]
// args, then for a kubelet its node's kubelet_args (config.NodeSpec),
// which replace the [components.kubelet] args of the same flags.
func (p *Plan) extraArgs(d components.Description) []string {
	args := p.Cfg.Components.Args(d.Name)
	if d.Name != kubelet.Name {
		return args
	}
	for _, nd := range p.Nodes {
		if nd.Name == d.Scope {
			return components.MergeArgs(args, p.Cfg.NodeSpec(nd.Index).KubeletArgs)
		}
	}
	return args
}

// searchPath is the PATH of the components: the directories of our
// binaries (containerd finds its shim there, runc its hooks), then the
// supervisor's PATH, then /usr/sbin and /sbin if it lacks them (the CNI
// plugins and the kubelet run iptables and ip by name).
func (p *Plan) searchPath() string {
	dirs := []string{filepath.Dir(p.Bin("containerd"))}
	if r := p.Bin("runc"); r != "" {
		dirs = append(dirs, filepath.Dir(r))
	}
	return bins.SystemPath(strings.Join(append(dirs, os.Getenv("PATH")), ":"))
}

// describeControlPlane describes etcd, the apiserver (and its readiness
// gate), the controller-manager, the scheduler (which first deletes the
// Nodes a smaller cluster no longer has, before it schedules onto them)
// and the cluster's tasks.
func describeControlPlane(p *Plan) ([]Described, error) {
	b := pki.Files(p.PKISpec())
	scope := config.ControlPlaneScope
	etcdSpec := etcd.Spec{Binary: p.Bin("etcd"), Name: p.Cfg.Name, DataDir: p.Paths.EtcdData(), IP: p.APIServerIP, PKI: b,
		NoFsync: p.Cfg.Ephemeral}
	api, err := apiserver.Describe(apiserver.Spec{
		Release: p.Release, Binary: p.Bin("kube-apiserver"), IP: p.APIServerIP, Port: p.Cfg.APIServerPort,
		EtcdURL: etcdSpec.ClientURL(), ServiceCIDRs: p.Net.ServiceCIDRs(), ClusterDomain: p.Cfg.ClusterDomain,
		PKI: b, AuditPolicyFile: p.Paths.AuditPolicy(), AuditLogFile: p.Paths.Log(scope, "audit"),
		Policy: p.AuditPolicy, FeatureGates: p.Cfg.FeatureGates, RuntimeConfig: p.Cfg.RuntimeConfig,
		NoWatchCache: p.Cfg.Ephemeral,
	})
	if err != nil {
		return nil, err
	}
	task := func(name, summary string, run func(Live, context.Context) error) Described {
		return Described{
			Description: components.Description{Name: name, Scope: scope, Kind: components.KindTask, Phase: boot.Controller,
				Needs: []string{apiserver.ReadyName}, Summary: summary},
			live: func(l Live) components.Hooks {
				return components.Hooks{Task: func(ctx context.Context) error { return run(l, ctx) }}
			},
		}
	}
	sched := Described{Description: scheduler.Describe(scheduler.Spec{
		Release: p.Release, Binary: p.Bin("kube-scheduler"), Kubeconfig: p.Paths.Kubeconfig(scheduler.Name),
		IP: p.APIServerIP, CAFile: b.CA.Cert, RequestHeaderCAFile: b.FrontProxyCA.Cert, Serving: b.SchedulerServing,
		FeatureGates: p.Cfg.FeatureGates,
	}), live: func(l Live) components.Hooks { return components.Hooks{Prepare: l.DeleteStaleNodes} }}
	out := plain(append([]components.Description{etcd.Describe(etcdSpec)}, api...)...)
	return append(append(out, plain(
		controllermanager.Describe(controllermanager.Spec{
			Release: p.Release, Binary: p.Bin("kube-controller-manager"), Kubeconfig: p.Paths.Kubeconfig(controllermanager.Name),
			IP: p.APIServerIP, ClusterCIDRs: p.Net.ClusterCIDRs(), NodeMaskSize: p.Net.NodeMaskSize,
			NodeMaskSize6: p.Net.NodeMaskSize6, ServiceCIDRs: p.Net.ServiceCIDRs(), PKI: b, FeatureGates: p.Cfg.FeatureGates,
		}))...),
		sched,
		task(controllerAccountsTask, "create the controllers' service accounts in kube-system in advance", Live.MakeControllerAccounts),
		task(clusterAdminsTask, "apply the ClusterRoleBindings "+ClusterAdminsBinding+", "+KubeletAPIAdminBinding+", "+CloudControllerBinding+
			" and "+NetpolAgentBinding+", and the ClusterRole "+NetpolAgentRole,
			Live.ApplyAdminBindings),
	), nil
}

// describeNodes describes each node: its sandbox (if its executor has
// one), containerd, kubelet and kube-proxy.
func describeNodes(p *Plan) ([]Described, error) {
	var out []Described
	for _, nd := range p.Nodes {
		ds, err := p.describeNode(nd)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", nd.Name, err)
		}
		out = append(out, ds...)
	}
	return out, nil
}

// describeNode describes nd's components with their behaviours: the
// sandbox joins the cluster network once it runs; containerd gets the
// built-in images and the images folder once ready (the folder again
// after each restart), and a containerd that keeps failing is a failed
// node (Live.NodeFailed), not a crash loop: the node's pods cannot run,
// and its kubelet and kube-proxy are stopped rather than left
// half-alive; kube-proxy registers the Node (addresses, pod CIDR) before
// it starts, which it waits for, and is ready once it wrote its Service
// rules, after which node 0's routes the host's traffic to Service IPs
// (network.RouteServices); the kubelet gets its cgroup before it starts
// and is ready once the Node is Ready in a status it posted.
func (p *Plan) describeNode(nd *node.Node) ([]Described, error) {
	var out []Described
	sandbox := ""
	if sb, ok := nd.Exec.Sandbox(); ok {
		out = append(out, Described{Description: sb, live: func(Live) components.Hooks {
			return nd.Exec.SandboxHooks(
				func(pid int) error { return network.AttachNode(p.NetworkPlan(), nd.Index, pid) },
				func() error { return network.DetachNode(p.Cfg.Name, nd.Index) })
		}})
		sandbox = sb.ID()
	}
	for _, describe := range []func(*node.Node, string) (Described, error){p.describeContainerd, p.describeKubelet, p.describeKubeProxy} {
		d, err := describe(nd, sandbox)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if p.Cfg.NetworkPolicy {
		d, err := p.describeNetpolAgent(nd, sandbox)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// describeNetpolAgent describes nd's NetworkPolicy agent (in sandbox, ""
// for the host's namespaces), which waits for its RBAC (the
// cluster-admins task).
func (p *Plan) describeNetpolAgent(nd *node.Node, sandbox string) (Described, error) {
	self, err := os.Executable()
	if err != nil {
		return Described{}, err
	}
	table := netpolagent.SandboxTable
	if sandbox == "" {
		table = network.NamesFor(p.Cfg.Name).NetpolTable()
	}
	d, err := netpolagent.Describe(netpolagent.Spec{
		Self: self, NodeName: nd.Name, NodeIP: nd.IP, Kubeconfig: p.Paths.Kubeconfig(netpolagent.Name),
		Table: table, ToolDir: p.Paths.Node(nd.Name).NetpolAgentPath(), NFT: p.Bin("nft"),
		Sandbox: sandbox, After: []string{clusterAdminsTask},
	})
	return Described{Description: d}, err
}

// describeContainerd describes nd's containerd (in sandbox, "" for the
// host's namespaces): once ready it imports the built-in images and the
// images folder, after a restart the folder again, and after
// ContainerdGiveUpAfter failures in a row the node fails.
func (p *Plan) describeContainerd(nd *node.Node, sandbox string) (Described, error) {
	np := p.Paths.Node(nd.Name)
	spec := ctrdcomp.Spec{
		Release: p.Release, Binary: p.Bin("containerd"), NodeName: nd.Name, ConfigFile: np.ContainerdConfig(),
		Config: p.ContainerdConfig(nd), Sandbox: sandbox,
		CNI: ctrdcomp.CNIConfig{Name: "kubernix", Bridge: p.CNIBridge(nd), PodCIDR: nd.PodCIDRs[0].String(),
			Gateway: true, DataDir: np.CNIData()},
	}
	if len(nd.PodCIDRs) > 1 {
		spec.CNI.PodCIDR6 = nd.PodCIDRs[1].String()
	}
	if p.Rootless {
		wrapper, err := p.runtimeWrapper()
		if err != nil {
			return Described{}, err
		}
		spec.RuntimeWrapper = &wrapper
	}
	d, err := ctrdcomp.Describe(spec)
	return Described{Description: d, live: func(l Live) components.Hooks {
		return components.Hooks{
			AfterReady:   func(ctx context.Context) error { return l.ImportImages(ctx, nd) },
			AfterRestart: func(ctx context.Context) error { return l.SyncImagesFolder(ctx, nd) },
			GiveUpAfter:  ContainerdGiveUpAfter,
			OnGiveUp:     func(err error) { l.NodeFailed(nd, err) },
		}
	}}, err
}

// describeKubelet describes nd's kubelet: it gets its cgroup before it
// starts and is ready once the Node is Ready in a status it posted.
func (p *Plan) describeKubelet(nd *node.Node, _ string) (Described, error) {
	d, err := kubelet.Describe(p.KubeletSpec(nd))
	return Described{Description: d, live: func(l Live) components.Hooks {
		var started atomic.Int64 // Unix seconds of the current kubelet's start
		return components.Hooks{
			Prepare: func(context.Context) error {
				if err := node.EnsureCgroup(p.CgroupRoot(nd)); err != nil {
					return err
				}
				started.Store(time.Now().Unix())
				return nil
			},
			Ready: func(ctx context.Context) error { return l.NodeReady(ctx, nd, time.Unix(started.Load(), 0)) },
		}
	}}, err
}

// describeKubeProxy describes nd's kube-proxy (in sandbox): it registers
// the Node before it starts, is ready once it wrote its Service rules,
// and on node 0 then routes the host's traffic to Service IPs.
func (p *Plan) describeKubeProxy(nd *node.Node, sandbox string) (Described, error) {
	spec := p.KubeProxySpec(nd)
	spec.Sandbox = sandbox
	d, err := kubeproxy.Describe(spec)
	return Described{Description: d, live: func(l Live) components.Hooks {
		h := components.Hooks{
			Prepare: func(ctx context.Context) error { return l.RegisterNode(ctx, nd) },
			Ready:   spec.Synced(),
		}
		if nd.Index == 0 {
			h.AfterReady = func(context.Context) error { return network.RouteServices(p.NetworkPlan()) }
		}
		return h
	}}, err
}

// describeAddons describes each addon of the config (addons.Table) that
// has a manifest as two tasks of the Addons phase (an addon of processes
// alone, such as the registry, is described by its own describer, which
// checks that it is enabled). The first applies its manifest as soon
// as the apiserver is ready, so that the controllers create its pods
// while the nodes boot and the scheduler binds them the moment a node is
// Ready. The second waits, after everything else that starts before the
// addons, for the addon's Deployment to be Available: its time is what
// the addon adds to the boot.
func describeAddons(p *Plan) ([]Described, error) {
	var out []Described
	scope := config.ControlPlaneScope
	for _, name := range p.Cfg.Addons {
		a, ok := addons.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("%w: --addons: unknown addon %q", config.ErrInvalid, name)
		}
		if a.Manifest == "" {
			continue // its components are described by their own describer
		}
		manifest, err := a.Render(p.addonParams())
		if err != nil {
			return nil, err
		}
		if a.AfterReady {
			out = append(out, describeAfterReady(a, manifest))
			continue
		}
		apply := components.Description{Name: a.Name + ManifestSuffix, Scope: scope, Kind: components.KindTask,
			Phase: boot.Addons, Needs: []string{apiserver.ReadyName}, Manifest: manifest,
			Summary: "server-side apply the " + a.Name + " manifest (below)" + crdsSummary(a) + servingSummary(a.Serving)}
		wait := components.Description{Name: a.Name, Scope: scope, Kind: components.KindTask,
			Phase: boot.Addons, Needs: []string{apply.ID()}, AfterEarlierPhases: true, Available: a.Deployment,
			Summary: "wait until Deployment " + a.Deployment + " is Available with its pods Ready since this up began"}
		out = append(out,
			Described{Description: apply, live: func(l Live) components.Hooks {
				return components.Hooks{Task: func(ctx context.Context) error { return l.ApplyManifest(ctx, apply) }}
			}},
			Described{Description: wait, live: func(l Live) components.Hooks {
				return components.Hooks{Task: func(ctx context.Context) error { return l.WaitAvailable(ctx, wait.Available) }}
			}})
	}
	return out, nil
}

// describeAfterReady describes addon a, one deployed once the cluster
// is Ready (addons.Addon.AfterReady), as a task of the Addons phase that
// hands its deployment to the cluster and is done: importing its images,
// applying its CRDs and manifest and waiting for its Deployment happen
// in the background once up's boot is over.
func describeAfterReady(a addons.Addon, manifest []byte) Described {
	d := components.Description{Name: a.Name, Scope: config.ControlPlaneScope, Kind: components.KindTask,
		Phase: boot.Addons, Needs: []string{apiserver.ReadyName}, Manifest: manifest, Available: a.Deployment,
		Summary: "once the cluster is Ready, in the background (up does not wait): import the image(s) " +
			strings.Join(a.Images, ", ") + " into every node, server-side apply the " + a.Name + " manifest (below)" +
			crdsSummary(a) + servingSummary(a.Serving) + ", wait until Deployment " + a.Deployment + " is Available"}
	images := a.Images
	return Described{Description: d, live: func(l Live) components.Hooks {
		return components.Hooks{Task: func(context.Context) error {
			l.DeployAfterReady(d, images)
			return nil
		}}
	}}
}

// addonParams are what the addons' manifests are rendered from.
func (p *Plan) addonParams() addons.Params {
	ap := addons.Params{ClusterDomain: p.Cfg.ClusterDomain, DNSIP: p.Net.DNSServiceIP(), CloudController: pki.CloudControllerName}
	for _, nd := range p.Nodes {
		ap.Volumes = append(ap.Volumes, addons.NodeDir{Node: nd.Name, Dir: p.Paths.Node(nd.Name).Volumes()})
	}
	return ap
}

// describeRegistry describes the local registry (pkg/components/registry),
// unless --registry-port is 0: read-only on the bridge address, and for
// pushes on 127.0.0.1 (rootless, that of rootlesskit's namespace, where
// its port forward from the host's 127.0.0.1 arrives).
func describeRegistry(p *Plan) ([]Described, error) {
	if p.Cfg.LocalRegistryPort() == 0 {
		return nil, nil
	}
	ds, err := registry.Describe(p.RegistrySpec())
	if err != nil {
		return nil, err
	}
	out := plain(ds...)
	for i := range out {
		if out[i].Name == registry.LocalName {
			// Its htpasswd file, and the account the owner's tools
			// log in with.
			out[i].live = func(Live) components.Hooks {
				return components.Hooks{Prepare: func(context.Context) error {
					_, err := registry.EnsureCredentials(p.Paths.RegistryAuth())
					return err
				}}
			}
		}
	}
	return out, nil
}

// RegistrySpec is the local registry of the plan's cluster.
func (p *Plan) RegistrySpec() registry.Spec {
	return registry.Spec{
		Binary: p.Bin(registry.Name), ConfigFile: p.Paths.RegistryConfig(), LocalConfigFile: p.Paths.RegistryLocalConfig(),
		StorageDir: p.Paths.Registry(), AuthDir: p.Paths.RegistryAuth(),
		IP: p.Net.BridgeIP(), LocalIP: registryLocalIP, Port: p.Cfg.RegistryPort, HostsDir: p.Paths.Registries(),
		Mirrors: p.Cfg.RegistryMirrors,
	}
}

// registryLocalIP is where the host pushes to the local registry (and,
// rootless, where rootlesskit's port forward delivers in its namespace).
var registryLocalIP = netip.MustParseAddr("127.0.0.1")

// ManifestSuffix names an addon's manifest task: "<addon>-manifest".
const ManifestSuffix = "-manifest"

// runtime returns the OCI runtime containerd should use: crun where the
// doctor proved it works with this containerd, else runc.
func (p *Plan) runtime() (name, path string) {
	if p.Facts.CrunWorks && p.Bin("crun") != "" {
		return "crun", p.Bin("crun")
	}
	return "runc", p.Bin("runc")
}

// runtimeWrapper is the rootless OCI runtime wrapper script, for the
// runtime the doctor chose, running this kubernix binary.
func (p *Plan) runtimeWrapper() (components.File, error) {
	self, err := os.Executable()
	if err != nil {
		return components.File{}, err
	}
	_, runtime := p.runtime()
	b, err := rootless.RenderWrapper(self, runtime)
	if err != nil {
		return components.File{}, err
	}
	return components.File{Path: p.WrapperPath(), Content: b, Mode: 0o700}, nil
}

// CNIBridge is the name of a node's pod bridge: in its own network
// namespace the plain "cni0", in the host's one unique to the cluster.
func (p *Plan) CNIBridge(nd *node.Node) string {
	if nd.Exec.HostNetwork() {
		return p.Names.CNIBridge
	}
	return "cni0"
}

// ContainerdConfig returns the containerd config of a node. In a rootless
// cluster the runtime binary is the wrapper script (Plan.WrapperPath) that
// adapts each bundle to the user namespace, oom_score_adj is always
// restricted, and the snapshotter is the one the doctor found to work
// there.
func (p *Plan) ContainerdConfig(nd *node.Node) ctrdcomp.Config {
	np := p.Paths.Node(nd.Name)
	name, path := p.runtime()
	if p.Rootless {
		path = p.WrapperPath()
	}
	return ctrdcomp.Config{
		Root: np.ContainerdRoot(), State: np.ContainerdState(),
		Address: np.ContainerdSocket(), TTRPCAddress: np.ContainerdTTRPCSocket(),
		Runtime: name, RuntimeBinary: path,
		Snapshotter:         p.Facts.Snapshotter,
		RestrictOOMScoreAdj: !p.Facts.HasSysResource || p.Rootless,
		DisableApparmor:     true,
		CNIBinDirs:          []string{p.Facts.CNIDir},
		CNIConfDir:          np.CNIConf(),
		OptPath:             filepath.Join(np.Dir, "containerd", "opt"),
		RegistryConfigPath:  p.Paths.Registries(),
		Patches:             p.Cfg.Components.Containerd.ConfigPatches,
	}
}

func (p *Plan) KubeletSpec(nd *node.Node) kubelet.Spec {
	np := p.Paths.Node(nd.Name)
	b := pki.Files(p.PKISpec())
	kp := b.Kubelets[nd.Name]
	return kubelet.Spec{
		Release: p.Release, Binary: p.Bin("kubelet"), NodeName: nd.Name, NodeIP: nd.IP, NodeIPs: nd.IPs,
		Kubeconfig: p.Paths.Kubeconfig(nd.Name), ConfigFile: np.KubeletConfig(),
		RootDir: np.KubeletRoot(), PodLogsDir: np.PodLogs(), RuntimeEndpoint: np.ContainerdSocket(),
		CAFile: b.CA.Cert, TLSCert: kp.Serving.Cert, TLSKey: kp.Serving.Key,
		ClusterDNS: p.Net.DNSServiceIP(), ClusterDomain: p.Cfg.ClusterDomain,
		CgroupRoot: p.CgroupRoot(nd), CgroupV1: p.Facts.Cgroups.Mode != cgroup.V2,
		ResolvConf: p.ResolvConf(), Rootless: p.Rootless, FeatureGates: p.Cfg.FeatureGates,
		Labels: p.Cfg.NodeSpec(nd.Index).Labels, Taints: NodeTaints(p.Cfg.NodeSpec(nd.Index)),
	}
}

func (p *Plan) KubeProxySpec(nd *node.Node) kubeproxy.Spec {
	np := p.Paths.Node(nd.Name)
	return kubeproxy.Spec{
		Release: p.Release, Binary: p.Bin("kube-proxy"), NodeName: nd.Name, NodeIP: nd.IP, NodeIPs: nd.IPs,
		Kubeconfig: p.Paths.Kubeconfig(kubeproxy.Name), ConfigFile: np.KubeProxyConfig(),
		ClusterCIDRs: p.Net.ClusterCIDRs(), CanLowerOOMScore: p.Facts.HasSysResource,
		SetConntrack: false, ToolDir: np.KubeProxyPath(), NFT: p.Bin("nft"),
		FeatureGates: p.Cfg.FeatureGates,
	}
}
