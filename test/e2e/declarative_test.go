package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The example file's values the test observes (examples/cluster.toml).
const (
	declCIDR     = "10.186.0.0/16"
	declHostPort = "18080" // nodes[0].ports: 127.0.0.1:18080 -> node port 30080
	declNodePort = 30080
	declHostFile = "hello from the host\n" // examples/data/hello.txt
)

// TestDeclarativeConfig is issue 15's "Done when": a 2-node cluster from
// examples/cluster.toml (its name, CIDR and addons overridden by flags,
// which win over the file), and each thing the file asks for observed in
// the running cluster: the feature gate in the apiserver's /metrics, the
// runtime-config group in discovery, the extra admission plugin refusing
// a Service with external IPs, the node names, node 1's label, taint and
// kubelet flag, a pod on node 1 reading the host directory mounted there
// (read-only), and 127.0.0.1:18080 reaching a NodePort Service on node 0.
func TestDeclarativeConfig(t *testing.T) {
	example, err := filepath.Abs(filepath.Join("..", "..", "examples", "cluster.toml"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, "kxd", declCIDR, "--config", example, "--addons", "coredns")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	control, gpu := e.name+"-control", e.name+"-gpu"

	t.Run("node names", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")
		if got := strings.Fields(out); len(got) != 2 || !strings.Contains(out, control) || !strings.Contains(out, gpu) {
			t.Errorf("nodes %q, want %s and %s", got, control, gpu)
		}
	})
	t.Run("feature gate", func(t *testing.T) {
		metrics := e.mustKubectl(ctx, "get", "--raw", "/metrics")
		if !strings.Contains(metrics, `kubernetes_feature_enabled{name="CoordinatedLeaderElection",stage="BETA"} 1`) {
			t.Errorf("/metrics does not show CoordinatedLeaderElection enabled:\n%s", grepLines(metrics, "CoordinatedLeaderElection"))
		}
	})
	t.Run("runtime config", func(t *testing.T) {
		if out := e.mustKubectl(ctx, "api-versions"); !strings.Contains(out, "coordination.k8s.io/v1beta1\n") {
			t.Errorf("discovery lacks coordination.k8s.io/v1beta1:\n%s", out)
		}
	})
	t.Run("admission plugin", func(t *testing.T) {
		e.applyRefused(ctx, `apiVersion: v1
kind: Service
metadata: {name: external, namespace: default}
spec:
  selector: {app: none}
  externalIPs: [192.0.2.10]
  ports: [{port: 80}]
`, "Use of external IPs is denied by admission control")
	})
	t.Run("node 1 label, taint and kubelet flag", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "node", gpu, "-o",
			`jsonpath={.metadata.labels.example\.com/accelerator} {.spec.taints[*].key}={.spec.taints[*].value}:{.spec.taints[*].effect} {.status.capacity.pods}`)
		if out != "gpu example.com/accelerator=gpu:NoSchedule 50" {
			t.Errorf("node %s: label, taint, max pods = %q; want %q", gpu, out, "gpu example.com/accelerator=gpu:NoSchedule 50")
		}
	})
	t.Run("host directory mounted into node 1", func(t *testing.T) {
		e.apply(ctx, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: reader, namespace: default}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  tolerations: [{key: example.com/accelerator, operator: Exists, effect: NoSchedule}]
  volumes: [{name: data, hostPath: {path: /data, type: Directory}}]
  containers:
    - name: app
      image: %s
      imagePullPolicy: Never
      args: ["pause"]
      volumeMounts: [{name: data, mountPath: /data}]
`, gpu, agnhost))
		e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/reader", "--timeout=120s")
		if out := e.mustKubectl(ctx, "exec", "reader", "--", "cat", "/data/hello.txt"); out != declHostFile {
			t.Errorf("pod on %s reads %q from /data/hello.txt, want %q", gpu, out, declHostFile)
		}
		if out, err := e.kubectl(ctx, "exec", "reader", "--", "touch", "/data/written"); err == nil {
			t.Errorf("a write to the read-only mount succeeded:\n%s", out)
		}
	})
	t.Run("port mapping to a NodePort", func(t *testing.T) {
		e.apply(ctx, netexecManifest(1, false))
		e.mustKubectl(ctx, "patch", "service", "netexec", "-p", fmt.Sprintf(`{"spec":{"ports":[{"port":8080,"targetPort":8080,"nodePort":%d}]}}`, declNodePort))
		e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
		eventually(t, 30*time.Second, "GET 127.0.0.1:"+declHostPort, func() error {
			body, err := httpGet(ctx, "http://127.0.0.1:"+declHostPort+"/hostname")
			if err == nil && !strings.HasPrefix(body, "netexec-") {
				return fmt.Errorf("answer %q is not a netexec pod's hostname", body)
			}
			return err
		})
	})
}

// applyRefused applies manifest and expects the apiserver to refuse it
// with an error containing want.
func (e *env) applyRefused(ctx context.Context, manifest, want string) {
	e.t.Helper()
	f := filepath.Join(e.stateDir, "refused.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		e.t.Fatal(err)
	}
	out, err := e.kubectl(ctx, "apply", "-f", f)
	if err == nil || !strings.Contains(err.Error(), want) {
		e.t.Errorf("kubectl apply: %v\n%s\nwant it refused with %q", err, out, want)
	}
}

// grepLines returns the lines of text containing s.
func grepLines(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}

// TestDeclarativeConfigRefused: issue 15's bad input, each in a config
// file given to up: exit 2, the key named, nothing created on the host
// or in the state dir.
func TestDeclarativeConfigRefused(t *testing.T) {
	hostAlone(t) // its leak check sees every new network namespace
	// A host port in use: this test listens on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name, file, want string
	}{
		{"unknown key", "nodez = 2\n", `unknown key "nodez"; did you mean nodes?`},
		{"unknown feature gate", "feature_gates = { NoSuchGateKx = true }\n", "NoSuchGateKx"},
		{"mount of a missing host path", "[[nodes]]\nmounts = [{ host_path = '/nonexistent-kx-e2e' }]\n", "nodes[0].mounts[0].host_path /nonexistent-kx-e2e"},
		{"port in use", fmt.Sprintf("[[nodes]]\nports = [{ host_port = %d, node_port = 30080 }]\n", taken), "nodes[0].ports[0]"},
		{"taint with a bad effect", "[[nodes]]\ntaints = ['a=b:NoScheduled']\n", `nodes[0].taints[0] "a=b:NoScheduled": effect "NoScheduled"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "kxdr", "10.187.0.0/16")
			file := filepath.Join(t.TempDir(), "cluster.toml")
			if err := os.WriteFile(file, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			e.upRefused(ctx, t, []string{"--detach", "--config", file}, tt.want)
		})
	}
}

