package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubernix/kubernix/pkg/addons"
)

func TestSubnet(t *testing.T) {
	tests := []struct {
		in      string
		bits    int
		index   int
		want    string
		wantErr bool
	}{
		{"10.10.0.0/16", 24, 0, "10.10.0.0/24", false},
		{"10.10.0.0/16", 20, 1, "10.10.16.0/20", false},
		{"10.10.0.0/16", 17, 1, "10.10.128.0/17", false},
		{"10.10.128.0/17", 24, 2, "10.10.130.0/24", false},
		{"10.10.128.0/17", 24, 127, "10.10.255.0/24", false},
		{"10.10.128.0/17", 24, 128, "", true},
		{"10.10.0.0/16", 15, 0, "", true},
		{"10.10.0.0/16", 33, 0, "", true},
		{"10.10.0.0/16", 24, -1, "", true},
		{"fd00::/48", 64, 3, "fd00:0:0:3::/64", false},
	}
	for _, tt := range tests {
		t.Run(tt.in+"/"+tt.want, func(t *testing.T) {
			got, err := Subnet(netip.MustParsePrefix(tt.in), tt.bits, tt.index)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Subnet(%s, %d, %d) error = %v, wantErr %v", tt.in, tt.bits, tt.index, err, tt.wantErr)
			}
			if err == nil && got.String() != tt.want {
				t.Errorf("Subnet(%s, %d, %d) = %s, want %s", tt.in, tt.bits, tt.index, got, tt.want)
			}
		})
	}
}

func TestResolveSplitsCIDR(t *testing.T) {
	tests := []struct {
		cidr                       string
		node, service, cluster, lb string
		maxNodes                   int
	}{
		{"10.10.0.0/16", "10.10.0.0/24", "10.10.16.0/20", "10.10.128.0/17", "10.10.32.0/20", 128},
		{"172.20.0.0/12", "172.16.0.0/24", "172.17.0.0/16", "172.24.0.0/13", "172.18.0.0/16", 253},
		{"10.200.0.0/20", "10.200.0.0/28", "10.200.1.0/24", "10.200.8.0/21", "10.200.2.0/24", 8},
		{"10.10.0.0/24", "", "", "", "", 0}, // too small to derive from
		{"bogus", "", "", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			c := Default()
			c.StateDir = t.TempDir()
			c.CIDR = tt.cidr
			c.Resolve()
			if c.NodeCIDR != tt.node || c.ServiceCIDR != tt.service || c.ClusterCIDR != tt.cluster || c.LoadBalancerCIDR != tt.lb {
				t.Fatalf("split %s = node %q service %q cluster %q pool %q, want %q %q %q %q", tt.cidr,
					c.NodeCIDR, c.ServiceCIDR, c.ClusterCIDR, c.LoadBalancerCIDR, tt.node, tt.service, tt.cluster, tt.lb)
			}
			if tt.node == "" {
				return
			}
			whole := netip.MustParsePrefix(tt.cidr).Masked()
			pool := netip.MustParsePrefix(c.LoadBalancerCIDR)
			if !whole.Contains(pool.Addr()) || whole.Bits() > pool.Bits() {
				t.Errorf("pool %s outside %s", pool, whole)
			}
			for _, other := range []string{c.NodeCIDR, c.ServiceCIDR, c.ClusterCIDR} {
				if pool.Overlaps(netip.MustParsePrefix(other)) {
					t.Errorf("pool %s overlaps %s", pool, other)
				}
			}
			n, err := c.Network()
			if err != nil {
				t.Fatal(err)
			}
			if got := n.MaxNodes(); got != tt.maxNodes {
				t.Errorf("MaxNodes = %d, want %d", got, tt.maxNodes)
			}
		})
	}
}

