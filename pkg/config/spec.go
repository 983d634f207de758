package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubernix/kubernix/pkg/addons"
)

// Components holds the extra settings of each component, the file's
// [components.<name>] tables; the table names are the component names.
type Components struct {
	Etcd              Component           `toml:"etcd,omitempty" usage:"etcd"`
	APIServer         Component           `toml:"kube-apiserver,omitempty" usage:"kube-apiserver"`
	ControllerManager Component           `toml:"kube-controller-manager,omitempty" usage:"kube-controller-manager"`
	Scheduler         Component           `toml:"kube-scheduler,omitempty" usage:"kube-scheduler"`
	Kubelet           Component           `toml:"kubelet,omitempty" usage:"every node's kubelet (a node's own kubelet_args come after)"`
	KubeProxy         Component           `toml:"kube-proxy,omitempty" usage:"every node's kube-proxy"`
	Containerd        ContainerdComponent `toml:"containerd,omitempty" usage:"every node's containerd"`
}

// Component is the extra settings of one component.
type Component struct {
	// Args are extra command-line flags, each "--flag=value" or "--flag"
	// (a boolean): they come after kubernix's own, and a flag kubernix
	// sets too is given the user's value instead.
	Args []string `toml:"args,omitempty" usage:"extra flags, each --flag=value or --flag; one kubernix sets too takes this value instead"`
	// Env are extra environment variables of the process, each
	// NAME=value (e.g. GOGC=50, a Go component's garbage collection
	// target): they come after kubernix's own, and one kubernix sets too
	// is given the user's value instead.
	Env []string `toml:"env,omitempty" usage:"extra environment variables of its process, each NAME=value (e.g. GOGC=50); one kubernix sets too takes this value instead"`
}

// ContainerdComponent is the extra settings of every node's containerd.
type ContainerdComponent struct {
	Component
	// ConfigPatches are TOML documents merged, in order, into the
	// config.toml kubernix renders (tables merged key by key, other
	// values replaced), as kind's containerdConfigPatches.
	ConfigPatches []string `toml:"config_patches,omitempty" usage:"TOML documents merged in order into the rendered config.toml (tables key by key, other values replaced)"`
}

// NodeSpec is the settings of one node, a [[nodes]] table of the file.
type NodeSpec struct {
	// Name is the node name's suffix: the node is <cluster name>-<Name>;
	// empty means node-<index>.
	Name string `toml:"name,omitempty" usage:"the node name's suffix: the node is named <cluster name>-<name> (default node-<index>)"`
	// Labels are set on the Node object, key to value.
	Labels map[string]string `toml:"labels,omitempty" usage:"labels of the Node, e.g. { tier = \"gpu\" }; node-role.kubernetes.io/<role> ones too (kubernix sets them, not the kubelet)"`
	// Taints of the Node as kubectl taint writes them: key[=value]:effect.
	Taints []string `toml:"taints,omitempty" usage:"taints of the Node, each key[=value]:effect (NoSchedule, PreferNoSchedule or NoExecute); the addons tolerate CriticalAddonsOnly and node-role.kubernetes.io/control-plane:NoSchedule and need a node they tolerate"`
	// KubeletArgs are extra kubelet flags of this node, after
	// [components.kubelet] args, in the same form.
	KubeletArgs []string `toml:"kubelet_args,omitempty" usage:"extra kubelet flags of this node, as [components.kubelet] args (and after them)"`
	// Mounts are host directories or files bind-mounted into the node.
	Mounts []Mount `toml:"mounts,omitempty" usage:"host paths mounted into the node's sandbox: nodes[].mounts below (not rootless; with --executor process only a node_path that is the host_path, not read_only)"`
	// Ports publish ports of the node on the host.
	Ports []PortMapping `toml:"ports,omitempty" usage:"node ports published on the host: nodes[].ports below"`
}

// Mount binds a host path into a node: its kubelet, containerd and so its
// pods' hostPath volumes see HostPath's content at NodePath.
type Mount struct {
	// HostPath is an existing file or directory of the host, absolute.
	HostPath string `toml:"host_path" usage:"existing host file or directory, absolute"`
	// NodePath is where the node sees it, absolute; empty means HostPath.
	NodePath string `toml:"node_path,omitempty" usage:"where the node (and a pod's hostPath volume) sees it (default: host_path); made on the host if missing, and removed at down"`
	// ReadOnly mounts it read-only in the node.
	ReadOnly bool `toml:"read_only,omitempty" usage:"mount it read-only, with every mount below it, also for a pod that mounts it read-write"`
}