// TestUpStartsFromLastSettings: an up without a config file of a cluster
// that ran before starts from the settings its last up was given, as k3s
// and minikube do: up --nodes 2 --addons coredns, down, then a bare up
// comes back with 2 nodes and CoreDNS only, changes nothing, and config
// view shows those settings.
func TestUpStartsFromLastSettings(t *testing.T) {
	e := newEnv(t, "kxl", "10.189.0.0/16")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e.downOnCleanup()
	e.mustKubernix(ctx, "up", "--detach", "--nodes", "2", "--addons", "coredns")
	e.mustKubernix(ctx, "down")
	out := e.mustKubernix(ctx, "up", "--detach")
	if !strings.Contains(out, "starting from the settings of the cluster's last up") || strings.Contains(out, "applying the changes") {
		t.Errorf("the second up does not say it starts from the last settings, or changes something:\n%s", out)
	}
	if nodes := strings.Fields(e.mustKubectl(ctx, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")); len(nodes) != 2 {
		t.Errorf("nodes %q after a bare up, want the 2 of the last up", nodes)
	}
	if view := e.mustKubernix(ctx, "config", "view"); !strings.Contains(view, "\nnodes = 2\n") || !strings.Contains(view, "\naddons = ['coredns']\n") {
		t.Errorf("config view does not show the cluster's settings:\n%s", view)
	}
}
