package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dualCIDR6 is TestDualStack's IPv6 range: its node network is the first
// /64, the service CIDR and LoadBalancer pool the first /112 of the second
// and third, the pod CIDRs /64s of the upper half (config.Network).
const dualCIDR6 = "fd00:e2e:d0a1::/48"

// dualService is a RequireDualStack LoadBalancer Service in front of
// netexecManifest's pods.
const dualService = `apiVersion: v1
kind: Service
metadata: {name: netexec-dual, namespace: default}
spec:
  type: LoadBalancer
  ipFamilyPolicy: RequireDualStack
  selector: {app: netexec}
  ports: [{port: 8080, targetPort: 8080}]
`

// TestDualStack brings up a 3-node dual-stack cluster (--ip-family dual)
// and checks what issue #28 asks of it: every node and pod has an address
// of each family, pods reach pods on other nodes over both, a
// RequireDualStack Service answers on both ClusterIPs, by name (A and
// AAAA) and, as a LoadBalancer, on an address of each family from the
// host; a NetworkPolicy refuses a pod's traffic over both families; a
// LAN neighbour with an IPv6 route to the cluster via the host reaches
// nothing of it; and down leaves no IPv6 address, route or table.
func TestDualStack(t *testing.T) {
	e := newEnv(t, "e2e-dual", "10.225.0.0/16", "--nodes", "3", "--ip-family", "dual", "--cidr6", dualCIDR6)
	e.cidr6 = dualCIDR6
	e.parallelAt(weightLong)
	nodes := []string{"e2e-dual-node-0", "e2e-dual-node-1", "e2e-dual-node-2"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))

	t.Run("every node has an address and a pod CIDR of each family", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.spec.podCIDRs[*]}{"\n"}{end}`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(nodes) {
			t.Fatalf("nodes:\n%s", out)
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 5 || !isV4(f[1]) || !inRange(f[2], dualCIDR6) || !isV4(f[3]) || !inRange(f[4], dualCIDR6) {
				t.Errorf("node %q: want an IPv4 and an IPv6 InternalIP (in %s), then an IPv4 and an IPv6 pod CIDR", l, dualCIDR6)
			}
		}
		var st struct {
			IPFamily string `json:"ipFamily"`
			Nodes    []struct {
				InternalIPs []string `json:"internalIPs"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(e.mustKubernix(ctx, "status", "-o", "json")), &st); err != nil || st.IPFamily != "dual" || len(st.Nodes) != len(nodes) {
			t.Fatalf("status -o json: ipFamily %q, %d nodes, %v; want dual, %d nodes", st.IPFamily, len(st.Nodes), err, len(nodes))
		}
		for _, n := range st.Nodes {
			if len(n.InternalIPs) != 2 || !isV4(n.InternalIPs[0]) || !inRange(n.InternalIPs[1], dualCIDR6) {
				t.Errorf("status -o json: a node's internalIPs %q; want an IPv4 then an IPv6 one", n.InternalIPs)
			}
		}
	})

	e.apply(ctx, netexecManifest(6, true)+"---\n"+dualService)
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
	type pod struct{ name, ip, ip6, node string }
	var pods []pod
	out := e.mustKubectl(ctx, "get", "pods", "-l", "app=netexec", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIPs[*].ip}{"\n"}{end}`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 4 {
			pods = append(pods, pod{name: f[0], node: f[1], ip: f[2], ip6: f[3]})
		} else {
			t.Errorf("pod %q: want one address of each family", l)
		}
	}
	t.Run("every pod has an address of each family", func(t *testing.T) {
		for _, p := range pods {
			if !isV4(p.ip) || !inRange(p.ip6, dualCIDR6) {
				t.Errorf("pod %s: addresses %s %s, want IPv4 then IPv6 in %s", p.name, p.ip, p.ip6, dualCIDR6)
			}
		}
	})
	// curl from a pod: -g takes [v6]:port literally.
	get := func(from, host string) (string, error) {
		return e.kubectl(ctx, "exec", from, "--", "curl", "-g", "-s", "-m", "3", "http://"+net.JoinHostPort(host, "8080")+"/hostname")
	}
	t.Run("pod to pod across nodes over both families", func(t *testing.T) {
		for _, from := range pods {
			for _, to := range pods {
				if to.node == from.node {
					continue
				}
				for _, ip := range []string{to.ip, to.ip6} {
					eventually(t, 20*time.Second, from.node+" -> "+ip, func() error {
						body, err := get(from.name, ip)
						if err == nil && strings.TrimSpace(body) != to.name {
							return fmt.Errorf("got %q from %s, want %s", body, ip, to.name)
						}
						return err
					})
				}
				break
			}
		}
	})

	clusterIPs := strings.Fields(e.mustKubectl(ctx, "get", "svc", "netexec-dual", "-o", "jsonpath={.spec.clusterIPs[*]}"))
	t.Run("RequireDualStack Service on both ClusterIPs and by name", func(t *testing.T) {
		if len(clusterIPs) != 2 || !isV4(clusterIPs[0]) || !inRange(clusterIPs[1], dualCIDR6) {
			t.Fatalf("clusterIPs %v, want an IPv4 then an IPv6 one", clusterIPs)
		}
		for _, ip := range clusterIPs {
			eventually(t, 20*time.Second, "ClusterIP "+ip, func() error {
				body, err := get("client", ip)
				if err == nil && !strings.HasPrefix(body, "netexec-") {
					return fmt.Errorf("got %q", body)
				}
				return err
			})
		}
		for i, qtype := range []string{"A", "AAAA"} {
			eventually(t, 20*time.Second, qtype+" record", func() error {
				out, err := e.kubectl(ctx, "exec", "client", "--", "dig", "+short", "netexec-dual.default.svc.cluster.local.", qtype)
				if err == nil && strings.TrimSpace(out) != clusterIPs[i] {
					return fmt.Errorf("dig %s answered %q, want %s", qtype, out, clusterIPs[i])
				}
				return err
			})
		}
	})

	var lbIPs []string
	t.Run("LoadBalancer: an address of each family, reached from the host", func(t *testing.T) {
		eventually(t, 60*time.Second, "two ingress IPs", func() error {
			lbIPs = strings.Fields(e.mustKubectl(ctx, "get", "svc", "netexec-dual", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}"))
			if len(lbIPs) != 2 {
				return fmt.Errorf("ingress IPs %v", lbIPs)
			}
			return nil
		})
		if !isV4(lbIPs[0]) || !inRange(lbIPs[1], dualCIDR6) {
			t.Fatalf("ingress IPs %v, want an IPv4 then an IPv6 one", lbIPs)
		}
		for _, ip := range lbIPs {
			hostReachesNetexec(ctx, t, 30*time.Second, "LoadBalancer IP "+ip, net.JoinHostPort(ip, "8080"))
		}
	})

	t.Run("NodePort from the host on every node IPv6 address", func(t *testing.T) {
		nodePort := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec-dual", "-o", "jsonpath={.spec.ports[0].nodePort}"))
		for _, ip := range nodeIPs6(ctx, t, e) {
			hostReachesNetexec(ctx, t, 20*time.Second, "NodePort on "+ip, net.JoinHostPort(ip, nodePort))
		}
	})

	t.Run("a NetworkPolicy holds over both families", func(t *testing.T) {
		e.apply(ctx, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-netexec, namespace: default}
spec:
  podSelector: {matchLabels: {app: netexec}}
  policyTypes: [Ingress]
`)
		to := pods[0]
		for _, ip := range []string{to.ip, to.ip6} {
			eventually(t, 20*time.Second, "client refused by "+ip, func() error {
				if body, err := get("client", ip); err == nil {
					return fmt.Errorf("client still reaches %s: %q", ip, body)
				}
				return nil
			})
		}
		e.mustKubectl(ctx, "delete", "networkpolicy", "deny-netexec")
		for _, ip := range []string{to.ip, to.ip6} {
			eventually(t, 20*time.Second, "client reaches "+ip+" again", func() error {
				_, err := get("client", ip)
				return err
			})
		}
	})

	t.Run("a neighbour with an IPv6 route via the host reaches nothing", func(t *testing.T) {
		nb := newNeighbour(t, e.cidr, dualCIDR6)
		defer nb.remove()
		bridge6 := netip.MustParsePrefix(dualCIDR6).Addr().Next() // the host's bridge address
		l, err := net.Listen("tcp", net.JoinHostPort(bridge6.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		targets := []string{l.Addr().String(), net.JoinHostPort(pods[0].ip6, "8080"), net.JoinHostPort(clusterIPs[1], "8080"), net.JoinHostPort(lbIPs[1], "8080")}
		for _, ip := range nodeIPs6(ctx, t, e) {
			targets = append(targets, net.JoinHostPort(ip, "10250"))
		}
		for _, addr := range targets {
			if err := dial(nb.ns, addr); err == nil {
				t.Errorf("the neighbour reached %s", addr)
			}
		}
	})

	t.Run("down leaves no IPv6 address, route or table", func(t *testing.T) {
		e.mustKubernix(ctx, "down")
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Fatalf("down left:\n%s", strings.Join(left, "\n"))
		}
	})
}

