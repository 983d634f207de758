package cluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubernix/kubernix/internal/atomicfile"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/components/kubeproxy"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/containerd"
	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/images"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// SandboxImage is the pod sandbox image containerd runs, built in as our
// own pause program under the name containerd v2.4.2 defaults to.
func SandboxImage() string { return "registry.k8s.io/pause:" + assets.Version("PAUSE_VERSION") }

// Image labels kubernix sets on the images it imports.
const (
	// LabelBuiltinID records the config digest of the built-in image
	// tarball an image was imported from.
	LabelBuiltinID = "io.kubernix.builtin-id"
	// LabelSource records the file an image was imported from.
	LabelSource = "io.kubernix.source"
)

// nodeComponents returns the sandbox (container executor), containerd,
// kubelet and kube-proxy of one node.
func (c *Cluster) nodeComponents(nd *node.Node) ([]component.Component, error) {
	// Each node agent needs its node and the apiserver, not the whole
	// earlier phases: containerd boots (and imports the built-in images)
	// while etcd and the apiserver do, and the kubelet registers while the
	// controller-manager and scheduler start.
	var (
		comps   []component.Component
		sandbox []string // the node's sandbox component, if it has one
	)
	if ctr, ok := nd.Exec.(*node.Container); ok {
		sb := c.sandbox(nd, ctr)
		comps = append(comps, sb)
		sandbox = []string{sb.Name()}
	}
	ctrd := c.containerd(nd)
	comps = append(comps,
		component.WithNeeds(ctrd, sandbox...),
		component.WithNeeds(c.captured(nd, c.kubelet(nd)), "kube-apiserver", ctrd.Name()),
		component.WithNeeds(c.captured(nd, c.kubeProxy(nd)), append([]string{APIServerReady}, sandbox...)...),
	)
	return comps, nil
}

// captured wraps a node agent so the cluster keeps its Stoppable: when the
// node's containerd is given up on, its kubelet and kube-proxy are stopped.
func (c *Cluster) captured(nd *node.Node, comp component.Component) component.Component {
	return &capturedComponent{Component: comp, keep: func(s component.Stoppable) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.agents[nd.Name] = append(c.agents[nd.Name], s)
	}}
}

type capturedComponent struct {
	component.Component
	keep func(component.Stoppable)
}

// Unwrap returns the node agent (component.Unwrap).
func (cc *capturedComponent) Unwrap() component.Component { return cc.Component }

func (cc *capturedComponent) Start(ctx context.Context) (component.Stoppable, error) {
	s, err := cc.Component.Start(ctx)
	if err == nil {
		cc.keep(s)
	}
	return s, err
}

// FailedFile marks a node given up on; it holds the reason.
func FailedFile(paths config.Paths, nodeName string) string {
	return filepath.Join(paths.Run(nodeName, ""), "failed")
}

// containerdGiveUpAfter is how many failures in a row (exits, hangs,
// failed restarts, without a minute of stable running in between) of a
// node's containerd make the node failed: the first and six more, about
// 30 s of backoff (components.DefaultRestart), as many as before the
// control plane was restarted for ever.
const containerdGiveUpAfter = 7

// nodeFailed handles a node whose containerd keeps dying: it records the
// failure for `kubernix status` and stops the node's kubelet and
// kube-proxy, so nothing of the node runs half-alive. The rest of the
// cluster stays up.
func (c *Cluster) nodeFailed(nd *node.Node, reason error) {
	c.Log.Error("node failed: stopping its kubelet and kube-proxy", "node", nd.Name, "err", reason)
	_ = writeFile(FailedFile(c.Plan.Paths, nd.Name), []byte(reason.Error()+"\n"))
	c.mu.Lock()
	agents := c.agents[nd.Name]
	c.mu.Unlock()
	for _, a := range agents {
		if err := a.Stop(context.Background()); err != nil {
			c.Log.Warn("stopping node agent", "node", nd.Name, "err", err)
		}
	}
}

// containerExecutor returns the container executor of a node.
func (p *Plan) containerExecutor(nd *node.Node) *node.Container {
	self, _ := os.Executable()
	np := p.Paths.Node(nd.Name)
	return &node.Container{
		Unshare: p.Bin("unshare"), Nsenter: p.Bin("nsenter"), Self: self, Hostname: nd.Name,
		ReadyFile:  node.ReadyFile(p.Paths.Run(nd.Name, "sandbox")),
		SharedDirs: []string{np.KubeletRoot()},
		// The kubelet's device plugin sockets live there whatever its
		// root dir (k8s.io/kubelet/pkg/apis/deviceplugin DevicePluginPath).
		PrivateDirs: []string{"/var/lib/kubelet"},
		Pause:       p.Bin("pause"),
	}
}

