package preflight

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	"github.com/kubernix/kubernix/pkg/process"
)

// TestHostPorts: the ports preflight checks are those the descriptions
// declare, in their order, except a sandboxed node's.
func TestHostPorts(t *testing.T) {
	control := []string{"etcd (client):2379", "etcd (peer):2380", "kube-apiserver:7443", "kube-controller-manager:10257", "kube-scheduler:10259"}
	addons := []string{"cloud-controller (healthz):10258", "registry:5001", "registry-localhost:5001"}
	node := []string{"kubelet@kubernix-node-0:10250", "kubelet@kubernix-node-0 (healthz):10248",
		"kube-proxy@kubernix-node-0 (healthz):10256", "kube-proxy@kubernix-node-0 (metrics):10249",
		"netpol-agent@kubernix-node-0 (healthz):10263"}
	tests := []struct {
		name     string
		nodes    int
		executor string
		want     []string
	}{
		{"one node, sandboxed by default", 1, config.ExecutorAuto, append(slices.Clone(control), addons...)},
		{"explicit process executor", 1, config.ExecutorProcess, slices.Concat(control, node, addons)},
		{"sandboxed nodes bind in their own namespaces", 3, config.ExecutorAuto, append(slices.Clone(control), addons...)},
		{"one sandboxed node", 1, config.ExecutorContainer, append(slices.Clone(control), addons...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.CIDR = "10.61.0.0/16"
			cfg.APIServerPort = 7443
			cfg.Nodes, cfg.Executor = tt.nodes, tt.executor
			var got []string
			for _, hp := range plantest.HostPorts(t, plantest.Of(t, cfg)) {
				wantIP := netip.MustParseAddr("10.61.0.1")
				if hp.Component == "registry-localhost" {
					wantIP = netip.MustParseAddr("127.0.0.1")
				}
				if hp.IP != wantIP {
					t.Errorf("%s binds %s, want %s", hp.Component, hp.IP, wantIP)
				}
				if wantFlag := map[string]string{"kube-apiserver": "--apiserver-port", "registry": "--registry-port",
					"registry-localhost": "--registry-port"}[hp.Component]; hp.Flag != wantFlag {
					t.Errorf("%s: flag %q, want %q", hp.Component, hp.Flag, wantFlag)
				}
				got = append(got, hp.Component+":"+strconv.Itoa(hp.Port))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("HostPorts = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPortProblem: a listener takes a port unless its process is the
// cluster's own (recorded in the state dir), e.g. left by a killed
// supervisor.
func TestPortProblem(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	hp := plan.HostPort{Component: "etcd (client)", IP: netip.MustParseAddr("127.0.0.1"), Port: port}

	err = portProblem(hp, nil)
	want := "port " + strconv.Itoa(port) + " is in use, so etcd (client) cannot listen on 127.0.0.1: a listener on " + ln.Addr().String() + " (pid " + strconv.Itoa(os.Getpid()) + ","
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "stop it, or choose another --cidr") {
		t.Fatalf("portProblem = %v, want it to mention %q and --cidr", err, want)
	}
	hp.Flag = "--apiserver-port"
	if err := portProblem(hp, nil); err == nil || !strings.Contains(err.Error(), "choose another --apiserver-port") {
		t.Errorf("portProblem with a flag = %v, want it to name the flag", err)
	}
	free := hp
	free.IP = netip.MustParseAddr("127.0.0.2")
	if err := portProblem(free, nil); err != nil {
		t.Errorf("portProblem on another address = %v, want nil", err)
	}

	paths := config.Paths{State: t.TempDir()}
	if err := process.RecordSelf(paths.Run(config.ControlPlaneScope, "etcd"), "etcd", config.ControlPlaneScope); err != nil {
		t.Fatal(err)
	}
	ours := recordedPIDs(paths)
	if !ours[os.Getpid()] || len(ours) != 1 {
		t.Fatalf("recordedPIDs = %v, want just this process (%d)", ours, os.Getpid())
	}
	if err := portProblem(hp, ours); err != nil {
		t.Errorf("portProblem for the cluster's own listener = %v, want nil", err)
	}
}

func TestOverlapProblems(t *testing.T) {
	use := func(pr, desc string) network.HostUse {
		return network.HostUse{Prefix: netip.MustParsePrefix(pr), Desc: desc}
	}
	tests := []struct {
		name string
		args map[string]string // config fields: cidr, node, service, cluster
		uses []network.HostUse
		want []string // one substring per problem, in order
	}{
		{"free", nil, []network.HostUse{use("192.168.1.0/24", "address 192.168.1.5/24 on link eth0")}, nil},
		{"LAN in the pod range", map[string]string{"cidr": "192.168.0.0/16"},
			[]network.HostUse{use("192.168.200.0/24", "address 192.168.200.5/24 on link eth0")},
			[]string{"--cluster-cidr 192.168.128.0/17 (inside --cidr 192.168.0.0/16) overlaps address 192.168.200.5/24 on link eth0 on this host; choose a free range, e.g. --cidr 10.10.0.0/16"}},
		{"default range taken by a VPN route", nil,
			[]network.HostUse{use("10.10.0.0/16", `route "10.10.0.0/16 dev tun0"`)},
			[]string{`--node-cidr 10.10.0.0/24 (inside --cidr 10.10.0.0/16) overlaps route "10.10.0.0/16 dev tun0" on this host; choose a free range, e.g. --cidr 10.11.0.0/16`}},
		{"only the whole range", nil,
			[]network.HostUse{use("10.10.64.0/24", "address 10.10.64.1/24 on link eth1")},
			[]string{"--cidr 10.10.0.0/16 overlaps address 10.10.64.1/24 on link eth1 on this host; choose a free range, e.g. --cidr 10.11.0.0/16"}},
		{"explicit service CIDR outside --cidr", map[string]string{"service": "10.11.0.0/20"},
			[]network.HostUse{use("10.11.0.0/24", "address 10.11.0.1/24 on link eth1")},
			[]string{"--service-cidr 10.11.0.0/20 overlaps address 10.11.0.1/24 on link eth1 on this host; choose a free range, e.g. --service-cidr 10.11.16.0/20"}},
		{"many", map[string]string{"cidr": "10.20.0.0/16"},
			[]network.HostUse{use("10.20.0.0/24", "a"), use("10.20.0.0/25", "b"), use("10.20.0.128/25", "c"), use("10.20.0.7/32", "d"), use("10.20.0.8/32", "e")},
			[]string{"--node-cidr 10.20.0.0/24 (inside --cidr 10.20.0.0/16) overlaps a, b, c, and 2 more on this host"}},
		{"two ranges", map[string]string{"cidr": "10.20.0.0/16"},
			[]network.HostUse{use("10.20.0.0/24", "a"), use("10.20.16.0/24", "b")},
			[]string{"--node-cidr 10.20.0.0/24", "--service-cidr 10.20.16.0/20"}},
		{"nothing free", nil,
			[]network.HostUse{use("10.0.0.0/8", "a"), use("172.16.0.0/12", "b"), use("192.168.0.0/16", "c"), use("100.64.0.0/10", "d")},
			[]string{"choose a range that no address or route of this host overlaps"}},
		{"IPv6 range on a host link", map[string]string{"family": "dual", "cidr6": "fd00::/48"},
			[]network.HostUse{use("fd00::/64", "address fd00::2/64 on link eth0")},
			[]string{"--cidr6 fd00::/48 overlaps address fd00::2/64 on link eth0 on this host; choose another unique local range, e.g. fd"}},
		{"IPv6 elsewhere, IPv4 cluster", nil, []network.HostUse{use("fd00::/64", "address fd00::2/64 on link eth0")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.StateDir = t.TempDir()
			if v, ok := tt.args["cidr"]; ok {
				cfg.CIDR = v
			}
			cfg.NodeCIDR, cfg.ServiceCIDR, cfg.ClusterCIDR = tt.args["node"], tt.args["service"], tt.args["cluster"]
			if v, ok := tt.args["family"]; ok {
				cfg.IPFamily, cfg.CIDR6 = v, tt.args["cidr6"]
			}
			cfg.Resolve()
			n, err := cfg.Network()
			if err != nil {
				t.Fatal(err)
			}
			errs := overlapProblems(cfg, n, tt.uses)
			if len(errs) != len(tt.want) {
				t.Fatalf("overlapProblems = %v, want %d problems", errs, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d = %v\nwant it to mention %q", i, errs[i], w)
				}
			}
		})
	}
}