// PortMapping publishes a port of a node (a NodePort, or a pod's hostPort
// on that node) on the host: connections to ListenAddress:HostPort reach
// the node's NodePort.
type PortMapping struct {
	// ListenAddress is the host address listened on; empty means
	// 127.0.0.1, this machine only.
	ListenAddress string `toml:"listen_address,omitempty" usage:"host IPv4 address listened on (default 127.0.0.1: this machine only; 0.0.0.0: every address of the host, its IPv6 ones too)"`
	// HostPort is the host port, 1..65535; 0 means NodePort.
	HostPort int `toml:"host_port,omitempty" usage:"host port (default: node_port)"`
	// NodePort is the port on the node: a Service's NodePort or a pod's hostPort.
	NodePort int `toml:"node_port" usage:"port on the node: a Service's nodePort or a pod's hostPort"`
	// Protocol is TCP or UDP; empty means TCP.
	Protocol string `toml:"protocol,omitempty" usage:"TCP or UDP (default TCP)"`
}

// DefaultListenAddress is where a PortMapping listens by default: the
// host's loopback, so the cluster is not exposed beyond this machine.
const DefaultListenAddress = "127.0.0.1"

// Listen is where m listens on the host, its defaults applied.
func (m PortMapping) Listen() netip.AddrPort {
	addr, err := netip.ParseAddr(m.ListenAddress)
	if m.ListenAddress == "" || err != nil {
		addr = netip.MustParseAddr(DefaultListenAddress)
	}
	port := m.HostPort
	if port == 0 {
		port = m.NodePort
	}
	return netip.AddrPortFrom(addr, uint16(port))
}

// Proto is m's protocol, its default applied: "TCP" or "UDP".
func (m PortMapping) Proto() v1.Protocol {
	if m.Protocol == "" {
		return v1.ProtocolTCP
	}
	return v1.Protocol(strings.ToUpper(m.Protocol))
}

// Target is the path the node sees m at: NodePath, else HostPath.
func (m Mount) Target() string {
	if m.NodePath != "" {
		return m.NodePath
	}
	return m.HostPath
}

// ParseTaint parses a taint as kubectl taint writes it, key[=value]:effect.
// It errors on a missing or unknown effect (NoSchedule, PreferNoSchedule,
// NoExecute), a key that is not a qualified name, or a value that is not
// a label value.
func ParseTaint(s string) (v1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return v1.Taint{}, fmt.Errorf("missing the effect: write key[=value]:effect")
	}
	key, value, _ := strings.Cut(kv, "=")
	t := v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}
	switch t.Effect {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return t, fmt.Errorf("effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", effect)
	}
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return t, fmt.Errorf("key %q: %s", key, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		return t, fmt.Errorf("value %q: %s", value, strings.Join(msgs, "; "))
	}
	return t, nil
}

// validateSpec checks feature_gates, runtime_config, audit_policy,
// [components] and [[nodes]]: their shapes and the host paths they name.
// Whether a feature gate is known is up to each component (checked before
// start, see pkg/cluster), whether a port is free up to the host (Preflight).
func (c *Config) validateSpec() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for gate := range c.FeatureGates {
		if gate == "" || strings.ContainsAny(gate, "=, ") {
			add("--feature-gates %q: not a feature gate name", gate)
		}
	}
	for key, value := range c.RuntimeConfig {
		if err := runtimeConfigKeyProblem(key); err != nil {
			add("--runtime-config %q: %v", key, err)
		}
		if _, err := strconv.ParseBool(value); value != "" && err != nil {
			add("--runtime-config %s=%q: must be true or false", key, value)
		}
	}
	if c.AuditPolicy != "" {
		if st, err := os.Stat(c.AuditPolicy); err != nil || st.IsDir() {
			add("--audit-policy %s: not a readable file", c.AuditPolicy)
		}
	}
	for _, comp := range c.Components.list() {
		errs = append(errs, argsProblems("components."+comp.name+".args", comp.Args)...)
		errs = append(errs, envProblems("components."+comp.name+".env", comp.Env)...)
	}
	for i, patch := range c.Components.Containerd.ConfigPatches {
		var doc map[string]any
		if err := toml.Unmarshal([]byte(patch), &doc); err != nil {
			add("components.containerd.config_patches[%d]: not TOML: %v", i, err)
		}
	}
	return append(errs, c.validateNodeSpecs()...)
}

