package e2e

import (
	"context"
	"fmt"
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

// TestNetworkPolicy checks issue #26 on the shared two-node cluster:
// NetworkPolicies are enforced, across nodes and through a Service IP.
// A server on node 0 is reached by three clients (two on node 1 in the
// test's namespace, one on node 0 in a namespace labelled team=blue);
// a deny-all ingress policy blocks every one; an allow rule by pod
// label and one by namespace label let exactly the chosen two in;
// removing the policies restores traffic; an egress policy of ipBlock
// 0.0.0.0/0 except the server's IP blocks a client from the server, by
// pod IP and by Service IP, and nothing else; its removal restores it.
func TestNetworkPolicy(t *testing.T) {
	e := sharedCluster(t)
	nodes := sharedRoot.nodeNames()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	blue := e.namespace + "-blue"
	e.namespaceless(func() {
		e.mustKubectl(ctx, "create", "namespace", blue)
		e.mustKubectl(ctx, "label", "namespace", blue, "team=blue")
	})
	t.Cleanup(func() {
		e.namespaceless(func() { e.kubectl(context.Background(), "delete", "namespace", blue, "--wait=false") })
	})
	e.apply(ctx, strings.Join([]string{
		netpolPod("server", "", nodes[0], "server"),
		netpolPod("allowed", "", nodes[1], "allowed"),
		netpolPod("other", "", nodes[1], "other"),
		`apiVersion: v1
kind: Service
metadata: {name: server}
spec:
  selector: {role: server}
  ports: [{port: 80, targetPort: 8080}]
`}, "---\n"))
	e.namespaceless(func() { e.apply(ctx, netpolPod("remote", blue, nodes[0], "remote")) })
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/server", "pod/allowed", "pod/other", "--timeout=120s")
	e.mustKubectl(ctx, "wait", "-n", blue, "--for=condition=Ready", "pod/remote", "--timeout=120s")
	podIP := func(ns, pod string) string {
		args := []string{"get", "pod", pod, "-o", "jsonpath={.status.podIP}"}
		if ns != "" {
			args = append([]string{"-n", ns}, args...)
		}
		return strings.TrimSpace(e.mustKubectl(ctx, args...))
	}
	server := podIP("", "server") + ":8080"
	service := strings.TrimSpace(e.mustKubectl(ctx, "get", "service", "server", "-o", "jsonpath={.spec.clusterIP}")) + ":80"
	remoteAddr := podIP(blue, "remote") + ":8080"

	// connects reports whether client (namespace/pod) opens a TCP
	// connection to addr, as upstream's probes do (agnhost connect).
	connects := func(client, addr string) bool {
		ns, pod, _ := strings.Cut(client, "/")
		_, err := e.kubectl(ctx, "-n", ns, "exec", pod, "--", "/agnhost", "connect", addr, "--timeout=2s", "--protocol=tcp")
		return err == nil
	}
	allowed, other, remote := e.namespace+"/allowed", e.namespace+"/other", blue+"/remote"
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
		e.apply(ctx, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`)
		expect(t, all(false)...)
	})
	t.Run("allow by pod label and by namespace label lets only those in", func(t *testing.T) {
		e.apply(ctx, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-chosen}
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
		e.mustKubectl(ctx, "delete", "networkpolicy", "deny-all", "allow-chosen")
		expect(t, all(true)...)
	})
	t.Run("egress ipBlock except blocks a pod and its Service IP only", func(t *testing.T) {
		e.apply(ctx, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-except}
spec:
  podSelector: {matchLabels: {role: other}}
  policyTypes: [Egress]
  egress:
    - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [%s/32]}}]
`, strings.TrimSuffix(server, ":8080")))
		expect(t, probe{other, server, false}, probe{other, service, false}, probe{other, remoteAddr, true}, probe{allowed, server, true})
		e.mustKubectl(ctx, "delete", "networkpolicy", "egress-except")
		expect(t, probe{other, server, true}, probe{other, service, true})
	})
}