// sandbox is the component holding a container-executor node's namespaces,
// attached to the cluster bridge once it runs.
func (c *Cluster) sandbox(nd *node.Node, ctr *node.Container) component.Component {
	runDir := c.Plan.Paths.Run(nd.Name, "sandbox")
	argv := ctr.HolderArgv()
	var proc *components.Proc
	proc = &components.Proc{
		ComponentName: "sandbox@" + nd.Name, ComponentPhase: component.Infrastructure, Log: c.Log,
		Command: c.cmd(nd.Name, "sandbox", process.Command{Name: "sandbox", Path: argv[0], Args: argv[1:]}),
		Prepare: func(context.Context) error {
			err := os.Remove(ctr.ReadyFile)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			return nil
		},
		Probe: func(context.Context) error {
			pid, ok := process.Running(runDir)
			if !ok {
				return fmt.Errorf("sandbox holder not running")
			}
			if err := ctr.HolderReady(pid); err != nil {
				return err
			}
			ctr.SetHolder(pid)
			return nil
		},
		AfterReady: func(ctx context.Context) error {
			if err := network.AttachNode(c.Plan.NetworkPlan(), nd.Index, ctr.Holder()); err != nil {
				return err
			}
			_, err := nd.Run(ctx, "sh", "-c", nodeSysctls)
			return err
		},
		BeforeStop: func(context.Context) error { return network.DetachNode(c.Plan.Cfg.Name, nd.Index) },
	}
	return proc
}

// nodeSysctls sets a node sandbox's network namespace up: forwarding on
// (it is per namespace, and off in a new one), and IPv6 off, as the
// cluster is IPv4 (pods' own namespaces are not affected). kube-proxy then
// runs single-stack: one table to sync instead of two, as upstream
// decides by /proc/sys/net/ipv6/conf/all/disable_ipv6
// (k8s.io/kubernetes cmd/kube-proxy/app: platformCheckSupported).
const nodeSysctls = `echo 1 > /proc/sys/net/ipv4/ip_forward && if [ -d /proc/sys/net/ipv6 ]; then ` +
	`echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; fi`

// runtime returns the OCI runtime containerd should use: crun where the
// doctor proved it works with this containerd, else runc.
func (c *Cluster) runtime() (name, path string) {
	if c.Plan.Facts.CrunWorks && c.Plan.Bin("crun") != "" {
		return "crun", c.Plan.Bin("crun")
	}
	return "runc", c.Plan.Bin("runc")
}

// CNIBridge is the name of a node's pod bridge: in its own network
// namespace the plain "cni0", on the host one unique to the cluster.
func (c *Cluster) CNIBridge(nd *node.Node) string {
	if _, ok := nd.Exec.(*node.Container); ok {
		return "cni0"
	}
	return c.Plan.Names.CNIBridge
}

// ContainerdConfig returns the containerd config of a node. In a rootless
// cluster the runtime binary is the wrapper script (Plan.WrapperPath) that
// adapts each bundle to the user namespace, oom_score_adj is always
// restricted, and the snapshotter is the one the doctor found to work
// there.
func (c *Cluster) ContainerdConfig(nd *node.Node) containerd.Config {
	np := c.Plan.Paths.Node(nd.Name)
	name, path := c.runtime()
	if c.Plan.Rootless {
		path = c.Plan.WrapperPath()
	}
	return containerd.Config{
		Root: np.ContainerdRoot(), State: np.ContainerdState(),
		Address: np.ContainerdSocket(), TTRPCAddress: np.ContainerdTTRPCSocket(),
		SandboxImage: SandboxImage(), Runtime: name, RuntimeBinary: path,
		Snapshotter:         c.Plan.Facts.Snapshotter,
		RestrictOOMScoreAdj: !c.Plan.Facts.HasSysResource || c.Plan.Rootless,
		DisableApparmor:     true,
		CNIBinDirs:          []string{c.Plan.Facts.CNIDir},
		CNIConfDir:          np.CNIConf(),
		OptPath:             filepath.Join(np.Dir, "containerd", "opt"),
		RegistryConfigPath:  filepath.Join(c.Plan.Paths.State, "registries"),
	}
}

