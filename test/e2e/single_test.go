package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"

// netexecManifest is a Deployment of agnhost netexec and a NodePort Service.
func netexecManifest(replicas int, spread bool) string {
	spreadSpec := ""
	if spread {
		spreadSpec = `
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels: {app: netexec}`
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: netexec, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: netexec}}
  template:
    metadata: {labels: {app: netexec}}
    spec:%s
      containers:
        - name: netexec
          image: %s
          imagePullPolicy: Never
          args: ["netexec", "--http-port=8080"]
          ports: [{containerPort: 8080}]
          readinessProbe:
            httpGet: {path: /healthz, port: 8080}
            periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: netexec, namespace: default}
spec:
  type: NodePort
  selector: {app: netexec}
  ports: [{port: 8080, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  containers:
    - name: client
      image: %s
      imagePullPolicy: Never
      args: ["pause"]
`, replicas, spreadSpec, agnhost, agnhost)
}

func (e *env) apply(ctx context.Context, manifest string) {
	e.t.Helper()
	f := filepath.Join(e.t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.mustKubectl(ctx, "apply", "-f", f)
}

// TestSingleNode brings up a one-node cluster and checks what issue #3
// asks: Ready node, a Service by ClusterIP from a pod and by NodePort from
// the host, kubectl logs/exec/port-forward, DNS through CoreDNS, a taken
// port refused without harm, a clean down, and an up that reuses the PKI.
// It runs the node in the host's namespaces (--executor process, opt-in):
// the default sandboxed node is what the other tests run.
func TestSingleNode(t *testing.T) {
	hostAlone(t) // its kube-proxy's tables are in the host's namespace
	e := newEnv(t, "e2e-single", "10.201.0.0/16", "--executor", "process")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()

	out := e.mustKubernix(ctx, "up", "--detach")
	t.Logf("up:\n%s", out)

	t.Run("node Ready", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}")
		if strings.TrimSpace(out) != "e2e-single-node-0 True" {
			t.Fatalf("nodes = %q, want one Ready node e2e-single-node-0", out)
		}
	})

	e.apply(ctx, netexecManifest(2, false))
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=120s")
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
	clusterIP := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.clusterIP}"))
	nodePort := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	nodeIP := strings.TrimSpace(e.mustKubectl(ctx, "get", "node", "e2e-single-node-0", "-o", "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}"))

	t.Run("ClusterIP from a pod", func(t *testing.T) {
		eventually(t, 30*time.Second, "ClusterIP answers", func() error {
			out, err := e.kubectl(ctx, "exec", "client", "--", "sh", "-c",
				`printf 'GET /hostname HTTP/1.0\r\n\r\n' | nc -w 3 `+clusterIP+` 8080 | tail -n 1`)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(strings.TrimSpace(out), "netexec-") {
				return fmt.Errorf("answer %q is not a netexec pod's hostname", out)
			}
			return nil
		})
	})

	t.Run("NodePort from the host", func(t *testing.T) {
		eventually(t, 30*time.Second, "NodePort answers", func() error {
			body, err := httpGet(ctx, "http://"+net.JoinHostPort(nodeIP, nodePort)+"/hostname")
			if err == nil && !strings.HasPrefix(body, "netexec-") {
				return fmt.Errorf("answer %q is not a netexec pod's hostname", body)
			}
			return err
		})
	})

	checkKubectlTools(ctx, t, e)

	t.Run("DNS through CoreDNS", func(t *testing.T) {
		kubeSvc := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"))
		eventually(t, 30*time.Second, "kubernetes.default resolves", func() error {
			out, err := e.kubectl(ctx, "exec", "client", "--", "nslookup", "kubernetes.default.svc.cluster.local.")
			if err != nil {
				return err
			}
			if !strings.Contains(out, kubeSvc) {
				return fmt.Errorf("nslookup answered %q, want %s", out, kubeSvc)
			}
			return nil
		})
	})

	t.Run("taken port refused, first cluster unharmed", func(t *testing.T) {
		// Hold a port on all addresses, as another program would.
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
		other := newEnv(t, "e2e-other", "10.202.0.0/16", "--apiserver-port", p)
		out, code := other.kubernix(ctx, "up", "--detach")
		if code != 2 || !strings.Contains(out, "port "+p+" is in use") {
			t.Errorf("second up on a taken port: exit %d, output:\n%s\nwant exit 2 naming the port", code, out)
		}
		if out, code := e.kubernix(ctx, "status"); code != 0 {
			t.Errorf("first cluster unhealthy after the refused up (exit %d):\n%s", code, out)
		}
		if left := other.leftovers([]string{"e2e-other-node-0"}, false); len(left) > 0 {
			t.Errorf("refused up left: %v", left)
		}
		if _, err := os.Stat(filepath.Join(other.stateDir, "kubernix.toml")); err == nil {
			t.Errorf("refused up wrote its state")
		}
	})

	caBefore, err := os.Stat(filepath.Join(e.stateDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	downStart := time.Now()
	out = e.mustKubernix(ctx, "down")
	t.Logf("down took %s:\n%s", time.Since(downStart), out)
	if left := e.leftovers([]string{"e2e-single-node-0"}, true); len(left) > 0 {
		t.Fatalf("down left behind:\n%s", strings.Join(left, "\n"))
	}

	t.Run("up again reuses the PKI", func(t *testing.T) {
		upStart := time.Now().Truncate(time.Second)
		e.mustKubernix(ctx, "up", "--detach")
		caAfter, err := os.Stat(filepath.Join(e.stateDir, "pki", "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		if !caAfter.ModTime().Equal(caBefore.ModTime()) {
			t.Errorf("CA rewritten on the second up: %s -> %s", caBefore.ModTime(), caAfter.ModTime())
		}
		e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node/e2e-single-node-0", "--timeout=60s")
		// up returns once CoreDNS is Available in this run: etcd still
		// holds the last run's Available status, which must not count. So
		// a CoreDNS container started by this run must already be Ready.
		out := e.mustKubectl(ctx, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o",
			`jsonpath={range .items[*]}{.status.containerStatuses[0].ready} {.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}`)
		fresh := false
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			ready, started, _ := strings.Cut(line, " ")
			at, err := time.Parse(time.RFC3339, started)
			if ready == "true" && err == nil && !at.Before(upStart) {
				fresh = true
			}
		}
		if !fresh {
			t.Errorf("right after the second up, no CoreDNS container of this run (started at or after %s) is ready:\n%s", upStart.Format(time.RFC3339), out)
		}
		e.mustKubernix(ctx, "down")
		if left := e.leftovers([]string{"e2e-single-node-0"}, true); len(left) > 0 {
			t.Fatalf("second down left behind:\n%s", strings.Join(left, "\n"))
		}
	})
}

// checkKubectlTools checks, in subtests of t, kubectl logs, exec and
// port-forward against the netexec Deployment of netexecManifest on e's
// cluster.
func checkKubectlTools(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	t.Run("kubectl logs and exec", func(t *testing.T) {
		pod := strings.TrimSpace(e.mustKubectl(ctx, "get", "pods", "-l", "app=netexec", "-o", "jsonpath={.items[0].metadata.name}"))
		logs := e.mustKubectl(ctx, "logs", pod)
		if !strings.Contains(logs, "8080") {
			t.Errorf("logs of %s do not mention its port:\n%s", pod, logs)
		}
		out := e.mustKubectl(ctx, "exec", pod, "--", "cat", "/etc/hostname")
		if strings.TrimSpace(out) != pod {
			t.Errorf("exec cat /etc/hostname = %q, want %q", out, pod)
		}
	})

	t.Run("kubectl port-forward", func(t *testing.T) {
		pfCtx, stop := context.WithCancel(ctx)
		defer stop()
		cmd := exec.CommandContext(pfCtx, filepath.Join(e.binDir, "kubectl"), "--context", "kubernix-"+e.name,
			"port-forward", "deployment/netexec", ":8080", "--address", "127.0.0.1")
		cmd.Env = e.environ()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { stop(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(stdout)
		var local string
		for sc.Scan() {
			// "Forwarding from 127.0.0.1:41234 -> 8080"
			if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "Forwarding" {
				local = f[2]
				break
			}
		}
		if local == "" {
			t.Fatal("port-forward printed no local address")
		}
		body, err := httpGet(ctx, "http://"+local+"/hostname")
		if err != nil || !strings.HasPrefix(body, "netexec-") {
			t.Fatalf("GET through port-forward = %q, %v", body, err)
		}
	})

}
