package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodesCIDR is the range of this file's clusters.
const nodesCIDR = "10.182.0.0/16"

// TestNodeSpecs brings up two nodes from a config file's [[nodes]] (issue
// 15): named nodes, node 1 labelled (an ordinary label and a
// node-role.kubernetes.io one, which a kubelet may not set itself) and
// tainted NoSchedule, with a host directory mounted read-only. It checks
// the names, labels and taint on the Nodes, CoreDNS kept off the tainted
// node, a pod that tolerates the taint reading the host file on node 1
// through a hostPath volume and failing to write there, and that down,
// also after a SIGKILLed supervisor, leaves nothing of the mount (nor the
// mount point it made) on the host.
func TestNodeSpecs(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A mount point missing on the host, two levels deep: up makes it,
	// down removes it.
	target := filepath.Join(os.TempDir(), fmt.Sprintf("kxn-e2e-mnt-%d", os.Getpid()))
	nodePath := filepath.Join(target, "data")
	t.Cleanup(func() { os.RemoveAll(target) })
	file := filepath.Join(t.TempDir(), "cluster.toml")
	conf := fmt.Sprintf(`apiVersion = 'kubernix.dev/v1alpha1'
kind = 'Cluster'
addons = ['coredns']
[[nodes]]
name = 'front'
[[nodes]]
name = 'gpu'
labels = { tier = 'gpu', 'node-role.kubernetes.io/worker' = '' }
taints = ['gpu=true:NoSchedule']
mounts = [{ host_path = %q, node_path = %q, read_only = true }]
`, data, nodePath)
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, "kxn-nodes", nodesCIDR, "--config", file)
	e.parallel()
	nodes := []string{"kxn-nodes-front", "kxn-nodes-gpu"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))

	t.Run("node names", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`)
		if got := strings.Fields(out); !slices.Equal(got, nodes) {
			t.Errorf("nodes %v, want %v", got, nodes)
		}
		for i, n := range nodes {
			if _, err := os.Stat(filepath.Join(e.stateDir, "nodes", n)); err != nil {
				t.Errorf("node dir: %v", err)
			}
			if out := e.mustKubernix(ctx, "logs", "kubelet", "--node", fmt.Sprint(i)); !strings.Contains(out, n) {
				t.Errorf("logs kubelet --node %d does not mention %s", i, n)
			}
		}
	})
	t.Run("labels and taint on node 1 only", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "node", nodes[1], "-o",
			`jsonpath={.metadata.labels.tier} {.metadata.labels.node-role\.kubernetes\.io/worker} {range .spec.taints[*]}{.key}={.value}:{.effect} {end}`)
		if f := strings.Fields(out); !slices.Equal(f, []string{"gpu", "gpu=true:NoSchedule"}) {
			t.Errorf("node %s: labels and taints %q", nodes[1], out)
		}
		roles := e.mustKubectl(ctx, "get", "nodes", "-l", "node-role.kubernetes.io/worker", "-o", "name")
		if strings.TrimSpace(roles) != "node/"+nodes[1] {
			t.Errorf("nodes with the worker role: %q", roles)
		}
		out = e.mustKubectl(ctx, "get", "node", nodes[0], "-o", `jsonpath={.metadata.labels.tier}{.spec.taints}`)
		if strings.TrimSpace(out) != "" {
			t.Errorf("node %s has %q", nodes[0], out)
		}
	})
	t.Run("CoreDNS on the untainted node", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "-o", `jsonpath={.items[*].spec.nodeName}`)
		if len(strings.Fields(out)) == 0 {
			t.Error("no CoreDNS pod")
		}
		for _, n := range strings.Fields(out) {
			if n != nodes[0] {
				t.Errorf("a CoreDNS pod runs on %s", n)
			}
		}
	})
	e.apply(ctx, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: reader, namespace: default}
spec:
  nodeSelector: {tier: gpu}
  tolerations: [{key: gpu, operator: Equal, value: "true", effect: NoSchedule}]
  terminationGracePeriodSeconds: 1
  volumes: [{name: data, hostPath: {path: %s, type: Directory}}]
  containers:
    - name: app
      image: %s
      imagePullPolicy: Never
      args: ["pause"]
      volumeMounts: [{name: data, mountPath: /data}]
`, nodePath, agnhost))
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/reader", "--timeout=120s")
	t.Run("pod on node 1 reads the host file, read-only", func(t *testing.T) {
		if n := e.mustKubectl(ctx, "get", "pod", "reader", "-o", "jsonpath={.spec.nodeName}"); n != nodes[1] {
			t.Errorf("pod on %q, want %s", n, nodes[1])
		}
		if out := e.mustKubectl(ctx, "exec", "reader", "--", "cat", "/data/hello.txt"); out != "hello from the host\n" {
			t.Errorf("cat /data/hello.txt = %q", out)
		}
		out, err := e.kubectl(ctx, "exec", "reader", "--", "sh", "-c", "echo x > /data/new")
		if err == nil || !strings.Contains(strings.ToLower(out+err.Error()), "read-only file system") {
			t.Errorf("write to the read-only mount: err %v, output %q", err, out)
		}
		if _, err := os.Stat(filepath.Join(data, "new")); err == nil {
			t.Error("the pod wrote to the host dir")
		}
	})
	t.Run("the host does not see the mount", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(nodePath, "hello.txt")); err == nil {
			t.Errorf("%s is mounted on the host", nodePath)
		}
	})

	checkGone := func(t *testing.T, after string) {
		t.Helper()
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Errorf("%s left:\n%s", after, strings.Join(left, "\n"))
		}
		if _, err := os.Lstat(target); err == nil {
			t.Errorf("%s left the mount point %s", after, target)
		}
		if _, err := os.Stat(filepath.Join(data, "hello.txt")); err != nil {
			t.Errorf("%s: the host file: %v", after, err)
		}
	}
	t.Run("down leaves nothing of the mount", func(t *testing.T) {
		e.mustKubernix(ctx, "down")
		checkGone(t, "down")
	})
	t.Run("down after SIGKILL leaves nothing of the mount", func(t *testing.T) {
		e.mustKubernix(ctx, "up", "--detach")
		if _, err := os.Stat(nodePath); err != nil {
			t.Fatalf("mount point not made again: %v", err)
		}
		e.killSupervisor(t)
		e.mustKubernix(ctx, "down")
		checkGone(t, "down after SIGKILL")
	})
}