func (c *Cluster) containerd(nd *node.Node) component.Component {
	np := c.Plan.Paths.Node(nd.Name)
	socket := np.ContainerdSocket()
	cfg := c.ContainerdConfig(nd)
	return &components.Proc{
		ComponentName: "containerd@" + nd.Name, ComponentPhase: component.Controller, Log: c.Log,
		Command: c.cmd(nd.Name, "containerd", process.Command{
			Name: "containerd", Path: c.Plan.Bin("containerd"),
			Args: []string{"--config", np.ContainerdConfig()},
		}),
		Wrap: nd.Exec.Wrapper,
		Prepare: func(context.Context) error {
			b, err := containerd.Render(cfg)
			if err != nil {
				return err
			}
			cni, err := containerd.RenderCNI(containerd.CNIConfig{
				Name: "kubernix", Bridge: c.CNIBridge(nd), PodCIDR: nd.PodCIDR.String(),
				Gateway: true, DataDir: np.CNIData(),
			})
			if err != nil {
				return err
			}
			for _, d := range []string{np.CNIConf(), np.CNIData(), cfg.RegistryConfigPath} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if err := writeFile(filepath.Join(np.CNIConf(), "10-kubernix.conflist"), cni); err != nil {
				return err
			}
			if c.Plan.Rootless {
				if err := c.writeRuntimeWrapper(); err != nil {
					return err
				}
			}
			return writeFile(np.ContainerdConfig(), b)
		},
		Probe: func(ctx context.Context) error {
			cri, err := containerd.Dial(ctx, socket)
			if err != nil {
				return err
			}
			defer cri.Close()
			_, err = cri.Version(ctx)
			return err
		},
		AfterReady: func(ctx context.Context) error {
			if err := c.importBuiltins(ctx, nd); err != nil {
				return err
			}
			return c.syncImagesFolder(ctx, nd)
		},
		AfterRestart: func(ctx context.Context) error { return c.syncImagesFolder(ctx, nd) },
		// A containerd that keeps failing is a failed node (nodeFailed),
		// not a crash loop: the node's pods cannot run, and its kubelet
		// and kube-proxy are stopped rather than left half-alive.
		GiveUpAfter: containerdGiveUpAfter,
		OnGiveUp:    func(err error) { c.nodeFailed(nd, err) },
		BeforeStop: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			cri, err := containerd.Dial(ctx, socket)
			if err != nil {
				return err
			}
			defer cri.Close()
			return cri.RemoveAll(ctx)
		},
	}
}

// writeRuntimeWrapper renders the rootless OCI runtime wrapper script
// for the runtime the doctor chose, running this kubernix binary.
func (c *Cluster) writeRuntimeWrapper() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, runtime := c.runtime()
	b, err := rootless.RenderWrapper(self, runtime)
	if err != nil {
		return err
	}
	path := c.Plan.WrapperPath()
	if err := writeFile(path, b); err != nil {
		return err
	}
	return os.Chmod(path, 0o755)
}

// importBuiltins imports the built-in image tarballs, pinned. An image
// already in the node's store from the same tarball (its config digest
// recorded in LabelBuiltinID) is not imported again, so a warm up or a
// containerd restart skips the work.
func (c *Cluster) importBuiltins(ctx context.Context, nd *node.Node) error {
	target := c.containerdTarget(nd)
	socket := target.Socket
	tars, err := filepath.Glob(filepath.Join(c.Plan.ImagesDir, "*.tar"))
	if err != nil {
		return err
	}
	if len(tars) == 0 {
		return fmt.Errorf("no built-in images in %s: run `make images`", c.Plan.ImagesDir)
	}
	sort.Strings(tars)
	have := map[string]string{} // ref -> built-in ID label
	present, err := containerd.List(ctx, socket)
	if err != nil {
		return err
	}
	for _, img := range present {
		have[img.Ref] = img.Labels[LabelBuiltinID]
	}
	for _, t := range tars {
		info, err := images.Inspect(t)
		if err == nil && len(info.Tags) > 0 && allHave(have, info.Tags, info.ID) {
			c.Log.Debug("built-in image already imported", "file", t, "id", info.ID)
			continue
		}
		labels := map[string]string{containerd.LabelPinned: "pinned", LabelSource: "builtin:" + filepath.Base(t)}
		if err == nil {
			labels[LabelBuiltinID] = info.ID
		}
		imgs, err := c.importer.Import(ctx, target, t, containerd.ImportOptions{Labels: labels})
		if err != nil {
			return err
		}
		for _, img := range imgs {
			c.Log.Debug("imported built-in image", "ref", img.Ref, "digest", img.Digest)
		}
	}
	return nil
}

