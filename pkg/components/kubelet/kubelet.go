// Package kubelet renders a node's KubeletConfiguration and builds the
// kubelet command line. Several kubelets share one host, so every path,
// port and cgroup is the node's own.
package kubelet

import (
	"maps"
	"net/netip"
	"strings"
	"time"

	"github.com/kubernix/kubernix/pkg/release"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/components/kubeproxy"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "kubelet"

// Ports the kubelet listens on, on its node IP.
const (
	Port        = 10250 // HTTPS API (logs, exec, port-forward)
	HealthzPort = 10248 // plain HTTP /healthz
)

// Spec is what the kubelet's config and command line are built from.
type Spec struct {
	// Release is the Kubernetes release Binary is built for: flags and
	// config fields that differ between releases are chosen from it.
	Release  release.Release
	Binary   string
	NodeName string
	// NodeIP is the node's IPv4 address: /healthz listens there.
	NodeIP netip.Addr
	// NodeIPs are the node's addresses as Kubernetes sees them
	// (--node-ip), primary IP family first; the kubelet serves its API
	// on the first. Empty means [NodeIP].
	NodeIPs    []netip.Addr
	Kubeconfig string
	ConfigFile string
	RootDir    string
	PodLogsDir string
	// RuntimeEndpoint is containerd's CRI socket path.
	RuntimeEndpoint string
	CAFile          string
	TLSCert, TLSKey string
	ClusterDNS      netip.Addr
	ClusterDomain   string
	// CgroupRoot is the node's own cgroup, e.g. /kubernix/<node>; it must exist.
	CgroupRoot string
	// CgroupV1 is true on v1 and hybrid hosts: the kubelet then needs failCgroupV1: false.
	CgroupV1 bool
	// Rootless runs the kubelet in a user namespace: the
	// KubeletInUserNamespace feature gate (kernel tunables, /dev/kmsg and
	// other host-only settings fail and are ignored) and no node
	// allocatable enforcement on the pods' cgroup.
	Rootless bool
	// ResolvConf is the resolv.conf pods with dnsPolicy Default get (and CoreDNS forwards to).
	ResolvConf string
	// Labels of the node (its [[nodes]] entry): those a kubelet may set
	// on its own Node (SelfLabels) go to --node-labels, so a Node the
	// kubelet registers itself (after a `kubectl delete node`) has them;
	// kubernix sets all of them when it registers the Node.
	Labels map[string]string
	// Taints the kubelet registers its Node with (registerWithTaints).
	Taints []corev1.Taint
	// FeatureGates are the config's featureGates, gate name to on or off
	// (config.Config.FeatureGates), after the ones Rootless sets: a gate
	// given here wins.
	FeatureGates map[string]bool
}

// nodeIPs is NodeIPs, or [NodeIP] when it is empty.
func (s Spec) nodeIPs() []netip.Addr { return components.NodeIPs(s.NodeIPs, s.NodeIP) }

// HealthURL is the kubelet's /healthz endpoint.
func (s Spec) HealthURL() string { return components.HealthURL(s.NodeIP, HealthzPort, false) }

// Config returns the node's KubeletConfiguration.
func Config(s Spec) *kubeletv1beta1.KubeletConfiguration {
	f, t := false, true
	zero := int32(0)
	c := &kubeletv1beta1.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Address:                  s.nodeIPs()[0].String(),
		Port:                     Port,
		ReadOnlyPort:             zero, // it serves pod data without authentication
		HealthzBindAddress:       s.NodeIP.String(),
		HealthzPort:              ptr(int32(HealthzPort)),
		TLSCertFile:              s.TLSCert,
		TLSPrivateKeyFile:        s.TLSKey,
		Authentication:           authentication(s.CAFile),
		Authorization:            kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		ContainerRuntimeEndpoint: "unix://" + s.RuntimeEndpoint,
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               s.CgroupRoot,
		CgroupsPerQOS:            &t,
		ClusterDNS:               []string{s.ClusterDNS.String()},
		ClusterDomain:            s.ClusterDomain,
		PodLogsDir:               s.PodLogsDir,
		ResolverConfig:           ptr(s.ResolvConf),
		FailSwapOn:               &f,
		// true is fatal on a host whose vm.overcommit_memory, kernel.panic
		// and kernel.panic_on_oops differ from the kubelet's wishes; with
		// false the kubelet sets them, and kubernix restores them at down.
		ProtectKernelDefaults: false,
		// Compute node status every 2 s (it is only sent when it changed,
		// or every NodeStatusReportFrequency), so a restarted node turns
		// Ready within seconds instead of the upstream 10 s.
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 2 * time.Second},
		NodeStatusReportFrequency: metav1.Duration{Duration: time.Minute},
		// Images are imported, not pulled; never garbage-collect them for a
		// nearly full disk of a developer's laptop, and evict only when
		// really short.
		ImageGCHighThresholdPercent:  ptr(int32(100)),
		ImageGCLowThresholdPercent:   ptr(int32(99)),
		EvictionHard:                 evictionHard,
		SerializeImagePulls:          &f,
		EnforceNodeAllocatable:       []string{"pods"},
		FeatureGates:                 map[string]bool{},
		RegisterNode:                 &t,
		MaxPods:                      110,
		EnableControllerAttachDetach: &t,
		// The kubelet's iptables chains are KUBE-FIREWALL, which drops
		// traffic to 127.0.0.0/8 from elsewhere once kube-proxy sets
		// route_localnet for localhost NodePorts (never here: nftables
		// mode, NodePorts on the node IP only), and canaries that watch
		// for the chains being flushed: about twenty iptables runs per
		// node and start, for nothing.
		MakeIPTablesUtilChains: &f,
		RegisterWithTaints:     s.Taints,
	}
	adaptToHost(c, s)
	maps.Copy(c.FeatureGates, s.FeatureGates)
	return c
}