// namedComponent is a component's extra settings, named by its table.
type namedComponent struct {
	name string
	Component
}

// list returns each component's extra settings, named by its table.
func (cs Components) list() []namedComponent {
	return []namedComponent{
		{"etcd", cs.Etcd}, {"kube-apiserver", cs.APIServer},
		{"kube-controller-manager", cs.ControllerManager}, {"kube-scheduler", cs.Scheduler},
		{"kubelet", cs.Kubelet}, {"kube-proxy", cs.KubeProxy}, {"containerd", cs.Containerd.Component},
	}
}

// Args returns the extra args of the component named name (a
// [components.<name>] table name, e.g. "kube-apiserver"); none for a name
// without a table.
func (cs Components) Args(name string) []string { return cs.of(name).Args }

// Env returns the extra environment (NAME=value strings) of the
// component named name, as Args does its args.
func (cs Components) Env(name string) []string { return cs.of(name).Env }

// of returns the extra settings of the component named name; none for a
// name without a table.
func (cs Components) of(name string) Component {
	for _, c := range cs.list() {
		if c.name == name {
			return c.Component
		}
	}
	return Component{}
}

// envProblems checks extra environment variables: each NAME=value, NAME a
// shell variable name.
func envProblems(key string, env []string) []error {
	var errs []error
	for i, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(name) {
			errs = append(errs, fmt.Errorf("%s[%d] %q: must be NAME=value, NAME of letters, digits and _ (not first a digit)", key, i, kv))
		}
	}
	return errs
}

// envName is what a shell takes as a variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// argsProblems checks extra flags: each "--flag=value" or "--flag".
func argsProblems(key string, args []string) []error {
	var errs []error
	for i, arg := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !strings.HasPrefix(arg, "--") || name == "" || strings.ContainsAny(name, " \t") {
			errs = append(errs, fmt.Errorf("%s[%d] %q: must be --flag=value or --flag", key, i, arg))
		}
	}
	return errs
}

// validateNodeSpecs checks [[nodes]]: at most --nodes of them, unique
// node names that are DNS labels, labels, taints, kubelet_args, mounts of
// existing absolute host paths, and port mappings that do not collide.
func (c *Config) validateNodeSpecs() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.NodeSpecs) > c.Nodes {
		add("--nodes %d: the config file describes %d [[nodes]]; set --nodes to at least %d, or remove nodes from the file", c.Nodes, len(c.NodeSpecs), len(c.NodeSpecs))
	}
	names := map[string]int{}
	ports := map[string]string{}
	for i, spec := range c.NodeSpecs {
		at := fmt.Sprintf("nodes[%d]", i)
		if spec.Name != "" {
			for _, msg := range validation.IsDNS1123Label(c.NodeName(i)) {
				add("%s.name %q: the node name %s: %s", at, spec.Name, c.NodeName(i), msg)
			}
		}
		for key, value := range spec.Labels {
			for _, msg := range append(validation.IsQualifiedName(key), validation.IsValidLabelValue(value)...) {
				add("%s.labels %s=%q: %s", at, key, value, msg)
			}
		}
		for j, taint := range spec.Taints {
			if _, err := ParseTaint(taint); err != nil {
				add("%s.taints[%d] %q: %v", at, j, taint, err)
			}
		}
		errs = append(errs, argsProblems(at+".kubelet_args", spec.KubeletArgs)...)
		for j, m := range spec.Mounts {
			errs = append(errs, mountProblems(fmt.Sprintf("%s.mounts[%d]", at, j), m)...)
			if c.Executor == ExecutorProcess && (m.ReadOnly || filepath.Clean(m.Target()) != filepath.Clean(m.HostPath)) {
				add("%s.mounts[%d]: --executor process runs the node in the host's mount namespace, where this mount would change the host itself; use --executor container, or a mount whose node_path is its host_path and that is not read_only (the node then sees the host path as it is)", at, j)
			}
		}
		errs = append(errs, mountTargetProblems(at, spec.Mounts)...)
		for j, m := range spec.Ports {
			errs = append(errs, portProblems(fmt.Sprintf("%s.ports[%d]", at, j), m, ports)...)
		}
	}
	for i := range c.Nodes {
		name := c.NodeName(i)
		if j, ok := names[name]; ok {
			add("nodes[%d].name: node %d is already named %s", i, j, name)
		}
		if name == ControlPlaneScope {
			add("nodes[%d].name %q: the node name %s is the control plane's (its logs and run dirs): choose another", i, c.NodeSpec(i).Name, name)
		}
		names[name] = i
	}
	return append(errs, c.addonTaintProblems()...)
}