// containerdTarget is how the supervisor reaches nd's containerd to import
// images.
func (c *Cluster) containerdTarget(nd *node.Node) containerd.Target {
	np := c.Plan.Paths.Node(nd.Name)
	return containerd.Target{Socket: np.ContainerdSocket(), Root: np.ContainerdRoot()}
}

// allHave reports whether every ref is present with built-in ID id.
func allHave(have map[string]string, refs []string, id string) bool {
	for _, r := range refs {
		if have[r] != id {
			return false
		}
	}
	return true
}

func (c *Cluster) kubeletSpec(nd *node.Node) kubelet.Spec {
	np := c.Plan.Paths.Node(nd.Name)
	kp := c.PKI.Kubelets[nd.Name]
	return kubelet.Spec{
		Binary: c.Plan.Bin("kubelet"), NodeName: nd.Name, NodeIP: nd.IP,
		Kubeconfig: c.Plan.Paths.Kubeconfig(nd.Name), ConfigFile: np.KubeletConfig(),
		RootDir: np.KubeletRoot(), PodLogsDir: np.PodLogs(), RuntimeEndpoint: np.ContainerdSocket(),
		CAFile: c.PKI.CA.Cert, TLSCert: kp.Serving.Cert, TLSKey: kp.Serving.Key,
		ClusterDNS: c.Plan.Net.DNSServiceIP(), ClusterDomain: c.Plan.Cfg.ClusterDomain,
		CgroupRoot: c.Plan.CgroupRoot(nd), CgroupV1: c.Plan.Facts.Cgroups.Mode != host.CgroupV2,
		ResolvConf: c.Plan.ResolvConf(), Rootless: c.Plan.Rootless,
	}
}

func (c *Cluster) kubelet(nd *node.Node) component.Component {
	spec := c.kubeletSpec(nd)
	health := process.HTTPGet(spec.HealthURL(), nil)
	var started atomic.Int64 // Unix seconds of the current kubelet's start
	return &components.Proc{
		ComponentName: "kubelet@" + nd.Name, ComponentPhase: component.NodeAgent, Log: c.Log,
		Command: c.cmd(nd.Name, "kubelet", kubelet.Command(spec)),
		Wrap:    nd.Exec.Wrapper,
		Prepare: func(ctx context.Context) error {
			b, err := kubelet.Render(spec)
			if err != nil {
				return err
			}
			if err := writeFile(spec.ConfigFile, b); err != nil {
				return err
			}
			for _, d := range []string{spec.RootDir, spec.PodLogsDir} {
				if err := os.MkdirAll(d, 0o750); err != nil {
					return err
				}
			}
			if err := host.EnsureCgroup(spec.CgroupRoot); err != nil {
				return err
			}
			started.Store(time.Now().Unix())
			// The apiserver serves, but may not be ready yet: its
			// admission and storage can still refuse for a moment.
			return retry.OnError(registerBackoff, isTransient, func() error {
				return c.registerNode(ctx, nd)
			})
		},
		Probe: func(ctx context.Context) error {
			if err := health(ctx); err != nil {
				return err
			}
			return c.nodeReady(ctx, nd.Name, time.Unix(started.Load(), 0))
		},
		// Its own health only: an apiserver outage must not restart it.
		Liveness: health,
	}
}

// registerBackoff spaces the attempts to register a node while the
// apiserver is still starting: 12 attempts, 100 ms apart growing by half
// each time, about 17 s in all. (A Cap would end the backoff once
// reached: wait.Backoff.Step.)
var registerBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 1.5, Steps: 12}

// isTransient tells errors of an apiserver that is starting (connection
// refused, 429, 5xx, timeouts) from final ones.
func isTransient(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsUnexpectedServerError(err)
}

// registerNode creates the Node object with its pod CIDR before the kubelet
// starts (the kubelet adopts it), so each node's pod CIDR is the one
// kubernix routed and rendered into its CNI config; the controller-manager's
// allocator respects pre-set CIDRs.
func (c *Cluster) registerNode(ctx context.Context, nd *node.Node) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nd.Name, Labels: map[string]string{
			"kubernetes.io/hostname": nd.Name, "kubernix.io/cluster": c.Plan.Cfg.Name,
		}},
		Spec: corev1.NodeSpec{PodCIDR: nd.PodCIDR.String(), PodCIDRs: []string{nd.PodCIDR.String()}},
	}
	created, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: "kubernix"})
	if err == nil {
		// The addresses the kubelet will post (its --node-ip and
		// hostname), now: kube-proxy waits for them, polling each second.
		created.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: nd.IP.String()},
			{Type: corev1.NodeHostName, Address: nd.Name},
		}
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kubernix"}); err != nil {
			c.Log.Debug("node addresses not set", "node", nd.Name, "err", err)
		}
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := c.client.CoreV1().Nodes().Get(ctx, nd.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if existing.Spec.PodCIDR != "" && existing.Spec.PodCIDR != nd.PodCIDR.String() {
			return fmt.Errorf("node %s has pod CIDR %s, want %s: delete the node or the cluster's state", nd.Name, existing.Spec.PodCIDR, nd.PodCIDR)
		}
		c.markNodeUnknown(ctx, existing)
		return nil
	}
	return err
}

