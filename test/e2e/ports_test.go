package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The ports tests' cluster range and pod.
const (
	portsCIDR = "10.183.0.0/16"
	portsPod  = "ports-hp"
)

// published are the host addresses (host:port) a ports test's node
// publishes: its NodePort 31080 (TCP) and the pod's hostPorts 28180 (TCP,
// HTTP) and 28181 (UDP). Each test has its own (host ports 28000-28999),
// so they run side by side.
type published struct {
	nodePortTCP, hostPortTCP, hostPortUDP string
}

// rootPorts are TestPorts' host ports; rootlessPorts TestPortsRootless'.
var (
	rootPorts     = published{"127.0.0.1:28080", "127.0.0.1:28081", "127.0.0.1:28082"}
	rootlessPorts = published{"127.0.0.1:28085", "127.0.0.1:28086", "127.0.0.1:28087"}
)

// config is the cluster file: two nodes, the second (node-1) publishing
// p's NodePort and the pod's TCP and UDP hostPorts on 127.0.0.1.
func (p published) config() string {
	port := func(addr string) string { _, port, _ := net.SplitHostPort(addr); return port }
	return fmt.Sprintf(`[[nodes]]

[[nodes]]
ports = [
  { node_port = 31080, host_port = %s },
  { node_port = 28180, host_port = %s },
  { node_port = 28181, host_port = %s, protocol = "UDP" },
]
`, port(p.nodePortTCP), port(p.hostPortTCP), port(p.hostPortUDP))
}

// portsManifest is agnhost netexec on node-1 with hostPorts 28180/TCP
// (HTTP) and 28181/UDP, and a NodePort Service (31080) of it.
func portsManifest(node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, labels: {app: %s}}
spec:
  nodeName: %s
  containers:
    - name: netexec
      image: %s
      imagePullPolicy: Never
      args: ["netexec", "--http-port=8080", "--udp-port=8081"]
      ports:
        - {containerPort: 8080, hostPort: 28180}
        - {containerPort: 8081, hostPort: 28181, protocol: UDP}
      readinessProbe:
        httpGet: {path: /healthz, port: 8080}
        periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: %s, namespace: default}
spec:
  type: NodePort
  selector: {app: %s}
  ports: [{port: 8080, targetPort: 8080, nodePort: 31080}]