// addonTaintProblems refuses taints that leave an enabled addon's pods
// no node: every node has a NoSchedule or NoExecute taint they do not
// tolerate. They would stay Pending and up would wait for them. The
// addons tolerate what kubeadm's do (CriticalAddonsOnly, and
// node-role.kubernetes.io/control-plane:NoSchedule); a taint any other
// workload must tolerate is the user's business as long as one node is
// free of it.
func (c *Config) addonTaintProblems() []error {
	var errs []error
	for _, name := range c.Addons {
		a, ok := addons.Lookup(name)
		if !ok {
			continue // Validate names it
		}
		tols, err := a.Tolerations()
		if err != nil || a.Deployment == "" {
			continue
		}
		var blocking []string
		for i := range c.Nodes {
			taint, ok := untolerated(c.NodeSpec(i), tols)
			if !ok {
				blocking = nil
				break
			}
			blocking = append(blocking, fmt.Sprintf("nodes[%d] %s", i, taint))
		}
		if len(blocking) > 0 {
			errs = append(errs, fmt.Errorf("nodes[].taints: the %s addon's pods tolerate none of %s, so they could run on no node and up would wait for them; leave a node without such a taint, taint it CriticalAddonsOnly=true:NoSchedule (which the addons tolerate) instead, or leave %s out of --addons",
				name, strings.Join(blocking, ", "), name))
		}
	}
	return errs
}

// untolerated returns the first taint of spec that keeps pods with tols
// off the node (NoSchedule or NoExecute, not tolerated); ok is false when
// there is none.
func untolerated(spec NodeSpec, tols []v1.Toleration) (taint string, ok bool) {
	for _, s := range spec.Taints {
		t, err := ParseTaint(s)
		if err != nil || t.Effect == v1.TaintEffectPreferNoSchedule || addons.Tolerates(tols, t) {
			continue
		}
		return s, true
	}
	return "", false
}

// mountProblems checks a mount: absolute paths, an existing host path.
func mountProblems(at string, m Mount) []error {
	var errs []error
	if !filepath.IsAbs(m.HostPath) {
		errs = append(errs, fmt.Errorf("%s.host_path %q: must be an absolute path", at, m.HostPath))
	} else if _, err := os.Stat(m.HostPath); err != nil {
		errs = append(errs, fmt.Errorf("%s.host_path %s: %w", at, m.HostPath, errors.Unwrap(err)))
	}
	if trimmed := strings.TrimRight(m.NodePath, "/"); m.NodePath != "" && (!filepath.IsAbs(m.NodePath) || filepath.Clean(trimmed) != trimmed || trimmed == "") {
		errs = append(errs, fmt.Errorf("%s.node_path %q: must be a clean absolute path other than / (e.g. %s)", at, m.NodePath, filepath.Clean("/"+m.NodePath)))
	}
	for _, dir := range reservedNodeDirs {
		if target := m.Target(); target == dir || strings.HasPrefix(target, dir+"/") {
			errs = append(errs, fmt.Errorf("%s.node_path %s: under %s, which the node's kernel file systems or kubelet own; choose another path", at, target, dir))
		}
	}
	return errs
}

// reservedNodeDirs are the paths of a node that a mount may not replace:
// the kernel's file systems, and the kubelet's fixed directory (its device
// plugin sockets, a tmpfs of the node's own).
var reservedNodeDirs = []string{"/proc", "/sys", "/dev", "/var/lib/kubelet"}

// mountTargetProblems checks one node's mounts against each other: two
// mounts onto one path, or one inside the other, where the order of the
// binds would decide what the node sees.
func mountTargetProblems(at string, mounts []Mount) []error {
	var errs []error
	for j, a := range mounts {
		for k, b := range mounts[:j] {
			ta, tb := filepath.Clean(a.Target()), filepath.Clean(b.Target())
			if ta == tb || strings.HasPrefix(ta, tb+"/") || strings.HasPrefix(tb, ta+"/") {
				errs = append(errs, fmt.Errorf("%s.mounts[%d] at %s and %s.mounts[%d] at %s: one node path may not hold, or lie inside, another mount", at, j, ta, at, k, tb))
			}
		}
	}
	return errs
}

