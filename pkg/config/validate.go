package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/release"
	"github.com/kubernix/kubernix/pkg/rootless"
	"github.com/kubernix/kubernix/pkg/sysctl"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks every setting and returns all problems at once, joined,
// wrapping ErrInvalid; nil when the config is usable. It reads the file
// system (what the state dir is and holds, who owns it, whether it is
// writable) but
// writes nothing; the host's network and ports are checked by `up`
// (preflight.Prepare). Call it after Resolve.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, msg := range validation.IsDNS1123Label(c.Name) {
		add("--name %q: %s", c.Name, msg)
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		add("--nodes %d: must be between 1 and %d", c.Nodes, MaxNodes)
	}
	if v := c.KubernetesVersion; v != "" && !slices.ContainsFunc(release.Known(), func(k string) bool { return release.Matches(v, k) }) {
		add("--kubernetes-version %q: kubernix runs %s (a version, or its minor such as v%d.%d)", v, strings.Join(release.Known(), ", "), 1, release.Default().Minor())
	}
	switch c.Executor {
	case ExecutorAuto, ExecutorProcess, ExecutorContainer:
	default:
		add("--executor %q: must be %q or %q", c.Executor, ExecutorProcess, ExecutorContainer)
	}
	if c.Executor == ExecutorProcess && c.Nodes > 1 {
		add("--executor process runs nodes in the host's namespaces and supports 1 node, not %d: use --executor container", c.Nodes)
	}
	if c.APIServerPort < 1 || c.APIServerPort > 65535 {
		add("--apiserver-port %d: must be between 1 and 65535", c.APIServerPort)
	}
	if c.RegistryPort < 0 || c.RegistryPort > 65535 {
		add("--registry-port %d: must be between 1 and 65535, or 0 for no registry", c.RegistryPort)
	} else if c.RegistryPort != 0 && c.RegistryPort == c.APIServerPort {
		add("--registry-port %d: the apiserver listens there (--apiserver-port); choose another", c.RegistryPort)
	}
	errs = append(errs, c.validateMirrors()...)
	for _, msg := range validation.IsDNS1123Subdomain(c.ClusterDomain) {
		add("--cluster-domain %q: %s", c.ClusterDomain, msg)
	}
	for _, a := range c.Addons {
		if _, ok := addons.Lookup(a); !ok {
			add("--addons: unknown addon %q (known: %s)", a, strings.Join(addons.Names(), ", "))
		}
	}
	if c.HasAddon(addons.Ingress) && !c.HasAddon(addons.LoadBalancer) {
		add("--addons %s: ingress serves on its LoadBalancer Service's address, which needs the %s addon: add it, or leave ingress out", strings.Join(c.Addons, ","), addons.LoadBalancer)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		add("--log-level %q: must be debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		add("--log-format %q: must be text or json", c.LogFormat)
	}
	if c.CgroupParent != "" && (!strings.HasPrefix(c.CgroupParent, "/") || strings.Contains(c.CgroupParent, "..")) {
		add("--cgroup-parent %q: must be an absolute cgroup path without \"..\", e.g. /kubernix-1000", c.CgroupParent)
	}
	errs = append(errs, c.validateNetwork()...)
	errs = append(errs, c.validatePaths()...)
	errs = append(errs, c.validateSpec()...)
	return Invalid("", errs)
}

// validateMirrors checks --registry-mirrors: each a registry host name
// (a DNS subdomain, with an optional :port), none twice, none the local
// registry itself, and a local registry to serve them.
func (c *Config) validateMirrors() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.RegistryMirrors) > 0 && c.LocalRegistryPort() == 0 {
		add("--registry-mirrors %s: the mirrors are served by the local registry, which this config does not run; add %s to --addons and set a --registry-port other than 0, or leave --registry-mirrors empty",
			strings.Join(c.RegistryMirrors, ","), addons.Registry)
	}
	for i, m := range c.RegistryMirrors {
		if problem := registryHostProblem(m); problem != "" {
			add("--registry-mirrors %q: %s", m, problem)
		} else if slices.Contains(c.RegistryMirrors[:i], m) {
			add("--registry-mirrors %q: given twice", m)
		} else if c.RegistryPort != 0 && m == "localhost:"+strconv.Itoa(c.RegistryPort) {
			add("--registry-mirrors %q: the local registry itself; it needs no mirror", m)
		}
	}
	return errs
}

