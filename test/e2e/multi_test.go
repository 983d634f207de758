package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/process"
)

// TestMultiNode brings up three nodes, each in its own sandbox, and checks
// what issue #4 asks: distinct node IPs and pod CIDRs, a spread Deployment,
// pod-to-pod traffic across nodes, a ClusterIP Service from every node, a
// NodePort from the host on every node IP, DNS from every node, recovery
// from a SIGKILLed containerd, and down after a SIGKILLed supervisor.
// Repeated up/down cycles of 3 nodes with a spread Deployment are
// TestDownLeavesNothing's.
func TestMultiNode(t *testing.T) {
	e := newEnv(t, "e2e-multi", "10.204.0.0/16", "--nodes", "3")
	e.parallelAt(weightLong)
	nodes := []string{"e2e-multi-node-0", "e2e-multi-node-1", "e2e-multi-node-2"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))

	t.Run("ingress on by default, deployed once the cluster is Ready", func(t *testing.T) {
		if err := waitAddonsHealthy(ctx, func(ctx context.Context) (string, error) {
			out, _ := e.kubernix(ctx, "status", "-o", "json")
			return out, nil
		}); err != nil {
			t.Fatal(err)
		}
		if out, code := e.kubernix(ctx, "status"); code != 0 || !strings.Contains(out, "addon ingress: 1/1 ready") {
			t.Errorf("status exited %d, want 0 and addon ingress ready:\n%s", code, out)
		}
		log, err := os.ReadFile(filepath.Join(e.stateDir, "logs", "supervisor", "supervisor.log"))
		if err != nil || !strings.Contains(string(log), `msg="addon deployed after the cluster was Ready" addon=ingress`) {
			t.Errorf("the supervisor's log does not say it deployed ingress after Ready (%v)", err)
		}
		e.mustKubectl(ctx, "wait", "--for=condition=Programmed", "-n", "kube-system", "gateway/traefik", "--timeout=60s")
		if out := e.mustKubectl(ctx, "get", "ingressclass", "traefik", "-o", `jsonpath={.metadata.annotations.ingressclass\.kubernetes\.io/is-default-class}`); out != "true" {
			t.Errorf("IngressClass traefik is-default-class = %q, want true", out)
		}
	})

	t.Run("3 Ready nodes with their own IP and pod CIDR", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.addresses[?(@.type=="InternalIP")].address} {.spec.podCIDR}{"\n"}{end}`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 {
			t.Fatalf("nodes:\n%s", out)
		}
		ips, cidrs := map[string]bool{}, map[string]bool{}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 4 || f[1] != "True" {
				t.Fatalf("node not Ready or incomplete: %q", l)
			}
			ips[f[2]], cidrs[f[3]] = true, true
		}
		if len(ips) != 3 || len(cidrs) != 3 {
			t.Errorf("node IPs %v and pod CIDRs %v are not all distinct", ips, cidrs)
		}
	})

	checkWorkloads(ctx, t, e, nodes)

	t.Run("SIGKILLed containerd restarts, node Ready, nothing orphaned", func(t *testing.T) {
		node := nodes[2]
		pidFile := filepath.Join(e.stateDir, "run", node, "containerd", "pid")
		old := readPid(t, pidFile)
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "containerd restarted", func() error {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return err
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid == old || syscall.Kill(pid, 0) != nil {
				return fmt.Errorf("containerd pid %d (old %d) not a new live process", pid, old)
			}
			return nil
		})
		e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node/"+node, "--timeout=60s")
		// The shims survive a containerd restart by design; each must
		// belong to a sandbox the new containerd knows about.
		sock := filepath.Join(e.stateDir, "nodes", node, "containerd.sock")
		eventually(t, 30*time.Second, "every shim owned by a known sandbox", func() error {
			ids, err := exec.CommandContext(ctx, filepath.Join(e.binDir, "crictl"), "--runtime-endpoint", "unix://"+sock, "pods", "-q").Output()
			if err != nil {
				return err
			}
			sandboxes := len(strings.Fields(string(ids)))
			shims := countShims(sock)
			if shims != sandboxes {
				return fmt.Errorf("%d shims for %d sandboxes", shims, sandboxes)
			}
			return nil
		})
		if out, code := e.kubernix(ctx, "status"); code != 0 {
			t.Errorf("status after the restart exited %d:\n%s", code, out)
		}
	})

	t.Run("SIGKILLed supervisor, then down leaves nothing, then up again", func(t *testing.T) {
		e.killSupervisor(t)
		e.mustKubernix(ctx, "down")
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Fatalf("down after SIGKILL left:\n%s", strings.Join(left, "\n"))
		}
		e.mustKubernix(ctx, "up", "--detach")
		e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")
		e.mustKubernix(ctx, "down")
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Fatalf("down left:\n%s", strings.Join(left, "\n"))
		}
	})
}

// checkWorkloads deploys netexec (netexecManifest: 6 replicas spread
// over nodes, a NodePort Service and a client pod) on e's cluster of
// nodes and checks, each in a subtest of t: the replicas spread evenly,
// pod-to-pod traffic across nodes, the ClusterIP from every node, the
// NodePort from the host on every node IP, and the Service's DNS name
// from every node.
func checkWorkloads(ctx context.Context, t *testing.T, e *env, nodes []string) {
	t.Helper()
	e.apply(ctx, netexecManifest(6, true))
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
	// pods[node] = pod names and IPs on that node
	type pod struct{ name, ip, node string }
	var pods []pod
	out := e.mustKubectl(ctx, "get", "pods", "-l", "app=netexec", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName}{"\n"}{end}`)
	perNode := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			pods = append(pods, pod{f[0], f[1], f[2]})
			perNode[f[2]]++
		}
	}
	t.Run("6 replicas spread over the nodes", func(t *testing.T) {
		for _, n := range nodes {
			if perNode[n] != 6/len(nodes) {
				t.Errorf("pods per node = %v, want %d on each", perNode, 6/len(nodes))
			}
		}
	})

	get := func(from pod, hostPort string) (string, error) {
		host, port, _ := net.SplitHostPort(hostPort)
		return e.kubectl(ctx, "exec", from.name, "--", "sh", "-c",
			`printf 'GET /hostname HTTP/1.0\r\n\r\n' | nc -w 3 `+host+" "+port+` | tail -n 1`)
	}
	t.Run("pod to pod across nodes", func(t *testing.T) {
		for _, from := range pods {
			for _, to := range pods {
				if to.node == from.node {
					continue
				}
				eventually(t, 20*time.Second, from.node+" -> "+to.node, func() error {
					body, err := get(from, net.JoinHostPort(to.ip, "8080"))
					if err == nil && strings.TrimSpace(body) != to.name {
						return fmt.Errorf("got %q from %s, want %s", body, to.ip, to.name)
					}
					return err
				})
				break // one peer per source pod is enough
			}
		}
	})

	clusterIP := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.clusterIP}"))
	nodePort := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	t.Run("ClusterIP from every node", func(t *testing.T) {
		seen := map[string]bool{}
		for _, p := range pods {
			if seen[p.node] {
				continue
			}
			seen[p.node] = true
			eventually(t, 20*time.Second, "ClusterIP from "+p.node, func() error {
				body, err := get(p, net.JoinHostPort(clusterIP, "8080"))
				if err == nil && !strings.HasPrefix(strings.TrimSpace(body), "netexec-") {
					return fmt.Errorf("got %q", body)
				}
				return err
			})
		}
	})

	t.Run("NodePort from the host on every node IP", func(t *testing.T) {
		ips := strings.Fields(e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={.items[*].status.addresses[?(@.type=="InternalIP")].address}`))
		for _, ip := range ips {
			hostReachesNetexec(ctx, t, 20*time.Second, "NodePort on "+ip, net.JoinHostPort(ip, nodePort))
		}
	})

	t.Run("DNS from every node", func(t *testing.T) {
		seen := map[string]bool{}
		for _, p := range pods {
			if seen[p.node] {
				continue
			}
			seen[p.node] = true
			eventually(t, 20*time.Second, "DNS from "+p.node, func() error {
				out, err := e.kubectl(ctx, "exec", p.name, "--", "nslookup", "netexec.default.svc.cluster.local.")
				if err == nil && !strings.Contains(out, clusterIP) {
					return fmt.Errorf("nslookup answered %q, want %s", out, clusterIP)
				}
				return err
			})
		}
	})

}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// countShims counts the containerd shims serving the containerd at sock.
func countShims(sock string) int {
	pids, _ := process.WithArgs("-address", sock)
	return len(pids)
}