// deleteStaleNodes deletes the Nodes of this cluster (label
// kubernix.io/cluster) that the plan no longer has, as after `up --nodes
// 1` of a cluster that had 3, and force-deletes the pods bound to them:
// nothing runs them any more, and the scheduler and the ReplicaSets would
// otherwise count on them until the node lifecycle and pod GC controllers
// noticed, a minute later.
func (c *Cluster) deleteStaleNodes(ctx context.Context) error {
	want := map[string]bool{}
	for _, nd := range c.Plan.Nodes {
		want[nd.Name] = true
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "kubernix.io/cluster=" + c.Plan.Cfg.Name})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for _, n := range nodes.Items {
		if want[n.Name] {
			continue
		}
		c.Log.Info("deleting a node this cluster no longer has", "node", n.Name)
		pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		if err != nil {
			errs = append(errs, fmt.Errorf("list pods of node %s: %w", n.Name, err))
			continue
		}
		for _, pod := range pods.Items {
			if pod.Spec.NodeName != n.Name {
				continue // a server that ignored the field selector
			}
			err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
		}
		if err := c.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// markNodeUnknown sets the Ready condition of a Node that etcd still holds
// from the previous run to Unknown, as the node lifecycle controller does
// when a kubelet stops posting status. The starting kubelet then sees its
// node not ready and posts its status as soon as it is (the kubelet's fast
// status update); a stale Ready=True would make it wait for its periodic
// update instead.
func (c *Cluster) markNodeUnknown(ctx context.Context, n *corev1.Node) {
	for i, cond := range n.Status.Conditions {
		if cond.Type != corev1.NodeReady || cond.Status != corev1.ConditionTrue {
			continue
		}
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
		n.Status.Conditions[i].Message = "kubernix: the kubelet is starting"
		n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		// Only a speed-up: a conflicting write (the node lifecycle
		// controller's) is left to the kubelet's periodic update.
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{FieldManager: "kubernix"}); err != nil {
			c.Log.Debug("node status not reset", "node", n.Name, "err", err)
		}
	}
}

// nodeReady returns nil once the Node's Ready condition is True in a status
// the kubelet posted at or after since (its start, to the second): on a
// restart, etcd still holds the previous kubelet's Ready=True.
func (c *Cluster) nodeReady(ctx context.Context, name string, since time.Time) error {
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.LastHeartbeatTime.Time.Before(since) {
				return fmt.Errorf("node %s: no status from the new kubelet yet", name)
			}
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s not Ready: %s", name, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}

func (c *Cluster) kubeProxySpec(nd *node.Node) kubeproxy.Spec {
	np := c.Plan.Paths.Node(nd.Name)
	return kubeproxy.Spec{
		Binary: c.Plan.Bin("kube-proxy"), NodeName: nd.Name, NodeIP: nd.IP,
		Kubeconfig: c.Plan.Paths.Kubeconfig("kube-proxy"), ConfigFile: np.KubeProxyConfig(),
		ClusterCIDR: c.Plan.Net.Cluster, CanLowerOOMScore: c.Plan.Facts.HasSysResource,
		SetConntrack: false, ToolDir: np.KubeProxyPath(), Env: c.env(),
	}
}

func (c *Cluster) kubeProxy(nd *node.Node) component.Component {
	spec := c.kubeProxySpec(nd)
	return &components.Proc{
		ComponentName: "kube-proxy@" + nd.Name, ComponentPhase: component.NodeAgent, Log: c.Log,
		Command: c.cmd(nd.Name, "kube-proxy", kubeproxy.Command(spec)),
		Wrap:    nd.Exec.Wrapper,
		Prepare: func(context.Context) error {
			if err := kubeproxy.LinkTools(spec, c.Plan.Bin("nft")); err != nil {
				return err
			}
			b, err := kubeproxy.Render(spec)
			if err != nil {
				return err
			}
			return writeFile(spec.ConfigFile, b)
		},
		Probe: process.HTTPGet(spec.HealthURL(), nil),
	}
}

// writeFile writes data to path (0644) atomically, creating its directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}