// registryHostProblem says why s is not a registry host name as
// containerd names a registry's hosts.toml directory (host or host:port,
// as in an image reference, without scheme or path); "" if it is one.
func registryHostProblem(s string) string {
	host, port, hasPort := strings.Cut(s, ":")
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "the port after ':' must be a number between 1 and 65535; give a registry host name such as registry.k8s.io or myhost:5000, without scheme or path"
		}
	}
	if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
		return "not a registry host name (" + strings.Join(msgs, "; ") + "); give one such as registry.k8s.io or docker.io, without scheme or path"
	}
	return ""
}

// validateNetwork checks --cidr, --node-cidr, --service-cidr, --cluster-cidr,
// --loadbalancer-cidr and --node-cidr-mask-size, and that the address plan has room for --nodes.
func (c *Config) validateNetwork() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	whole, wholeOK := parseCIDRFlag(add, "cidr", c.CIDR)
	if wholeOK && whole.Bits() > 20 {
		add("--cidr %s: must be /20 or larger to hold the node network, service CIDR and pod CIDRs", c.CIDR)
	}
	if wholeOK && !IsPrivate(whole) {
		add("--cidr %s: %s, e.g. the default %s", whole, notPrivate(), DefaultCIDR)
	}
	c.validateSubnets(add, whole, wholeOK)
	c.validateIPv6(add)
	if len(errs) == 0 {
		n, _ := c.Network()
		if c.Nodes > n.MaxNodes() && c.Nodes <= MaxNodes {
			add("--nodes %d: the address plan has room for %d nodes (pod CIDRs of /%d in %s, addresses in %s)", c.Nodes, n.MaxNodes(), c.NodeCIDRMaskSize, n.Cluster, n.Node)
		}
	}
	return errs
}

// inHostNamespaces reports whether a node of the process executor would
// run in the host's own namespaces: as root, outside a user namespace (a
// rootless cluster's "host" namespaces are rootlesskit's, private to it).
// A variable for the tests.
var inHostNamespaces = func() bool { return os.Geteuid() == 0 && !rootless.InUserNamespace() }

// validateIPv6 checks --ip-family and --cidr6: a unique local prefix of
// /32 to /56, set only for a family with IPv6.
func (c *Config) validateIPv6(add func(format string, args ...any)) {
	switch c.IPFamily {
	case IPFamilyIPv4, IPFamilyIPv6, IPFamilyDual:
	default:
		add("--ip-family %q: must be %s, %s or %s", c.IPFamily, IPFamilyIPv4, IPFamilyIPv6, IPFamilyDual)
		return
	}
	if HasIPv6(c.IPFamily) && !sysctl.HasIPv6() {
		add("--ip-family %s: this host's kernel runs without IPv6 (booted with ipv6.disable=1, or built without it); use --ip-family ipv4", c.IPFamily)
	}
	if HasIPv6(c.IPFamily) && c.Executor == ExecutorProcess && inHostNamespaces() {
		add("--ip-family %s: needs --executor container as root (a node in the host's namespaces would make the host forward IPv6, which kubernix never does)", c.IPFamily)
	}
	if !HasIPv6(c.IPFamily) {
		if c.CIDR6 != "" {
			add("--cidr6 %s: an IPv4 cluster has no IPv6 range; add --ip-family dual (or ipv6), or leave --cidr6 unset", c.CIDR6)
		}
		return
	}
	p, err := netip.ParsePrefix(c.CIDR6)
	switch {
	case c.CIDR6 == "":
		add("--cidr6: missing (leave --name set to derive it, or give a unique local range such as %s)", DefaultCIDR6(DefaultName))
	case err != nil:
		add("--cidr6 %q: not a CIDR: %v", c.CIDR6, err)
	case !p.Addr().Is6() || p.Addr().Is4In6():
		add("--cidr6 %q: not an IPv6 range; the IPv4 range is --cidr", c.CIDR6)
	case p != p.Masked():
		add("--cidr6 %q: host bits set; did you mean %s?", c.CIDR6, p.Masked())
	case p.Bits() < ULARange.Bits() || !ULARange.Contains(p.Addr()):
		add("--cidr6 %s: not a unique local range: this host would route it into the cluster, away from the real hosts of those addresses; use a range inside %s, e.g. %s", p, ULARange, DefaultCIDR6(c.Name))
	case p.Bits() < 32 || p.Bits() > 56:
		add("--cidr6 %s: must be /32 to /56, to hold a /64 node network, the service and LoadBalancer /112s and a /64 pod CIDR per node", p)
	}
}

// notPrivate explains why a range outside PrivateRanges is refused.
func notPrivate() string {
	return fmt.Sprintf("not a private range: this host would route it into the cluster, away from the real hosts of those addresses; use a range inside %s", prefixList(PrivateRanges))
}