// TestIPv6Only brings up a 3-node IPv6 cluster (--ip-family ipv6) and
// runs TestMultiNode's workload checks and TestSingleNode's kubectl
// ones on it, after checking that nodes, pods and Services have IPv6
// addresses only; status is healthy and down leaves nothing, IPv6
// routes included.
func TestIPv6Only(t *testing.T) {
	const cidr6 = "fd00:e2e:6::/48"
	e := newEnv(t, "e2e-ipv6", "10.226.0.0/16", "--nodes", "3", "--ip-family", "ipv6", "--cidr6", cidr6)
	e.cidr6 = cidr6
	e.parallelAt(weightLong)
	nodes := []string{"e2e-ipv6-node-0", "e2e-ipv6-node-1", "e2e-ipv6-node-2"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))

	t.Run("nodes, pods and Services of IPv6 only", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.addresses[?(@.type=="InternalIP")].address} {.spec.podCIDRs[*]}{"\n"}{end}`)
		out += e.mustKubectl(ctx, "get", "pods", "-A", "-o", `jsonpath={range .items[*]}{.status.podIPs[*].ip}{"\n"}{end}`)
		out += e.mustKubectl(ctx, "get", "svc", "-A", "-o", `jsonpath={range .items[*]}{.spec.clusterIPs[*]}{"\n"}{end}`)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			for _, a := range strings.Fields(l) {
				if !inRange(a, cidr6) {
					t.Errorf("%q: %s is not in %s", l, a, cidr6)
				}
			}
		}
	})
	checkWorkloads(ctx, t, e, nodes)
	checkKubectlTools(ctx, t, e)
	t.Run("status healthy, down leaves nothing", func(t *testing.T) {
		if out, code := e.kubernix(ctx, "status"); code != 0 {
			t.Errorf("status exited %d:\n%s", code, out)
		}
		e.mustKubernix(ctx, "down")
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Fatalf("down left:\n%s", strings.Join(left, "\n"))
		}
	})
}

// nodeIPs6 are the IPv6 InternalIPs of e's nodes.
func nodeIPs6(ctx context.Context, t *testing.T, e *env) []string {
	t.Helper()
	var out []string
	for _, ip := range strings.Fields(e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={.items[*].status.addresses[?(@.type=="InternalIP")].address}`)) {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is6() {
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		t.Fatal("no node has an IPv6 InternalIP")
	}
	return out
}

