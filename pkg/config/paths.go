package config

import (
	"os"
	"path/filepath"
)

// RunDir holds kubernix's host-wide records in root mode (the names
// claimed, the host namespaces claim, the sysctl ledger). It is in /run:
// a reboot, which restores what they record, forgets them too.
const RunDir = "/run/kubernix"

// StateFileMode and StateDirMode are the modes of the files and
// directories kubernix writes in a state dir: its owner's alone. Files
// there may hold secrets (config_patches in the config and each node's
// containerd config, registry credentials in hosts.toml, proxy settings
// in the environment a run record keeps), and kubernix follows its
// records (see CheckStateDirOwner). Certificates (public) and the
// scripts it renders have modes of their own; what the components write
// in their own directories (etcd's data, containerd's root, the
// kubelet's pods) has theirs, behind the state dir's StateDirMode.
const (
	StateFileMode os.FileMode = 0o600
	StateDirMode  os.FileMode = 0o700
)

// MaxSocketPath is the longest unix socket path the kernel accepts, in bytes:
// sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
const MaxSocketPath = 107

// ControlPlaneScope is the log and run scope of the shared control plane
// components, in place of a node name.
const ControlPlaneScope = "control-plane"

// Paths lays out a cluster's state directory. Every path is absolute when
// State is.
type Paths struct{ State string }

// Paths returns the layout of c's state directory.
func (c *Config) Paths() Paths { return Paths{State: c.StateDir} }

// ConfigFile is where the effective config is written on up.
func (p Paths) ConfigFile() string { return filepath.Join(p.State, "kubernix.toml") }

// AskedConfigFile is where up writes the settings it was given, as
// `config view` prints them (MarshalExplicit: the defaults and derived
// values commented out). An up of the cluster without a config file
// starts from it, so a cluster comes back as it was asked for, and flags
// change only what they set.
func (p Paths) AskedConfigFile() string { return filepath.Join(p.State, "cluster.toml") }

// PKI is the directory of certificates and keys.
func (p Paths) PKI() string { return filepath.Join(p.State, "pki") }

// Kubeconfig is the kubeconfig file of one identity ("admin", "kube-scheduler", a node name, ...).
func (p Paths) Kubeconfig(identity string) string {
	return filepath.Join(p.State, "kubeconfig", identity+".kubeconfig")
}

// EtcdData is etcd's data directory.
func (p Paths) EtcdData() string { return filepath.Join(p.State, "etcd") }

// Images is the images folder watched for tarballs and ref lists.
func (p Paths) Images() string { return filepath.Join(p.State, "images") }

// ImagesRecord is the record of what the images folder imported into which
// node (JSON), so that unchanged files are not imported again.
func (p Paths) ImagesRecord() string { return filepath.Join(p.State, "images.json") }

// ImageCache holds the content stores of image importers
// (containerd.Importer): the supervisor's and each `image load`'s, whose
// blobs the nodes hard-link. It must be on the nodes' filesystem; it is
// removed on down.
func (p Paths) ImageCache() string { return filepath.Join(p.State, "image-cache") }

// Registries is containerd's registry config_path: a <host>/hosts.toml per
// registry host, read at every pull.
func (p Paths) Registries() string { return filepath.Join(p.State, "registries") }

// Registry is the local registry's storage (its filesystem driver's root),
// kept across down and up.
func (p Paths) Registry() string { return filepath.Join(p.State, "registry") }

// RegistryConfig is the config.yml of the local registry's read-only
// instance on the bridge, rendered at every start.
func (p Paths) RegistryConfig() string { return filepath.Join(p.State, "registry.yml") }

// RegistryLocalConfig is the config.yml of the local registry's instance
// on the loopback address, the one pushes go to, rendered at every start.
func (p Paths) RegistryLocalConfig() string { return filepath.Join(p.State, "registry-localhost.yml") }

// RegistryAuth holds the account pushes to the local registry need and
// its htpasswd file (mode 0700, kept across down and up).
func (p Paths) RegistryAuth() string { return filepath.Join(p.State, "registry-auth") }