func TestNetworkAddresses(t *testing.T) {
	c := Default()
	c.StateDir = t.TempDir()
	c.Resolve()
	n, err := c.Network()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"bridge", func() (string, error) { return n.BridgeIP().String(), nil }, "10.10.0.1"},
		{"node 0", func() (string, error) { a, err := n.NodeIP(0); return a.String(), err }, "10.10.0.2"},
		{"node 2", func() (string, error) { a, err := n.NodeIP(2); return a.String(), err }, "10.10.0.4"},
		{"pod CIDR 0", func() (string, error) { p, err := n.PodCIDR(0); return p.String(), err }, "10.10.128.0/24"},
		{"pod CIDR 2", func() (string, error) { p, err := n.PodCIDR(2); return p.String(), err }, "10.10.130.0/24"},
		{"kubernetes service", func() (string, error) { return n.KubernetesServiceIP().String(), nil }, "10.10.16.1"},
		{"DNS service", func() (string, error) { return n.DNSServiceIP().String(), nil }, "10.10.16.10"},
		{"LoadBalancer pool", func() (string, error) { return n.LoadBalancer.String(), nil }, "10.10.32.0/20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil || got != tt.want {
				t.Errorf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := n.NodeIP(300); err == nil {
		t.Error("NodeIP(300) in a /24: want an error")
	}
}