// isV4 reports whether s is an IPv4 address or prefix.
func isV4(s string) bool {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().Is4()
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// inRange reports whether s, an address or a prefix, lies in the prefix
// cidr.
func inRange(s, cidr string) bool {
	r := netip.MustParsePrefix(cidr)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Bits() >= r.Bits() && r.Contains(p.Addr())
	}
	a, err := netip.ParseAddr(s)
	return err == nil && r.Contains(a)
}

// TestRootlessIPv6: an ordinary user's clusters of each IP family with
// IPv6 (in rootlesskit's namespaces): a dual-stack one of one node (the
// process executor) and an IPv6 one of two (the container executor). A
// pod has an address of each family of its cluster, a Service (dual:
// RequireDualStack) answers from a pod on each ClusterIP, a LoadBalancer
// Service gets an address of each pool and one of them (the IPv4 one,
// else the IPv6 one) is published on the host's 127.0.0.1; down leaves
// nothing.
func TestRootlessIPv6(t *testing.T) {
	rootlessParallel(t)
	for _, tt := range []struct {
		family, nodes, cidr, cidr6, port string
	}{
		{"dual", "1", "10.227.0.0/16", "fd00:e2e:4d::/48", "18091"},
		{"ipv6", "2", "10.228.0.0/16", "fd00:e2e:46::/48", "18092"},
	} {
		t.Run(tt.family, func(t *testing.T) {
			rc := newRootlessCluster(t, "kxrl"+tt.family, "kx6-"+tt.family)
			rc.cidr = tt.cidr
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			if out, code := rc.u.kubernix(ctx, "up", "--detach", "--name", rc.name, "--cidr", rc.cidr, "--nodes", tt.nodes,
				"--ip-family", tt.family, "--cidr6", tt.cidr6); code != 0 {
				log, _ := os.ReadFile(filepath.Join(rc.state, "logs", "supervisor", "supervisor.log"))
				t.Fatalf("up --detach as %s exited %d:\n%s\nsupervisor log:\n%s", rc.u.name, code, out, log)
			}
			checkRootlessFamily(ctx, t, rc, tt.family, tt.cidr6, tt.port)
		})
	}
}