// parseCIDRFlag parses the value of --flag as a masked IPv4 prefix; on a
// problem it calls add and returns false.
func parseCIDRFlag(add func(format string, args ...any), flag, value string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(value)
	switch {
	case value == "":
		add("--%s: missing (set it, or a --cidr of /20 or larger to derive it from)", flag)
	case err != nil:
		add("--%s %q: not a CIDR: %v", flag, value, err)
	case !p.Addr().Is4():
		add("--%s %q: only IPv4 is supported here; for IPv6 use --ip-family dual (or ipv6) and --cidr6", flag, value)
	case p != p.Masked():
		add("--%s %q: host bits set; did you mean %s?", flag, value, p.Masked())
	default:
		return p, true
	}
	return p, false
}

// validateSubnets checks --node-cidr, --service-cidr, --cluster-cidr and
// --loadbalancer-cidr: each private (or inside --cidr, whole, when
// wholeOK; the pool always inside it), large enough, not overlapping; and
// --node-cidr-mask-size against the cluster CIDR.
func (c *Config) validateSubnets(add func(format string, args ...any), whole netip.Prefix, wholeOK bool) {
	named := []struct {
		flag string
		p    netip.Prefix
		ok   bool
	}{{flag: "node-cidr"}, {flag: "service-cidr"}, {flag: "cluster-cidr"}, {flag: "loadbalancer-cidr"}}
	for i, v := range []string{c.NodeCIDR, c.ServiceCIDR, c.ClusterCIDR, c.LoadBalancerCIDR} {
		named[i].p, named[i].ok = parseCIDRFlag(add, named[i].flag, v)
		inWhole := wholeOK && whole.Bits() <= named[i].p.Bits() && whole.Contains(named[i].p.Addr())
		switch {
		case !named[i].ok:
		case named[i].flag == "loadbalancer-cidr" && wholeOK && !inWhole:
			// The host routes and guards the cluster's range: a pool
			// outside it would be neither.
			add("--loadbalancer-cidr %s: outside --cidr %s; choose a range inside it that overlaps no node, service or pod CIDR, or leave it unset for the default", named[i].p, whole)
		case !IsPrivate(named[i].p) && !inWhole: // one inside --cidr is reported with it
			add("--%s %s: %s, or leave it unset to carve it from --cidr", named[i].flag, named[i].p, notPrivate())
		}
	}
	for i := range named {
		for j := i + 1; j < len(named); j++ {
			if named[i].ok && named[j].ok && named[i].p.Overlaps(named[j].p) {
				add("--%s %s and --%s %s overlap", named[i].flag, named[i].p, named[j].flag, named[j].p)
			}
		}
	}
	node, svc, cluster, lb := named[0], named[1], named[2], named[3]
	if lb.ok && lb.p.Bits() > 30 {
		add("--loadbalancer-cidr %s: must be /30 or larger (its network and broadcast addresses are not handed out)", lb.p)
	}
	if node.ok && node.p.Bits() > 29 {
		add("--node-cidr %s: must be /29 or larger", node.p)
	}
	if svc.ok && svc.p.Bits() > 28 {
		add("--service-cidr %s: must be /28 or larger (the DNS Service takes its 10th address)", svc.p)
	}
	if cluster.ok && (c.NodeCIDRMaskSize < cluster.p.Bits() || c.NodeCIDRMaskSize > 28) {
		add("--node-cidr-mask-size %d: must be between the cluster CIDR's prefix /%d and 28", c.NodeCIDRMaskSize, cluster.p.Bits())
	}
}