// TestNodeSpecsRefused: a mount of a missing host path, a taint with a
// bad effect, a taint that leaves the addons no node, and a read-only
// mount on a node in the host's namespaces each make up exit 2, naming
// the key, and leave nothing.
func TestNodeSpecsRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name, nodes, want string
	}{
		{"missing host path", fmt.Sprintf("mounts = [{ host_path = %q, node_path = '/data' }]", missing),
			"nodes[0].mounts[0].host_path " + missing + ": no such file or directory"},
		{"bad taint effect", "taints = ['gpu=true:NoSchedul']",
			`nodes[0].taints[0] "gpu=true:NoSchedul": effect "NoSchedul": must be NoSchedule, PreferNoSchedule or NoExecute`},
		{"the only node tainted against the addons", "taints = ['gpu=true:NoSchedule']",
			"nodes[].taints: the coredns addon's pods tolerate none of nodes[0] gpu=true:NoSchedule"},
		{"read-only mount with the process executor", fmt.Sprintf("mounts = [{ host_path = %q, read_only = true }]", t.TempDir()),
			"nodes[0].mounts[0]: --executor process runs the node in the host's mount namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "cluster.toml")
			head := ""
			if strings.Contains(tt.name, "process") {
				head = "executor = 'process'\n"
			}
			if err := os.WriteFile(file, []byte(head+"[[nodes]]\n"+tt.nodes+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, "kxn-bad", nodesCIDR, "--config", file)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			e.upRefused(ctx, t, []string{"--detach"}, tt.want)
		})
	}
}
