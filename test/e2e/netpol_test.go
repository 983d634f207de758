package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/images"
)

// netpolPod is an agnhost pod serving TCP on 8080 (netexec), on node,
// with labels role=<role>, in namespace ns ("" for kubectl's own).
func netpolPod(name, ns, node, role string) string {
	nsField := ""
	if ns != "" {
		nsField = ", namespace: " + ns
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s%s, labels: {role: %s}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 0
  containers:
    - name: netexec
      image: %s
      imagePullPolicy: Never
      args: ["netexec", "--http-port=8080"]
      ports: [{name: http, containerPort: 8080}]
      readinessProbe:
        httpGet: {path: /healthz, port: 8080}
        periodSeconds: 1
`, name, nsField, role, node, images.AgnhostRef())
}

// netpolCluster is what checkNetworkPolicies needs of a cluster, root or
// rootless: kubectl with no default namespace, a directory kubectl can
// read manifests from, the namespace the test's pods go in (made and
// removed by the caller) and two nodes (the same one twice on a
// single-node cluster).
type netpolCluster struct {
	kubectl     func(ctx context.Context, args ...string) (string, error)
	manifestDir string
	namespace   string
	nodes       [2]string
}

func (c netpolCluster) mustKubectl(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply writes manifest to netpol.yaml in the manifest dir (the test's
// own) and applies it.
func (c netpolCluster) apply(ctx context.Context, t *testing.T, manifest string) {
	t.Helper()
	f := filepath.Join(c.manifestDir, "netpol.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustKubectl(ctx, t, "apply", "-f", f)
}

// TestNetworkPolicy checks issue #26 on the shared two-node cluster
// (checkNetworkPolicies): NetworkPolicies are enforced, across nodes and
// through a Service IP. TestRootless runs the same checks rootless.
func TestNetworkPolicy(t *testing.T) {
	e := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	nodes := sharedRoot.nodeNames()
	c := netpolCluster{
		kubectl: func(ctx context.Context, args ...string) (out string, err error) {
			e.namespaceless(func() { out, err = e.kubectl(ctx, args...) })
			return out, err
		},
		manifestDir: t.TempDir(), namespace: e.namespace, nodes: [2]string{nodes[0], nodes[1]},
	}
	checkNetworkPolicies(ctx, t, c)
}

// checkNetworkPolicies checks, as subtests of t, that c enforces
// NetworkPolicies. A server on node 0 is reached by three clients (two
// on node 1 in c's namespace, one on node 0 in a namespace of its own
// labelled team=blue, which it removes at the end); a deny-all ingress
// policy blocks every one; an allow rule by pod label and one by
// namespace label let exactly the chosen two in; removing the policies
// restores traffic; an egress policy of ipBlock 0.0.0.0/0 except the
// server's IP blocks a client from the server, by pod IP and by Service
// IP, and nothing else; its removal restores it.
func checkNetworkPolicies(ctx context.Context, t *testing.T, c netpolCluster) {
	t.Helper()
	ns, nodes := c.namespace, c.nodes
	blue := ns + "-blue"
	c.mustKubectl(ctx, t, "create", "namespace", blue)
	c.mustKubectl(ctx, t, "label", "namespace", blue, "team=blue")
	t.Cleanup(func() { _, _ = c.kubectl(context.Background(), "delete", "namespace", blue, "--wait=false") })
	c.apply(ctx, t, strings.Join([]string{
		netpolPod("server", ns, nodes[0], "server"),
		netpolPod("allowed", ns, nodes[1], "allowed"),
		netpolPod("other", ns, nodes[1], "other"),
		netpolPod("remote", blue, nodes[0], "remote"),
		`apiVersion: v1
kind: Service
metadata: {name: server, namespace: ` + ns + `}
spec:
  selector: {role: server}
  ports: [{port: 80, targetPort: 8080}]
`}, "---\n"))
	c.mustKubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "pod/server", "pod/allowed", "pod/other", "--timeout=120s")
	c.mustKubectl(ctx, t, "wait", "-n", blue, "--for=condition=Ready", "pod/remote", "--timeout=120s")
	podIP := func(ns, pod string) string {
		return strings.TrimSpace(c.mustKubectl(ctx, t, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}"))
	}
	server := podIP(ns, "server") + ":8080"
	service := strings.TrimSpace(c.mustKubectl(ctx, t, "-n", ns, "get", "service", "server", "-o", "jsonpath={.spec.clusterIP}")) + ":80"
	remoteAddr := podIP(blue, "remote") + ":8080"

	// connects reports whether client (namespace/pod) opens a TCP
	// connection to addr, as upstream's probes do (agnhost connect).
	connects := func(client, addr string) bool {
		cns, pod, _ := strings.Cut(client, "/")
		_, err := c.kubectl(ctx, "-n", cns, "exec", pod, "--", "/agnhost", "connect", addr, "--timeout=2s", "--protocol=tcp")
		return err == nil
	}
	allowed, other, remote := ns+"/allowed", ns+"/other", blue+"/remote"
	type probe struct {
		client, addr string
		want         bool
	}
	// expect waits until every probe gives what it wants: a change is
	// enforced within about a second, probes take longer.
	expect := func(t *testing.T, probes ...probe) {
		t.Helper()
		eventually(t, 30*time.Second, "connectivity", func() error {
			var wrong []string
			for _, p := range probes {
				if got := connects(p.client, p.addr); got != p.want {
					wrong = append(wrong, fmt.Sprintf("%s -> %s: connects %v, want %v", p.client, p.addr, got, p.want))
				}
			}
			if len(wrong) > 0 {
				return fmt.Errorf("%s", strings.Join(wrong, "; "))
			}
			return nil
		})
	}
	all := func(want bool) []probe {
		return []probe{{allowed, server, want}, {other, server, want}, {remote, server, want}, {other, service, want}}
	}

	t.Run("without a policy every client connects", func(t *testing.T) { expect(t, all(true)...) })
	t.Run("deny-all ingress blocks every client", func(t *testing.T) {
		c.apply(ctx, t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: `+ns+`}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`)
		expect(t, all(false)...)
	})
	t.Run("allow by pod label and by namespace label lets only those in", func(t *testing.T) {
		c.apply(ctx, t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-chosen, namespace: `+ns+`}
spec:
  podSelector: {matchLabels: {role: server}}
  ingress:
    - from:
        - podSelector: {matchLabels: {role: allowed}}
        - namespaceSelector: {matchLabels: {team: blue}}
      ports: [{port: http}]
`)
		expect(t, probe{allowed, server, true}, probe{remote, server, true}, probe{other, server, false}, probe{other, service, false})
	})
	t.Run("removing the policies restores traffic", func(t *testing.T) {
		c.mustKubectl(ctx, t, "-n", ns, "delete", "networkpolicy", "deny-all", "allow-chosen")
		expect(t, all(true)...)
	})
	t.Run("egress ipBlock except blocks a pod and its Service IP only", func(t *testing.T) {
		c.apply(ctx, t, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-except, namespace: %s}
spec:
  podSelector: {matchLabels: {role: other}}
  policyTypes: [Egress]
  egress:
    - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [%s/32]}}]
`, ns, strings.TrimSuffix(server, ":8080")))
		expect(t, probe{other, server, false}, probe{other, service, false}, probe{other, remoteAddr, true}, probe{allowed, server, true})
		c.mustKubectl(ctx, t, "-n", ns, "delete", "networkpolicy", "egress-except")
		expect(t, probe{other, server, true}, probe{other, service, true})
	})
}