func (c *Config) validatePaths() []error {
	var errs []error
	if c.StateDir == "" {
		return []error{errors.New("--state-dir: missing")}
	}
	if !filepath.IsAbs(c.StateDir) {
		errs = append(errs, fmt.Errorf("--state-dir %q: must be absolute", c.StateDir))
	}
	for _, err := range []error{pathListProblem("state-dir", c.StateDir), pathListProblem("bin-dir", c.BinDir), pathListProblem("bundle-dir", c.BundleDir)} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := stateDirProblem(c.StateDir, homeDirs()); err != nil {
		errs = append(errs, fmt.Errorf("--state-dir: %w", err))
	} else if err := stateDirOwnerProblem(c.StateDir); err != nil {
		errs = append(errs, err)
	} else if err := writable(c.StateDir); err != nil {
		errs = append(errs, fmt.Errorf("--state-dir %s: %w", c.StateDir, err))
	}
	if c.BinDir != "" {
		if st, err := os.Stat(c.BinDir); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("--bin-dir %s: not a directory", c.BinDir))
		}
	}
	if c.BundleDir != "" {
		if st, err := os.Stat(filepath.Join(c.BundleDir, "bin")); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("--bundle-dir %s: no bin directory in it (a bundle holds bin/ and images/, as `make install` lays out PREFIX/lib/kubernix)", c.BundleDir))
		}
	}
	if c.Kubeconfig != "" {
		if err := kubeconfigProblem(c.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig %s: %w", c.Kubeconfig, err))
		}
	}
	if validation.IsDNS1123Label(c.Name) == nil {
		longest, node := "", 0
		for i := range min(max(c.Nodes, 1), MaxNodes) {
			for _, sock := range c.Paths().Node(c.NodeName(i)).Sockets() {
				if len(sock) > len(longest) {
					longest, node = sock, i
				}
			}
		}
		if len(longest) > MaxSocketPath {
			err := socketPathProblem(longest, c.StateDir, c.Name, c.StateDir == resolveExisting(defaultStateDir(c.Name)))
			if suffix := c.NodeSpec(node).Name; suffix != "" {
				err = fmt.Errorf("%w; or a shorter nodes[%d].name than %q", err, node, suffix)
			}
			errs = append(errs, err)
		}
	}
	return errs
}

// writable reports whether dir exists as a writable directory, or could be
// created: its nearest existing ancestor is a writable directory.
func writable(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", p)
			}
			if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("%s is not writable: %w", p, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if p == filepath.Dir(p) {
			return fmt.Errorf("no existing parent directory")
		}
	}
}

// kubeconfigProblem says why up could not write the kubeconfig file path:
// it is a directory, or it (or, when missing, its nearest existing
// ancestor) is not writable, by access(2) or by its owner's write bit
// (which root's access(2) ignores, and pkg/kubeconfig honours).
func kubeconfigProblem(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, unix.ENOTDIR):
		// writable below says which ancestor is missing or a file.
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("is a directory, not a kubeconfig file")
	case st.Mode().Perm()&0o200 == 0:
		return fmt.Errorf("is read-only (mode %v)", st.Mode().Perm())
	default:
		if err := unix.Access(path, unix.W_OK); err != nil {
			return fmt.Errorf("is not writable: %w", err)
		}
	}
	dir := filepath.Dir(path)
	if err := writable(dir); err != nil {
		return err
	}
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("directory %s is read-only (mode %v)", dir, st.Mode().Perm())
	}
	return nil
}

// socketPathProblem explains why sock, a socket path under the state dir
// state of the cluster name, exceeds MaxSocketPath, naming the flag that
// makes it long and the longest value of each flag that fits. The node
// directory holds the name once (<state>/nodes/<name>-node-<i>/...), and a
// derived (default) state dir holds it once more.
func socketPathProblem(sock, state, name string, derived bool) error {
	over := len(sock) - MaxSocketPath
	perNameByte := 1
	if derived {
		perNameByte = 2
	}
	maxName := len(name) - (over+perNameByte-1)/perNameByte
	maxState := len(state) - over // an explicit --state-dir holds no name
	const minState = len("/x")
	what := fmt.Sprintf("socket path %s %d bytes long, over the kernel's limit of %d bytes (sun_path)", sock, len(sock), MaxSocketPath)
	defaultNote := ""
	if derived {
		defaultNote = " (the default)"
	}
	switch {
	case maxName >= 1 && (derived || maxState < minState || maxName >= len(DefaultName)):
		msg := fmt.Sprintf("--name %q (%d bytes) makes %s; use a --name of at most %d bytes", name, len(name), what, maxName)
		if derived {
			msg = fmt.Sprintf("--name %q (%d bytes, also part of the default --state-dir %s) makes %s; use a --name of at most %d bytes", name, len(name), state, what, maxName)
		}
		if maxState >= minState {
			msg += fmt.Sprintf(", or a --state-dir of at most %d bytes", maxState)
		}
		return errors.New(msg)
	case maxState >= minState:
		msg := fmt.Sprintf("--state-dir %s%s (%d bytes) makes %s; choose a --state-dir of at most %d bytes", state, defaultNote, len(state), what, maxState)
		if maxName >= 1 {
			msg += fmt.Sprintf(", or a --name of at most %d bytes", maxName)
		}
		return errors.New(msg)
	}
	return fmt.Errorf("--state-dir %s%s (%d bytes) and --name %q (%d bytes) make %s; shorten both, by %d bytes in all (each byte of --name counts %d times)",
		state, defaultNote, len(state), name, len(name), what, over, perNameByte)
}

// prefixList renders ps as "a, b, c or d".
func prefixList(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
