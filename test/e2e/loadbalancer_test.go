package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// lbCIDR is the range of TestLoadBalancer's cluster; its LoadBalancer
// pool is the default, the third /20: 10.163.32.0/20.
const (
	lbCIDR      = "10.163.0.0/16"
	lbFirstIP   = "10.163.32.1"
	lbSecondIP  = "10.163.32.2"
	lbThirdIP   = "10.163.32.3"
	lbBadCIDR   = "10.164.0.0/16"
	lbNode0IP   = "10.163.0.2"
	lbPort      = "80"
	lbNetexecRe = "netexec-"
)

// lbService is a LoadBalancer Service of the netexec pods, port 80.
func lbService(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: netexec}
  ports: [{port: 80, targetPort: 8080}]
`, name)
}

// TestLoadBalancer brings up a 2-node cluster and checks issue 13's
// LoadBalancer Services: a Service gets the pool's first address in its
// status, the host (Go's HTTP client) and a pod on each node reach it, a
// network namespace that routes the cluster range via this host (a LAN
// neighbour) does not, the host routes the pool to node 0; a second
// Service gets the next address, and once the first is deleted its
// address goes to the next new Service; a controller killed and restarted
// keeps every address (they live in the statuses). down leaves nothing.
func TestLoadBalancer(t *testing.T) {
	e := newEnv(t, "lb-e2e", lbCIDR, "--nodes", "2", "--addons", "loadbalancer")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	if out := e.mustKubernix(ctx, "config", "view"); !strings.Contains(out, "loadbalancer_cidr = '10.163.32.0/20'") {
		t.Errorf("config view does not show the pool:\n%s", out)
	}
	e.apply(ctx, netexecManifest(2, true))
	e.apply(ctx, lbService("lb-a"))
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")

	e.waitIngress(ctx, "lb-a", lbFirstIP)
	t.Run("the host reaches the LoadBalancer IP", func(t *testing.T) {
		eventually(t, 30*time.Second, "GET from the host", func() error {
			body, err := httpGet(ctx, "http://"+net.JoinHostPort(lbFirstIP, lbPort)+"/hostname")
			if err == nil && !strings.HasPrefix(body, lbNetexecRe) {
				return fmt.Errorf("answer %q is not a netexec pod's hostname", body)
			}
			return err
		})
		route, err := netlink.RouteGet(net.ParseIP(lbFirstIP))
		if err != nil || len(route) == 0 || route[0].Gw.String() != lbNode0IP {
			t.Errorf("ip route get %s = %v, %v; want via node 0 (%s)", lbFirstIP, route, err, lbNode0IP)
		}
	})

	t.Run("a pod on every node reaches the LoadBalancer IP", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "pods", "-l", "app=netexec", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}`)
		nodes := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 || nodes[f[1]] {
				continue
			}
			nodes[f[1]] = true
			eventually(t, 30*time.Second, "GET from "+f[0]+" on "+f[1], func() error {
				body, err := e.kubectl(ctx, "exec", f[0], "--", "sh", "-c",
					`printf 'GET /hostname HTTP/1.0\r\n\r\n' | nc -w 3 `+lbFirstIP+` `+lbPort+` | tail -n 1`)
				if err == nil && !strings.HasPrefix(strings.TrimSpace(body), lbNetexecRe) {
					return fmt.Errorf("answer %q is not a netexec pod's hostname", body)
				}
				return err
			})
		}
		if len(nodes) != 2 {
			t.Errorf("netexec pods on %v, want both nodes", nodes)
		}
	})

	t.Run("a neighbour does not reach the LoadBalancer IP", func(t *testing.T) {
		n := newNeighbour(t, e.cidr, "")
		defer n.remove()
		addr := net.JoinHostPort(lbFirstIP, lbPort)
		if err := dial(netns.None(), addr); err != nil {
			t.Fatalf("the host cannot reach %s: %v", addr, err)
		}
		if err := dial(n.ns, addr); err == nil {
			t.Errorf("the neighbour reached the LoadBalancer IP %s", addr)
		}
	})

	t.Run("deleting a Service frees its IP for the next", func(t *testing.T) {
		e.apply(ctx, lbService("lb-b"))
		e.waitIngress(ctx, "lb-b", lbSecondIP)
		e.mustKubectl(ctx, "delete", "service", "lb-a", "--wait=true", "--timeout=60s")
		e.apply(ctx, lbService("lb-c"))
		e.waitIngress(ctx, "lb-c", lbFirstIP)
		e.waitIngress(ctx, "lb-b", lbSecondIP)
		eventually(t, 30*time.Second, "GET lb-c from the host", func() error {
			_, err := httpGet(ctx, "http://"+net.JoinHostPort(lbFirstIP, lbPort)+"/hostname")
			return err
		})
	})

	t.Run("a restarted controller keeps every address", func(t *testing.T) {
		pidFile := filepath.Join(e.stateDir, "run", "control-plane", "cloud-controller", "pid")
		old := readPid(t, pidFile)
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "the supervisor restarts the cloud controller", func() error {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return err
			}
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == old || syscall.Kill(pid, 0) != nil {
				return fmt.Errorf("pid %d", pid)
			}
			return nil
		})
		e.apply(ctx, lbService("lb-d"))
		e.waitIngress(ctx, "lb-d", lbThirdIP)
		e.waitIngress(ctx, "lb-c", lbFirstIP)
		e.waitIngress(ctx, "lb-b", lbSecondIP)
	})

	e.mustKubernix(ctx, "down")
	if left := e.leftovers([]string{"lb-e2e-node-0", "lb-e2e-node-1"}, false); len(left) > 0 {
		t.Errorf("down left behind:\n%s", strings.Join(left, "\n"))
	}
	if r, err := netlink.RouteGet(net.ParseIP(lbFirstIP)); err == nil && len(r) > 0 && r[0].Gw.String() == lbNode0IP {
		t.Errorf("after down the host still routes the pool via node 0: %v", r)
	}
}