// checkRootlessFamily runs TestRootlessIPv6's checks on rc, a cluster of
// family with the IPv6 range cidr6, its LoadBalancer Service on port.
func checkRootlessFamily(ctx context.Context, t *testing.T, rc *rootlessCluster, family, cidr6, port string) {
	u := rc.u
	svc := strings.Replace(dualService, "port: 8080,", "port: "+port+",", 1)
	wantIPs := func(ips []string) bool { return len(ips) == 2 && isV4(ips[0]) && inRange(ips[1], cidr6) }
	if family == "ipv6" {
		svc = strings.Replace(svc, "  ipFamilyPolicy: RequireDualStack\n", "", 1)
		wantIPs = func(ips []string) bool { return len(ips) == 1 && inRange(ips[0], cidr6) }
	}
	manifest := filepath.Join(u.home, "family.yaml")
	if err := os.WriteFile(manifest, []byte(netexecManifest(1, false)+"---\n"+svc), 0o644); err != nil {
		t.Fatal(err)
	}
	u.mustKubectl(ctx, rc.kctx, "apply", "-f", manifest)
	u.mustKubectl(ctx, rc.kctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
	u.mustKubectl(ctx, rc.kctx, "wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
	if ips := strings.Fields(u.mustKubectl(ctx, rc.kctx, "get", "pods", "-l", "app=netexec", "-o", "jsonpath={.items[0].status.podIPs[*].ip}")); !wantIPs(ips) {
		t.Errorf("pod IPs %v: want one of each family of the cluster (IPv6 in %s)", ips, cidr6)
	}
	ips := strings.Fields(u.mustKubectl(ctx, rc.kctx, "get", "svc", "netexec-dual", "-o", "jsonpath={.spec.clusterIPs[*]}"))
	if !wantIPs(ips) {
		t.Errorf("clusterIPs %v: want one of each family of the cluster", ips)
	}
	for _, ip := range ips {
		eventually(t, 20*time.Second, "ClusterIP "+ip, func() error {
			body, err := u.kubectl(ctx, rc.kctx, "exec", "client", "--", "curl", "-g", "-s", "-m", "3", "http://"+net.JoinHostPort(ip, port)+"/hostname")
			if err == nil && !strings.HasPrefix(body, "netexec-") {
				return fmt.Errorf("got %q", body)
			}
			return err
		})
	}
	eventually(t, 60*time.Second, "LoadBalancer IPs and localhost", func() error {
		out, err := u.kubectl(ctx, rc.kctx, "get", "svc", "netexec-dual", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip} {.status.loadBalancer.ingress[*].hostname}")
		if f := strings.Fields(out); err == nil && (len(f) == 0 || !wantIPs(f[:len(f)-1]) || f[len(f)-1] != "localhost") {
			return fmt.Errorf("ingress %q, want an address of each family, then localhost", out)
		}
		return err
	})
	hostReachesNetexec(ctx, t, 30*time.Second, "GET on the host's 127.0.0.1:"+port, net.JoinHostPort("127.0.0.1", port))
	if out, code := u.kubernix(ctx, "down", "--name", rc.name); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	if left := rc.leftovers(); len(left) > 0 {
		t.Errorf("down left:\n%s", strings.Join(left, "\n"))
	}
}