// adaptToHost sets what differs on a cgroup v1 host and in rootless mode.
func adaptToHost(c *kubeletv1beta1.KubeletConfiguration, s Spec) {
	if s.CgroupV1 {
		c.FailCgroupV1 = ptr(false)
	}
	if s.Rootless {
		c.FeatureGates["KubeletInUserNamespace"] = true
		// "none": an empty list would be omitted and defaulted to "pods".
		c.EnforceNodeAllocatable = []string{"none"}
	}
}

// authentication lets in client certificates of the CA at caFile and
// bearer tokens the apiserver vouches for (webhook), and nobody
// anonymous.
func authentication(caFile string) kubeletv1beta1.KubeletAuthentication {
	f, t := false, true
	return kubeletv1beta1.KubeletAuthentication{
		Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &f},
		Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &t},
		X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: caFile},
	}
}

// evictionHard evicts pods only when the node is really short of memory
// or disk, as on a developer's nearly full laptop.
var evictionHard = map[string]string{
	"memory.available":  "100Mi",
	"nodefs.available":  "1%",
	"imagefs.available": "1%",
	"nodefs.inodesFree": "1%",
}

// Render returns the node's KubeletConfiguration as YAML.
func Render(s Spec) ([]byte, error) { return components.RenderYAML(Config(s), "kubelet config") }

// Describe returns the node's kubelet, run in its node's sandbox. It
// needs the apiserver serving (the node authorizer needs no RBAC
// objects), its node's containerd, its container runtime, and its node's
// kube-proxy with its Service rules written: on a restart the Node's pods
// are bound to it already, and started before those rules, a pod that
// reaches the apiserver through its Service IP at start (metrics-server)
// fails and waits out a 10 s crash-loop back-off. Not the
// controller-manager or the scheduler. Its readiness
// probe is its /healthz, which the cluster follows with the Node's Ready
// condition; its liveness is /healthz alone, so an apiserver outage does
// not restart it. It errors when the config does not render.
func Describe(s Spec) (components.Description, error) {
	b, err := Render(s)
	if err != nil {
		return components.Description{}, err
	}
	health := components.Probe{HTTPGet: s.HealthURL()}
	ready := health
	ready.Then = "the Node " + s.NodeName + " is Ready in a status this kubelet posted"
	return components.Description{
		Name: Name, Scope: s.NodeName, Kind: components.KindProcess, Phase: boot.NodeAgent,
		Needs:  []string{apiserver.Name, components.ID(containerd.Name, s.NodeName), components.ID(kubeproxy.Name, s.NodeName)},
		Binary: Name, Command: Command(s), InSandbox: true,
		Files: []components.File{{Path: s.ConfigFile, Content: b}},
		Dirs:  []string{s.RootDir, s.PodLogsDir},
		Ports: []components.Port{{IP: s.nodeIPs()[0], Port: Port}, {Name: "healthz", IP: s.NodeIP, Port: HealthzPort}},
		Probe: ready, Liveness: &health,
	}, nil
}

// Command returns the kubelet's process.
func Command(s Spec) process.Command {
	args := []string{
		"--config=" + s.ConfigFile,
		"--kubeconfig=" + s.Kubeconfig,
		"--root-dir=" + s.RootDir,
		"--hostname-override=" + s.NodeName,
		"--node-ip=" + components.JoinAddrs(s.nodeIPs()),
	}
	if self := SelfLabels(s.Labels); len(self) > 0 {
		args = append(args, "--node-labels="+labels.FormatLabels(self))
	}
	return process.Command{Path: s.Binary, Args: args}
}

// SelfLabels returns the labels of all that a kubelet may set on its own
// Node: those outside the kubernetes.io and k8s.io namespaces, and those
// inside them that k8s.io/kubelet/pkg/apis.IsKubeletLabel allows (the
// kubelet refuses to start with any other in --node-labels, and the
// NodeRestriction admission plugin would refuse them too).
func SelfLabels(all map[string]string) map[string]string {
	out := map[string]string{}
	for key, value := range all {
		if !kubernetesLabel(key) || kubeletapis.IsKubeletLabel(key) {
			out[key] = value
		}
	}
	return out
}

// kubernetesLabel reports whether key lies in the kubernetes.io or k8s.io
// namespace or a subdomain of them (k8s.io/kubernetes
// cmd/kubelet/app/options: isKubernetesLabel).
func kubernetesLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, ns := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