// waitIngress waits until Service name's status.loadBalancer.ingress
// names ip.
func (e *env) waitIngress(ctx context.Context, name, ip string) {
	e.t.Helper()
	eventually(e.t, 60*time.Second, "Service "+name+" gets LoadBalancer IP "+ip, func() error {
		out, err := e.kubectl(ctx, "get", "service", name, "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
		if err == nil && strings.TrimSpace(out) != ip {
			return fmt.Errorf("ingress %q", out)
		}
		return err
	})
}

// assignedIngress waits until Service name has one LoadBalancer IP and
// returns it; t fails when it is not an address of pool.
func (e *env) assignedIngress(ctx context.Context, name string, pool netip.Prefix) string {
	e.t.Helper()
	var ip netip.Addr
	eventually(e.t, 60*time.Second, "Service "+name+" gets a LoadBalancer IP", func() error {
		out, err := e.kubectl(ctx, "get", "service", name, "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
		if err != nil {
			return err
		}
		ip, err = netip.ParseAddr(strings.TrimSpace(out))
		return err
	})
	if !pool.Contains(ip) {
		e.t.Errorf("Service %s has LoadBalancer IP %s, not one of the pool %s", name, ip, pool)
	}
	return ip.String()
}

// TestLoadBalancerPoolRefused runs `up` with a LoadBalancer pool that
// overlaps the node, service or pod CIDR or lies outside --cidr: each exits
// 2 naming --loadbalancer-cidr, and nothing is created (no process, link,
// route, chain or file of the cluster; the state dir untouched).
func TestLoadBalancerPoolRefused(t *testing.T) {
	e := newEnv(t, "lb-e2e-bad", lbBadCIDR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tests := []struct {
		name, pool, want string
	}{
		{"overlaps the node network", "10.164.0.0/20", "--node-cidr 10.164.0.0/24 and --loadbalancer-cidr 10.164.0.0/20 overlap"},
		{"overlaps the service CIDR", "10.164.16.0/24", "--service-cidr 10.164.16.0/20 and --loadbalancer-cidr 10.164.16.0/24 overlap"},
		{"overlaps the pod CIDR", "10.164.128.0/24", "--cluster-cidr 10.164.128.0/17 and --loadbalancer-cidr 10.164.128.0/24 overlap"},
		{"outside --cidr", "10.165.0.0/24", "--loadbalancer-cidr 10.165.0.0/24: outside --cidr 10.164.0.0/16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dirList(t, e.stateDir)
			out, code := e.kubernix(ctx, "up", "--detach", "--loadbalancer-cidr", tt.pool)
			if code == 0 { // wrongly accepted: take the cluster down again
				t.Cleanup(func() { e.kubernix(context.Background(), "down") })
			}
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Fatalf("up --loadbalancer-cidr %s: exit %d, output:\n%s\nwant exit 2 mentioning %q", tt.pool, code, out, tt.want)
			}
			e.checkRefusedLeftNothing(t, before)
		})
	}
}

// TestRootlessLoadBalancer is TestLoadBalancer reduced, rootless, on the
// shared rootless cluster: a LoadBalancer Service of port rlPort gets an
// address of the pool that no other Service has (the ingress addon's
// Service took the first one at up, TestIngressRootless's Gateway may
// take another meanwhile) and a "localhost" ingress entry, answers on the
// host's 127.0.0.1:rlPort (rootlesskit's port driver), and once deleted
// the host port is closed again.
func TestRootlessLoadBalancer(t *testing.T) {
	rc := sharedRootlessCluster(t)
	const rlPort = "18090"
	// The default pool is the /20 at .32.0 of the cluster's /16.
	pool := netip.MustParsePrefix(cidr16(rc.cidr) + "32.0/20")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	manifest := filepath.Join(rc.dir, "lb.yaml")
	svc := strings.Replace(lbService("lb-rl"), "port: 80,", "port: "+rlPort+",", 1)
	if err := os.WriteFile(manifest, []byte(rc.inNamespace(netexecManifest(1, false)+"---\n"+svc)), 0o644); err != nil {
		t.Fatal(err)
	}
	rc.mustKubectl(ctx, "apply", "-f", manifest)
	rc.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
	var rlIP string
	eventually(t, 60*time.Second, "LoadBalancer IP and localhost in the status", func() error {
		out, err := rc.kubectl(ctx, "get", "service", "lb-rl", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip} {.status.loadBalancer.ingress[*].hostname}")
		f := strings.Fields(out)
		if err == nil && (len(f) != 2 || f[1] != "localhost") {
			return fmt.Errorf("ingress %q", out)
		}
		if err == nil {
			rlIP = f[0]
		}
		return err
	})
	if ip, err := netip.ParseAddr(rlIP); err != nil || !pool.Contains(ip) {
		t.Errorf("LoadBalancer IP %q is not in the pool %s", rlIP, pool)
	}
	all := rc.mustKubectl(ctx, "get", "services", "--all-namespaces", "-o", "jsonpath={.items[*].status.loadBalancer.ingress[*].ip}")
	if n := strings.Count(" "+all+" ", " "+rlIP+" "); n != 1 {
		t.Errorf("%d Services have %s: %s", n, rlIP, all)
	}
	hostURL := "http://" + net.JoinHostPort("127.0.0.1", rlPort) + "/hostname"
	eventually(t, 30*time.Second, "GET on the host's 127.0.0.1:"+rlPort, func() error {
		body, err := httpGet(ctx, hostURL)
		if err == nil && !strings.HasPrefix(body, lbNetexecRe) {
			return fmt.Errorf("answer %q is not a netexec pod's hostname", body)
		}
		return err
	})
	if events := rc.mustKubectl(ctx, "get", "events", "--field-selector", "involvedObject.name=lb-rl,reason=Published", "-o", "jsonpath={.items[*].message}"); !strings.Contains(events, "published on the host at 127.0.0.1:"+rlPort) {
		t.Errorf("no Published event naming 127.0.0.1:%s: %q", rlPort, events)
	}
	rc.mustKubectl(ctx, "delete", "service", "lb-rl", "--wait=true", "--timeout=60s")
	eventually(t, 30*time.Second, "127.0.0.1:"+rlPort+" closed after delete", func() error {
		if err := dial(netns.None(), net.JoinHostPort("127.0.0.1", rlPort)); err == nil {
			return fmt.Errorf("still open")
		}
		return nil
	})
}