// Logs is the directory of every log file of the cluster, the apiserver's
// audit log among them; only its owner may read it (mode 0700).
func (p Paths) Logs() string { return filepath.Join(p.State, "logs") }

// Log is the log file of component in scope (a node name or ControlPlaneScope).
func (p Paths) Log(scope, component string) string {
	return filepath.Join(p.Logs(), scope, component+".log")
}

// AuditPolicy is the apiserver's audit policy, rendered at every start.
func (p Paths) AuditPolicy() string { return filepath.Join(p.State, "audit-policy.yaml") }

// Run is the directory holding the pidfile and run.json of component in scope.
func (p Paths) Run(scope, component string) string {
	return filepath.Join(p.State, "run", scope, component)
}

// Supervisor is the directory of the supervisor's pidfile, log and timings.
func (p Paths) Supervisor() string { return filepath.Join(p.State, "supervisor") }

// Node is the state directory of one node.
func (p Paths) Node(name string) NodePaths {
	return NodePaths{Dir: filepath.Join(p.State, "nodes", name)}
}

// NodePaths lays out one node's state directory.
type NodePaths struct{ Dir string }

// ContainerdConfig is the rendered containerd config.toml.
func (n NodePaths) ContainerdConfig() string { return filepath.Join(n.Dir, "containerd.toml") }

// ContainerdRoot is containerd's persistent root (content store, snapshots).
func (n NodePaths) ContainerdRoot() string { return filepath.Join(n.Dir, "containerd", "root") }

// ContainerdState is containerd's ephemeral state directory.
func (n NodePaths) ContainerdState() string { return filepath.Join(n.Dir, "containerd", "state") }

// ContainerdSocket is the containerd gRPC (and CRI) socket.
func (n NodePaths) ContainerdSocket() string { return filepath.Join(n.Dir, "containerd.sock") }

// ContainerdTTRPCSocket is containerd's ttrpc socket.
func (n NodePaths) ContainerdTTRPCSocket() string { return n.ContainerdSocket() + ".ttrpc" }

// KubeletRoot is the kubelet's --root-dir.
func (n NodePaths) KubeletRoot() string { return filepath.Join(n.Dir, "kubelet") }

// KubeletConfig is the rendered KubeletConfiguration file.
func (n NodePaths) KubeletConfig() string { return filepath.Join(n.Dir, "kubelet.yaml") }

// PodLogs is the kubelet's podLogsDir.
func (n NodePaths) PodLogs() string { return filepath.Join(n.Dir, "pod-logs") }

// Volumes holds the node's local-path-storage volumes, one directory
// each, made and removed with their PersistentVolumes; kept on down.
func (n NodePaths) Volumes() string { return filepath.Join(n.Dir, "volumes") }

// CNIConf is the CNI configuration directory of the node.
func (n NodePaths) CNIConf() string { return filepath.Join(n.Dir, "cni", "net.d") }

// CNIData is the host-local IPAM data directory of the node.
func (n NodePaths) CNIData() string { return filepath.Join(n.Dir, "cni", "data") }

// KubeProxyConfig is the rendered KubeProxyConfiguration file.
func (n NodePaths) KubeProxyConfig() string { return filepath.Join(n.Dir, "kube-proxy.yaml") }

// KubeProxyPath is the directory that is the node's kube-proxy's whole
// PATH: it holds only a link to nft (see pkg/components/kubeproxy).
func (n NodePaths) KubeProxyPath() string { return filepath.Join(n.Dir, "kube-proxy-path") }

// NetpolAgentPath is the directory that is the node's NetworkPolicy
// agent's whole PATH: it holds only a link to nft (see
// pkg/components/netpolagent).
func (n NodePaths) NetpolAgentPath() string { return filepath.Join(n.Dir, "netpol-agent-path") }

// Sockets lists every unix socket path kubernix or the components create
// under the node's directory, for the MaxSocketPath check.
func (n NodePaths) Sockets() []string {
	return []string{
		n.ContainerdSocket(),
		n.ContainerdTTRPCSocket(),
		filepath.Join(n.KubeletRoot(), "pod-resources", "kubelet.sock"),
		filepath.Join(n.KubeletRoot(), "device-plugins", "kubelet.sock"),
	}
}