// portProblems checks a port mapping; seen maps each host address, port
// and protocol already published to the mapping that does, and gets m's.
func portProblems(at string, m PortMapping, seen map[string]string) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.NodePort < 1 || m.NodePort > 65535 {
		add("%s.node_port %d: must be between 1 and 65535", at, m.NodePort)
	}
	if m.HostPort < 0 || m.HostPort > 65535 {
		add("%s.host_port %d: must be between 1 and 65535 (or unset for node_port)", at, m.HostPort)
	}
	if addr, err := netip.ParseAddr(m.ListenAddress); m.ListenAddress != "" && (err != nil || !addr.Is4()) {
		add("%s.listen_address %q: not an IPv4 address (e.g. 127.0.0.1, or 0.0.0.0 for every address)", at, m.ListenAddress)
	}
	if p := m.Proto(); p != v1.ProtocolTCP && p != v1.ProtocolUDP {
		add("%s.protocol %q: must be TCP or UDP", at, m.Protocol)
	}
	if len(errs) == 0 {
		// 0.0.0.0 takes the port on every address: it collides with any.
		key := fmt.Sprintf("%s/%s", m.Listen(), m.Proto())
		for other, by := range seen {
			if overlapping(key, other) {
				add("%s: %s collides with %s of %s", at, key, other, by)
			}
		}
		seen[key] = at
	}
	return errs
}

// overlapping reports whether two published "address:port/PROTO" keys
// take the same host port: the same protocol and port, and the same
// address or either the wildcard 0.0.0.0.
func overlapping(a, b string) bool {
	addrA, restA, _ := strings.Cut(a, ":")
	addrB, restB, _ := strings.Cut(b, ":")
	return restA == restB && (addrA == addrB || addrA == "0.0.0.0" || addrB == "0.0.0.0")
}

// runtimeConfigKeyProblem says why key cannot be a key of kube-apiserver's
// --runtime-config, as the apiserver would at start
// (k8s.io/apiserver/pkg/server/resourceconfig): not api/<matcher> or
// group/version[/resource], a group it does not serve, or a version of
// that group no client of its release knows. The groups and versions are
// client-go's (k8s.io/client-go/kubernetes/scheme), of the release the
// bundle's apiserver is built from, and the groups of the extension and
// aggregation servers it chains, extensionGroups, whose versions the
// apiserver checks at start. (client-go also knows a few versions the
// apiserver no longer serves, such as batch/v1beta1: it refuses those.)
func runtimeConfigKeyProblem(key string) error {
	tokens := strings.Split(key, "/")
	if len(tokens) < 2 || len(tokens) > 3 || slices.Contains(tokens, "") {
		return errors.New("not an API group version: write api/all, api/ga, api/beta, api/alpha, group/version or group/version/resource")
	}
	if tokens[0] == "api" {
		return nil // the matchers and the legacy core API
	}
	gv := schema.GroupVersion{Group: tokens[0], Version: tokens[1]}
	if slices.Contains(extensionGroups, gv.Group) {
		return nil
	}
	if !scheme.Scheme.IsGroupRegistered(gv.Group) {
		msg := fmt.Sprintf("the kube-apiserver serves no API group %s", gv.Group)
		if near := Nearest(gv.Group, servedGroups()); near != "" {
			msg += fmt.Sprintf("; did you mean %s?", near)
		}
		return errors.New(msg)
	}
	if !scheme.Scheme.IsVersionRegistered(gv) {
		var versions []string
		for _, v := range scheme.Scheme.PrioritizedVersionsForGroup(gv.Group) {
			versions = append(versions, v.Version)
		}
		return fmt.Errorf("the kube-apiserver serves API group %s in versions %s, not %s", gv.Group, strings.Join(versions, ", "), gv.Version)
	}
	return nil
}

// extensionGroups are the API groups of the servers the kube-apiserver
// chains before and after its own: apiextensions-apiserver's
// (CustomResourceDefinitions) and kube-aggregator's (APIServices).
var extensionGroups = []string{"apiextensions.k8s.io", "apiregistration.k8s.io"}

// servedGroups lists every API group the kube-apiserver serves.
func servedGroups() []string {
	groups := slices.Clone(extensionGroups)
	for _, gv := range scheme.Scheme.PrioritizedVersionsAllGroups() {
		if !slices.Contains(groups, gv.Group) {
			groups = append(groups, gv.Group)
		}
	}
	return groups
}