`, portsPod, portsPod, node, agnhost, portsPod, portsPod)
}

// writePortsConfig writes content as a cluster file and returns its path.
func writePortsConfig(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "cluster.toml")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPorts brings up a 2-node cluster from a file whose node 1 publishes
// a NodePort and a pod's TCP and UDP hostPorts on 127.0.0.1 ([[nodes]]
// ports, issue #15): each reaches the pod from the host; status and
// up --dry-run list them; a killed port proxy is restarted; after down
// the host ports are free; after a SIGKILL of the supervisor and down as
// well.
func TestPorts(t *testing.T) {
	e := newEnv(t, "kxp-e2e", portsCIDR, "--nodes", "2", "--config", writePortsConfig(t, rootPorts.config()), leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	node1 := e.name + "-node-1"
	if out := e.mustKubernix(ctx, "up", "--dry-run"); !strings.Contains(out, "== port-proxy") ||
		!strings.Contains(out, rootPorts.hostPortUDP+"/UDP -> 10.183.0.3:28181") {
		t.Errorf("up --dry-run does not show the port proxy and its ports:\n%s", out)
	}
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	status := e.mustKubernix(ctx, "status")
	for _, want := range []string{"port " + rootPorts.nodePortTCP + "/TCP -> node " + node1 + " port 31080",
		"port " + rootPorts.hostPortUDP + "/UDP -> node " + node1 + " port 28181"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	e.apply(ctx, portsManifest(node1))
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/"+portsPod, "--timeout=120s")
	rootPorts.reachAll(ctx, t, "first up")

	// The supervisor restarts a port proxy that dies.
	pidFile := filepath.Join(e.stateDir, "run", "control-plane", "port-proxy", "pid")
	proxy := readPid(t, pidFile)
	if err := syscall.Kill(proxy, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, proxy)
	rootPorts.reachAll(ctx, t, "port proxy killed")
	if again := readPid(t, pidFile); again == proxy {
		t.Errorf("the port proxy answers as pid %d, the one killed", again)
	}

	e.mustKubernix(ctx, "down")
	rootPorts.free(t, "after down")

	e.mustKubernix(ctx, "up", "--detach")
	e.apply(ctx, portsManifest(node1))
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/"+portsPod, "--timeout=120s")
	rootPorts.reachAll(ctx, t, "second up")
	e.killSupervisor(t)
	e.mustKubernix(ctx, "down")
	rootPorts.free(t, "after SIGKILL of the supervisor and down")
	if left := e.leftovers([]string{e.name + "-node-0", node1}, false); len(left) > 0 {
		t.Errorf("down left:\n%s", strings.Join(left, "\n"))
	}
}

// reachAll checks that each of p reaches the pod from the host.
func (p published) reachAll(ctx context.Context, t *testing.T, when string) {
	t.Helper()
	for _, addr := range []string{p.nodePortTCP, p.hostPortTCP} {
		eventually(t, 60*time.Second, when+": GET http://"+addr+"/hostname", func() error {
			body, err := httpGet(ctx, "http://"+addr+"/hostname")
			if err == nil && body != portsPod {
				return fmt.Errorf("answer %q, want %s", body, portsPod)
			}
			return err
		})
	}
	eventually(t, 60*time.Second, when+": UDP hostname to "+p.hostPortUDP, func() error {
		c, err := net.Dial("udp", p.hostPortUDP)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("hostname")); err != nil {
			return err
		}
		buf := make([]byte, 256)
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) != portsPod {
			return fmt.Errorf("answer %q, want %s", buf[:n], portsPod)
		}
		return err
	})
}

// free fails t unless every host port of p can be bound again.
func (p published) free(t *testing.T, when string) {
	t.Helper()
	for _, addr := range []string{p.nodePortTCP, p.hostPortTCP} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s: TCP %s is still taken: %v", when, addr, err)
			continue
		}
		ln.Close()
	}
	pc, err := net.ListenPacket("udp", p.hostPortUDP)
	if err != nil {
		t.Errorf("%s: UDP %s is still taken: %v", when, p.hostPortUDP, err)
		return
	}
	pc.Close()
}

// TestPortsInUse: a host port of a [[nodes]] port mapping that a listener
// (TCP) or a bound socket (UDP) already holds is refused before anything
// starts: exit 2 naming the mapping and the address, nothing created.
func TestPortsInUse(t *testing.T) {
	tests := []struct {
		name, proto, addr, config, want string
	}{
		{"TCP", "tcp", "127.0.0.1:28090", "[[nodes]]\nports = [{ node_port = 30090, host_port = 28090 }]\n",
			"nodes[0].ports[0]: 127.0.0.1:28090/TCP is in use on this host"},
		{"UDP on every address", "udp", "127.0.0.1:28091",
			"[[nodes]]\n[[nodes]]\nports = [{ node_port = 30091, host_port = 28091, protocol = 'udp', listen_address = '0.0.0.0' }]\n",
			"nodes[1].ports[0]: 0.0.0.0:28091/UDP is in use on this host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "kxp-e2e-busy", portsCIDR, "--nodes", "2", "--config", writePortsConfig(t, tt.config))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var holder interface{ Close() error }
			var err error
			if tt.proto == "tcp" {
				holder, err = net.Listen("tcp", tt.addr)
			} else {
				holder, err = net.ListenPacket("udp", tt.addr)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			e.upRefused(ctx, t, []string{"--detach"}, tt.want)
		})
	}
}

// TestPortsRootless: as an ordinary user (rootless, the cluster in
// rootlesskit's namespaces), the node's NodePort and its pod's TCP and
// UDP hostPorts are published on the host's 127.0.0.1 through
// rootlesskit's port driver, reached from the host; after down the host
// ports are free. Its host ports are its own (rootlessPorts), so it runs
// beside TestPorts.
func TestPortsRootless(t *testing.T) {
	rootlessParallel(t)
	rc := newRootlessCluster(t, "kxprl", "kxp-rl")
	u, name := rc.u, rc.name
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	files := map[string]string{
		"cluster.toml": strings.Replace(rootlessPorts.config(), "[[nodes]]\n\n", "", 1), // node-0 publishes
		"ports.yaml":   portsManifest(name + "-node-0"),
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(u.home, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := u.kubernix(ctx, "up", "--detach", "--name", name, "--cidr", portsCIDR, "--config", filepath.Join(u.home, "cluster.toml"), leanAddons)
	if code != 0 {
		log, _ := os.ReadFile(filepath.Join(rc.state, "logs", "supervisor", "supervisor.log"))
		t.Fatalf("up --detach as %s exited %d:\n%s\nsupervisor log:\n%s", u.name, code, out, log)
	}
	u.mustKubectl(ctx, rc.kctx, "apply", "-f", filepath.Join(u.home, "ports.yaml"))
	u.mustKubectl(ctx, rc.kctx, "wait", "--for=condition=Ready", "pod/"+portsPod, "--timeout=120s")
	rootlessPorts.reachAll(ctx, t, "rootless")
	if out, code := u.kubernix(ctx, "down", "--name", name); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	rootlessPorts.free(t, "rootless, after down")
}