// TestNetworkIPv6 checks the IPv6 split of a --cidr6 and the ranges and
// addresses of each family, primary first.
func TestNetworkIPv6(t *testing.T) {
	for _, tt := range []struct {
		family, cidr6                                     string
		node6, svc6, lb6, pods6, bridge6, node1, podCIDR1 string
		services, clusters, pools, dns                    string
	}{
		{IPFamilyDual, "fd12:3456:789a::/48", "fd12:3456:789a::/64", "fd12:3456:789a:1::/112", "fd12:3456:789a:2::/112",
			"fd12:3456:789a:8000::/49", "fd12:3456:789a::1", "fd12:3456:789a::3", "fd12:3456:789a:8001::/64",
			"[10.10.16.0/20 fd12:3456:789a:1::/112]", "[10.10.128.0/17 fd12:3456:789a:8000::/49]", "[10.10.32.0/20 fd12:3456:789a:2::/112]", "10.10.16.10"},
		{IPFamilyIPv6, "fd00:1:2:3400::/56", "fd00:1:2:3400::/64", "fd00:1:2:3401::/112", "fd00:1:2:3402::/112",
			"fd00:1:2:3480::/57", "fd00:1:2:3400::1", "fd00:1:2:3400::3", "fd00:1:2:3481::/64",
			"[fd00:1:2:3401::/112]", "[fd00:1:2:3480::/57]", "[fd00:1:2:3402::/112]", "fd00:1:2:3401::a"},
		{IPFamilyIPv4, "", "invalid Prefix", "invalid Prefix", "invalid Prefix", "invalid Prefix", "invalid IP", "invalid IP", "invalid Prefix",
			"[10.10.16.0/20]", "[10.10.128.0/17]", "[10.10.32.0/20]", "10.10.16.10"},
	} {
		t.Run(tt.family, func(t *testing.T) {
			c := Default()
			c.StateDir, c.IPFamily, c.CIDR6 = t.TempDir(), tt.family, tt.cidr6
			c.Resolve()
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			n, err := c.Network()
			if err != nil {
				t.Fatal(err)
			}
			node1, err1 := n.NodeIP6(1)
			pods1, err2 := n.PodCIDR6(1)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			got := []string{n.Node6.String(), n.Service6.String(), n.LoadBalancer6.String(), n.Cluster6.String(), n.BridgeIP6().String(),
				node1.String(), pods1.String(), fmt.Sprint(n.ServiceCIDRs()), fmt.Sprint(n.ClusterCIDRs()), fmt.Sprint(n.LoadBalancerCIDRs()),
				n.DNSServiceIP().String()}
			want := []string{tt.node6, tt.svc6, tt.lb6, tt.pods6, tt.bridge6, tt.node1, tt.podCIDR1, tt.services, tt.clusters, tt.pools, tt.dns}
			if !slices.Equal(got, want) {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

// TestDefaultCIDR6 checks the range a cluster without --cidr6 gets: a
// unique local /48 of its name, the same each time, another per name.
func TestDefaultCIDR6(t *testing.T) {
	a, b := DefaultCIDR6("kubernix"), DefaultCIDR6("other")
	if a != DefaultCIDR6("kubernix") || a == b {
		t.Errorf("DefaultCIDR6: %s and %s", a, b)
	}
	for _, p := range []netip.Prefix{a, b} {
		if p.Bits() != 48 || !netip.MustParsePrefix("fd00::/8").Contains(p.Addr()) || p != p.Masked() {
			t.Errorf("DefaultCIDR6 = %s: want a masked /48 of fd00::/8", p)
		}
	}
	c := Default()
	c.Name, c.StateDir, c.IPFamily = "kubernix", t.TempDir(), IPFamilyDual
	c.Resolve()
	if c.CIDR6 != a.String() {
		t.Errorf("Resolve: cidr6 = %q, want %s", c.CIDR6, a)
	}
}

// load parses args as flags and loads the config from them, env and file.
func load(t *testing.T, args []string, env []string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags := NewFlags()
	flags.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return Load(flags, env)
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "k.toml")
	if err := os.WriteFile(file, []byte("nodes = 2\nname = \"fromfile\"\nlog_level = \"warn\"\naddons = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		env   []string
		check func(Config) string
	}{
		{"defaults", nil, nil, func(c Config) string {
			if c.Nodes != 1 || c.Name != "kubernix" || c.CIDR != DefaultCIDR || !slices.Equal(c.Addons, addons.Defaults()) {
				return "defaults not applied"
			}
			return ""
		}},
		{"file over defaults", []string{"--config", file}, nil, func(c Config) string {
			if c.Nodes != 2 || c.Name != "fromfile" || c.LogLevel != "warn" || len(c.Addons) != 0 {
				return "file not applied"
			}
			return ""
		}},
		{"env over file", []string{"--config", file}, []string{"KUBERNIX_NODES=3", "KUBERNIX_ADDONS=coredns", "OTHER=1"}, func(c Config) string {
			if c.Nodes != 3 || c.Name != "fromfile" || len(c.Addons) != 1 {
				return "env not applied over file"
			}
			return ""
		}},
		{"flag over env", []string{"--config", file, "--nodes", "4"}, []string{"KUBERNIX_NODES=3"}, func(c Config) string {
			if c.Nodes != 4 {
				return "flag not applied over env"
			}
			return ""
		}},
		{"config file from env", nil, []string{"KUBERNIX_CONFIG=" + file}, func(c Config) string {
			if c.Name != "fromfile" {
				return "KUBERNIX_CONFIG not read"
			}
			return ""
		}},
		{"--root alias", []string{"--root", dir}, nil, func(c Config) string {
			if c.StateDir != dir {
				return "--root not an alias of --state-dir"
			}
			return ""
		}},
		{"derived state dir", []string{"--name", "abc"}, nil, func(c Config) string {
			if filepath.Base(c.StateDir) != "abc" || !filepath.IsAbs(c.StateDir) {
				return "state dir not derived from name: " + c.StateDir
			}
			return ""
		}},
		{"bundle dir from env, absolute", nil, []string{"KUBERNIX_BUNDLE_DIR=rel/bundle"}, func(c Config) string {
			if wd, _ := os.Getwd(); c.BundleDir != filepath.Join(wd, "rel/bundle") {
				return "KUBERNIX_BUNDLE_DIR not read as an absolute path: " + c.BundleDir
			}
			return ""
		}},
		{"bundle dir flag over env", []string{"--bundle-dir", dir}, []string{"KUBERNIX_BUNDLE_DIR=/elsewhere"}, func(c Config) string {
			if c.BundleDir != dir {
				return "--bundle-dir not applied over env"
			}
			return ""
		}},
		{"explicit cluster CIDR kept", []string{"--cluster-cidr", "10.99.0.0/16"}, nil, func(c Config) string {
			if c.ClusterCIDR != "10.99.0.0/16" || c.ServiceCIDR != "10.10.16.0/20" {
				return "explicit CIDR lost"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(c); msg != "" {
				t.Errorf("%s: got %+v", msg, c)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.toml")
	os.WriteFile(unknown, []byte("nodez = 3\n"), 0o600)
	broken := filepath.Join(dir, "broken.toml")
	os.WriteFile(broken, []byte("nodes = \n"), 0o600)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown key", []string{"--config", unknown}, nil, "nodez"},
		{"syntax", []string{"--config", broken}, nil, "broken.toml:1"},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.toml")}, nil, "nope.toml"},
		{"bad env int", nil, []string{"KUBERNIX_NODES=three"}, "KUBERNIX_NODES"},
		{"bad env bool", nil, []string{"KUBERNIX_NO_SHELL=maybe"}, "KUBERNIX_NO_SHELL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, tt.env)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

// TestNetworkPolicySetting: network_policy is on by default and turned
// off by the file, KUBERNIX_NETWORK_POLICY or --network-policy=false, in
// the usual precedence; a bare --network-policy turns it on again.
func TestNetworkPolicySetting(t *testing.T) {
	dir := t.TempDir()
	off := filepath.Join(dir, "off.toml")
	if err := os.WriteFile(off, []byte("network_policy = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     []string
		want    bool
		wantErr string
	}{
		{name: "default", want: true},
		{name: "file", args: []string{"--config", off}, want: false},
		{name: "env", env: []string{"KUBERNIX_NETWORK_POLICY=false"}, want: false},
		{name: "env over file", args: []string{"--config", off}, env: []string{"KUBERNIX_NETWORK_POLICY=1"}, want: true},
		{name: "flag", args: []string{"--network-policy=false"}, want: false},
		{name: "flag over env", args: []string{"--network-policy"}, env: []string{"KUBERNIX_NETWORK_POLICY=false"}, want: true},
		{name: "bad env", env: []string{"KUBERNIX_NETWORK_POLICY=maybe"}, wantErr: "KUBERNIX_NETWORK_POLICY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.args, tt.env)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want ErrInvalid mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.NetworkPolicy != tt.want {
				t.Errorf("NetworkPolicy = %v, want %v", c.NetworkPolicy, tt.want)
			}
		})
	}
}

// TestIPv6ProcessExecutor: an IPv6 cluster of the process executor is
// refused as root (its node would be in the host's namespaces) and
// allowed rootless (they are rootlesskit's).
func TestIPv6ProcessExecutor(t *testing.T) {
	for _, host := range []bool{true, false} {
		t.Run(fmt.Sprintf("host namespaces %v", host), func(t *testing.T) {
			was := inHostNamespaces
			inHostNamespaces = func() bool { return host }
			t.Cleanup(func() { inHostNamespaces = was })
			c, err := load(t, []string{"--ip-family", "dual", "--executor", "process"}, nil)
			if err == nil {
				err = c.Validate()
			}
			if refused := err != nil && strings.Contains(err.Error(), "--ip-family dual: needs --executor container as root"); refused != host || (err != nil && !refused) {
				t.Errorf("load: %v; want refused: %v", err, host)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 120-len("/tmp/")-len("/nodes/kubernix-node-0/containerd.sock"))
	tests := []struct {
		name string
		args []string
		want []string // substrings, each must appear; nil means valid
	}{
		{"defaults valid", nil, nil},
		{"three nodes valid", []string{"--nodes", "3"}, nil},
		{"nodes 0", []string{"--nodes", "0"}, []string{"--nodes 0"}},
		{"nodes too many", []string{"--nodes", "51"}, []string{"--nodes 51"}},
		{"bad prefix", []string{"--cluster-cidr", "10.0.0.0/33"}, []string{"--cluster-cidr \"10.0.0.0/33\": not a CIDR"}},
		{"overlap", []string{"--service-cidr", "10.10.128.0/20"}, []string{"--service-cidr 10.10.128.0/20 and --cluster-cidr 10.10.128.0/17 overlap"}},
		{"host bits", []string{"--service-cidr", "10.10.16.5/20"}, []string{"host bits set"}},
		{"ipv6 in an IPv4 flag", []string{"--cluster-cidr", "fd00::/48"}, []string{"--cluster-cidr \"fd00::/48\": only IPv4", "for IPv6 use --ip-family dual (or ipv6) and --cidr6"}},
		{"dual", []string{"--ip-family", "dual"}, nil},
		{"ipv6 with a range", []string{"--ip-family", "ipv6", "--cidr6", "fd12:3456:789a::/48"}, nil},
		{"bad family", []string{"--ip-family", "v6"}, []string{`--ip-family "v6": must be ipv4, ipv6 or dual`}},
		{"cidr6 of an IPv4 cluster", []string{"--cidr6", "fd12::/48"}, []string{"--cidr6 fd12::/48: an IPv4 cluster has no IPv6 range; add --ip-family dual"}},
		{"cidr6 not ULA", []string{"--ip-family", "dual", "--cidr6", "2001:db8::/48"}, []string{"--cidr6 2001:db8::/48: not a unique local range", "inside fc00::/7"}},
		{"cidr6 link-local", []string{"--ip-family", "dual", "--cidr6", "fe80::/48"}, []string{"--cidr6 fe80::/48: not a unique local range"}},
		{"cidr6 too small", []string{"--ip-family", "dual", "--cidr6", "fd12:3456:789a::/64"}, []string{"--cidr6 fd12:3456:789a::/64: must be /32 to /56"}},
		{"cidr6 too large", []string{"--ip-family", "dual", "--cidr6", "fd00::/8"}, []string{"--cidr6 fd00::/8: must be /32 to /56"}},
		{"cidr6 host bits", []string{"--ip-family", "dual", "--cidr6", "fd12::1/48"}, []string{"host bits set; did you mean fd12::/48?"}},
		{"cidr6 IPv4", []string{"--ip-family", "dual", "--cidr6", "10.0.0.0/16"}, []string{"not an IPv6 range"}},
		{"cidr6 not a CIDR", []string{"--ip-family", "dual", "--cidr6", "fd12::"}, []string{`--cidr6 "fd12::": not a CIDR`}},
		{"small cidr", []string{"--cidr", "10.10.0.0/24"}, []string{"--cidr 10.10.0.0/24", "--node-cidr: missing"}},
		{"bad name", []string{"--name", "Not_A_Label"}, []string{"--name \"Not_A_Label\""}},
		{"bad executor", []string{"--executor", "vm"}, []string{"--executor \"vm\""}},
		{"unknown release", []string{"--kubernetes-version", "v1.20"}, []string{"--kubernetes-version \"v1.20\": kubernix runs v1.37.2"}},
		{"release not a version", []string{"--kubernetes-version", "latest"}, []string{"--kubernetes-version \"latest\""}},
		{"minor", []string{"--kubernetes-version", "v1.37"}, nil},
		{"process multi", []string{"--executor", "process", "--nodes", "2"}, []string{"supports 1 node"}},
		{"bad addon", []string{"--addons", "coredns,dashboard"}, []string{"unknown addon \"dashboard\""}},
		{"ingress without loadbalancer", []string{"--addons", "coredns,ingress"}, []string{"--addons coredns,ingress: ingress serves on its LoadBalancer Service's address, which needs the loadbalancer addon"}},
		{"ingress", []string{"--addons", "coredns,ingress,loadbalancer"}, nil},
		{"bad port", []string{"--apiserver-port", "70000"}, []string{"--apiserver-port 70000"}},
		{"bad registry port", []string{"--registry-port", "70000"}, []string{"--registry-port 70000: must be between 1 and 65535, or 0"}},
		{"negative registry port", []string{"--registry-port", "-1"}, []string{"--registry-port -1"}},
		{"registry on the apiserver port", []string{"--registry-port", "6443"}, []string{"--registry-port 6443: the apiserver listens there"}},
		{"no registry", []string{"--registry-port", "0"}, nil},
		{"mirrors", []string{"--registry-mirrors", "registry.k8s.io,docker.io,myhost:5000"}, nil},
		{"mirror with scheme", []string{"--registry-mirrors", "https://registry.k8s.io"}, []string{`--registry-mirrors "https://registry.k8s.io": the port after ':' must be a number`}},
		{"mirror with path", []string{"--registry-mirrors", "registry.k8s.io/e2e"}, []string{`--registry-mirrors "registry.k8s.io/e2e": not a registry host name`}},
		{"mirror bad port", []string{"--registry-mirrors", "myhost:0"}, []string{`--registry-mirrors "myhost:0": the port after ':'`}},
		{"mirror upper case", []string{"--registry-mirrors", "Docker.io"}, []string{`--registry-mirrors "Docker.io": not a registry host name`}},
		{"mirror twice", []string{"--registry-mirrors", "docker.io,docker.io"}, []string{`--registry-mirrors "docker.io": given twice`}},
		{"mirror of the local registry", []string{"--registry-mirrors", "localhost:5001"}, []string{`--registry-mirrors "localhost:5001": the local registry itself`}},
		{"mirrors without registry port", []string{"--registry-mirrors", "docker.io", "--registry-port", "0"}, []string{"--registry-mirrors docker.io: the mirrors are served by the local registry, which this config does not run"}},
		{"mirrors without registry addon", []string{"--registry-mirrors", "docker.io", "--addons", "coredns"}, []string{"--registry-mirrors docker.io: the mirrors are served by the local registry", "add registry to --addons"}},
		{"cgroup ok", []string{"--cgroup-parent", "/kubernix-1000"}, nil},
		{"cgroup rel", []string{"--cgroup-parent", "kubernix-1000"}, []string{"--cgroup-parent \"kubernix-1000\": must be an absolute cgroup path"}},
		{"cgroup dots", []string{"--cgroup-parent", "/a/../b"}, []string{"--cgroup-parent \"/a/../b\""}},
		{"bad log", []string{"--log-level", "loud", "--log-format", "xml"}, []string{"--log-level", "--log-format"}},
		{"mask size", []string{"--node-cidr-mask-size", "8"}, []string{"--node-cidr-mask-size 8"}},
		{"too many for plan", []string{"--cidr", "10.200.0.0/20", "--nodes", "9"}, []string{"room for 8 nodes"}},
		{"long socket", []string{"--state-dir", long}, []string{"--state-dir " + long, "140 bytes long, over the kernel's limit of 107 bytes", "choose a --state-dir of at most 49 bytes"}},
		{"long name", []string{"--name", strings.Repeat("n", 60)}, []string{`--name "` + strings.Repeat("n", 60) + `" (60 bytes) makes socket path`, "use a --name of at most"}},
		{"public cidr", []string{"--cidr", "8.8.0.0/16"}, []string{"--cidr 8.8.0.0/16: not a private range", "e.g. the default 10.10.0.0/16"}},
		{"link-local cidr", []string{"--cidr", "169.254.0.0/16"}, []string{"--cidr 169.254.0.0/16: not a private range"}},
		{"cidr 0/4", []string{"--cidr", "0.0.0.0/4"}, []string{"--cidr 0.0.0.0/4: not a private range"}},
		{"multicast cidr", []string{"--cidr", "224.0.0.0/16"}, []string{"--cidr 224.0.0.0/16: not a private range"}},
		{"straddles 172.16/12", []string{"--cidr", "172.0.0.0/11"}, []string{"--cidr 172.0.0.0/11: not a private range"}},
		{"pool in --cidr", []string{"--loadbalancer-cidr", "10.10.64.0/24"}, nil},
		{"pool overlaps nodes", []string{"--loadbalancer-cidr", "10.10.0.0/20"}, []string{"--node-cidr 10.10.0.0/24 and --loadbalancer-cidr 10.10.0.0/20 overlap"}},
		{"pool overlaps services", []string{"--loadbalancer-cidr", "10.10.16.0/24"}, []string{"--service-cidr 10.10.16.0/20 and --loadbalancer-cidr 10.10.16.0/24 overlap"}},
		{"pool overlaps pods", []string{"--loadbalancer-cidr", "10.10.200.0/24"}, []string{"--cluster-cidr 10.10.128.0/17 and --loadbalancer-cidr 10.10.200.0/24 overlap"}},
		{"pool outside --cidr", []string{"--loadbalancer-cidr", "10.11.0.0/24"}, []string{"--loadbalancer-cidr 10.11.0.0/24: outside --cidr 10.10.0.0/16"}},
		{"pool too small", []string{"--loadbalancer-cidr", "10.10.64.0/31"}, []string{"--loadbalancer-cidr 10.10.64.0/31: must be /30 or larger"}},
		{"pool not a CIDR", []string{"--loadbalancer-cidr", "10.10.64.0"}, []string{`--loadbalancer-cidr "10.10.64.0": not a CIDR`}},
		{"public service cidr", []string{"--service-cidr", "8.8.0.0/20"}, []string{"--service-cidr 8.8.0.0/20: not a private range", "leave it unset"}},
		{"cgnat cidr", []string{"--cidr", "100.64.0.0/16"}, nil},
		{"192.168 cidr", []string{"--cidr", "192.168.0.0/16"}, nil},
		{"colon in state dir", []string{"--state-dir", "/var/tmp/a:b"}, []string{`--state-dir "/var/tmp/a:b": contains ":"`}},
		{"colon in bin dir", []string{"--bin-dir", "/var/tmp/a:b"}, []string{`--bin-dir "/var/tmp/a:b": contains ":"`}},
		{"root state dir", []string{"--state-dir", "/"}, []string{"--state-dir: / is a system directory"}},
		{"usr state dir", []string{"--state-dir", "/usr"}, []string{"--state-dir: /usr is a system directory"}},
		{"var/lib state dir", []string{"--state-dir", "/var/lib/"}, []string{"--state-dir: /var/lib is a system directory"}},
		{"bundle dir without bin", []string{"--bundle-dir", "/nonexistent/kxi-bundle"}, []string{"--bundle-dir /nonexistent/kxi-bundle: no bin directory in it"}},
		{"bundle with bin", []string{"--bundle-dir", "/usr"}, nil},
		{"colon in bundle dir", []string{"--bundle-dir", "/var/tmp/a:b"}, []string{`--bundle-dir "/var/tmp/a:b": contains ":"`}},
		{"mnt state dir", []string{"--state-dir", "/mnt"}, []string{"--state-dir: /mnt is a system directory"}},
		{"state dir under a file", []string{"--state-dir", "/etc/hostname/x"}, []string{"not a directory"}},
		{"all at once", []string{"--nodes", "0", "--cluster-cidr", "10.0.0.0/33", "--state-dir", long},
			[]string{"--nodes 0", "10.0.0.0/33", "140 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, append([]string{"--state-dir", t.TempDir()}, tt.args...), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v\nwant it to mention %q", err, w)
				}
			}
		})
	}
}

func TestValidateWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	c, err := load(t, []string{"--state-dir", dir, "--nodes", "0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Validate() == nil {
		t.Fatal("want an error for --nodes 0")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Validate created %s (stat err %v)", dir, err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	c, err := load(t, []string{"--state-dir", t.TempDir(), "--nodes", "3", "--addons", ""}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "k.toml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := load(t, []string{"--config", file}, nil)
	if err != nil {
		t.Fatalf("re-reading %s:\n%s\n%v", file, b, err)
	}
	if back.String() != c.String() {
		t.Errorf("round trip changed the config:\n%s\nvs\n%s", c, back)
	}
}
