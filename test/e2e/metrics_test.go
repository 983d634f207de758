package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/prometheus/procfs"

	"github.com/kubernix/kubernix/pkg/images"
)

// TestMetrics checks, on the shared two-node cluster with the default addons, the
// metrics-server addon (issue 13, item 3): its APIService is Available
// and verified by the cluster CA (a caBundle, no insecureSkipTLSVerify),
// `kubectl top nodes` lists every node (metrics-server scraped each
// kubelet over TLS verified against the cluster CA: it runs without
// --kubelet-insecure-tls), `kubectl top pods -A` lists the addons' pods,
// and a HorizontalPodAutoscaler on CPU reads the CPU of a busy pod and
// scales its Deployment up.
func TestMetrics(t *testing.T) {
	e := sharedCluster(t)
	nodes := sharedRoot.nodeNames()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	t.Run("APIService verified by the cluster CA and Available", func(t *testing.T) {
		get := func(path string) string {
			return strings.TrimSpace(e.mustKubectl(ctx, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "jsonpath="+path))
		}
		if skip, ca := get("{.spec.insecureSkipTLSVerify}"), get("{.spec.caBundle}"); skip == "true" || ca == "" {
			t.Errorf("APIService v1beta1.metrics.k8s.io: insecureSkipTLSVerify %q, caBundle %q; want it verified by a caBundle", skip, ca)
		}
		// The aggregator checks it shortly after its endpoint turns Ready.
		eventually(t, time.Minute, "APIService Available", func() error {
			if s := get(`{.status.conditions[?(@.type=="Available")]}`); !strings.Contains(s, `"status":"True"`) {
				return fmt.Errorf("condition Available: %s", s)
			}
			return nil
		})
		args := e.mustKubectl(ctx, "-n", "kube-system", "get", "deployment", "metrics-server", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
		if strings.Contains(args, "insecure") {
			t.Errorf("metrics-server skips verifying the kubelets: %s", args)
		}
	})

	kubectl := func(args ...string) (string, error) { return e.kubectl(ctx, args...) }
	t.Run("kubectl top nodes lists every node", func(t *testing.T) { waitTopNodes(t, kubectl, nodes) })
	t.Run("kubectl top pods -A lists the addons' pods", func(t *testing.T) { waitTopPods(t, kubectl) })

	t.Run("a HorizontalPodAutoscaler on CPU scales a busy Deployment up", func(t *testing.T) {
		e.apply(ctx, burnerManifest)
		e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/burner", "--timeout=120s")
		// The HPA reads the pod's CPU once metrics-server has two scrapes
		// of it after it turned Ready (--metric-resolution=10s), at its
		// next sync (every 15s).
		eventuallyEvery(t, 3*time.Minute, metricsPoll, "the HPA reads the burner's CPU", func() error {
			out, err := e.kubectl(ctx, "get", "hpa", "burner", "-o", "jsonpath={.status.currentMetrics[0].resource.current.averageUtilization}")
			if err != nil {
				return err
			}
			if u, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || u <= 10 {
				return fmt.Errorf("CPU utilization %q, want a number above the 10%% target", out)
			}
			return nil
		})
		eventuallyEvery(t, 2*time.Minute, metricsPoll, "the HPA scales the burner up", func() error {
			out, err := e.kubectl(ctx, "get", "deployment", "burner", "-o", "jsonpath={.spec.replicas}")
			if err != nil {
				return err
			}
			if strings.TrimSpace(out) != "2" {
				return fmt.Errorf("burner has %s replicas, want 2 (maxReplicas); HPA: %s", out,
					e.mustKubectl(ctx, "describe", "hpa", "burner"))
			}
			return nil
		})
	})
}

// TestRootlessMetrics is TestMetrics reduced, rootless, on the shared
// rootless cluster (one node an ordinary user brought up): `kubectl top
// nodes` lists it and `kubectl top
// pods -A` the addons' pods.
func TestRootlessMetrics(t *testing.T) {
	rc := sharedRootlessCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kubectl := func(args ...string) (string, error) { return rc.u.kubectl(ctx, rc.kctx, args...) }
	t.Run("kubectl top nodes lists the node", func(t *testing.T) { waitTopNodes(t, kubectl, []string{rc.name + "-node-0"}) })
	t.Run("kubectl top pods -A lists the addons' pods", func(t *testing.T) { waitTopPods(t, kubectl) })
}

// metricsPoll is how often the tests of resource metrics look again:
// metrics-server scrapes every 10 s (--metric-resolution) and the HPA
// syncs every 15 s, so a shorter one only runs kubectl more often.
const metricsPoll = 2 * time.Second

// waitTopNodes waits until `kubectl top nodes` (run by kubectl) lists
// every node of nodes: metrics-server scraped each kubelet twice.
func waitTopNodes(t *testing.T, kubectl func(args ...string) (string, error), nodes []string) {
	t.Helper()
	eventuallyEvery(t, 2*time.Minute, metricsPoll, "top nodes", func() error {
		out, err := kubectl("top", "nodes", "--no-headers")
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if !hasRow(out, n) {
				return fmt.Errorf("node %s missing:\n%s", n, out)
			}
		}
		return nil
	})
}

// waitTopPods waits until `kubectl top pods -A` (run by kubectl) lists
// the pods of the CoreDNS and metrics-server addons in kube-system.
func waitTopPods(t *testing.T, kubectl func(args ...string) (string, error)) {
	t.Helper()
	eventuallyEvery(t, 2*time.Minute, metricsPoll, "top pods -A", func() error {
		out, err := kubectl("top", "pods", "-A", "--no-headers")
		if err != nil {
			return fmt.Errorf("%w%s", err, unmountedHierarchies())
		}
		for _, prefix := range []string{"coredns-", "metrics-server-"} {
			if !hasPodRow(out, "kube-system", prefix) {
				return fmt.Errorf("no pod %s* in kube-system:\n%s%s", prefix, out, unmountedHierarchies())
			}
		}
		return nil
	})
}

// hasPodRow reports whether a line of `kubectl top pods -A` output is a
// pod of namespace ns whose name starts with prefix.
func hasPodRow(out, ns, prefix string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == ns && strings.HasPrefix(f[1], prefix) {
			return true
		}
	}
	return false
}

// burnerManifest is a Deployment whose pod spins a shell loop, capped at
// 50m CPU, five times its 10m request, and a HorizontalPodAutoscaler that
// keeps its CPU at 10% of the request with one or two replicas.
var burnerManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: burner}
spec:
  replicas: 1
  selector: {matchLabels: {app: burner}}
  template:
    metadata: {labels: {app: burner}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: burner
          image: ` + images.AgnhostRef() + `
          imagePullPolicy: Never
          command: ["/bin/sh", "-c", "while :; do :; done"]
          resources:
            requests: {cpu: 10m}
            limits: {cpu: 50m}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burner}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burner}
  minReplicas: 1
  maxReplicas: 2
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: 10}
`

// unmountedHierarchies names, for a failure message, the cgroup v1
// hierarchies this process is in that are mounted nowhere: containerd's
// shim then cannot load any container's cgroup ("cannot find cgroup
// mount destination") and every container's CPU and memory read 0, which
// metrics-server drops. A named hierarchy that a test mounted and
// unmounted lingers like this. "" when there is none.
func unmountedHierarchies() string {
	self, err := procfs.Self()
	if err != nil {
		return ""
	}
	groups, err := self.Cgroups()
	if err != nil {
		return ""
	}
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil {
		return ""
	}
	var missing []string
	for _, g := range groups {
		if g.HierarchyID == 0 {
			continue
		}
		mounted := slices.ContainsFunc(mounts, func(m *mountinfo.Info) bool {
			opts := strings.Split(m.VFSOptions, ",")
			return slices.ContainsFunc(g.Controllers, func(c string) bool { return slices.Contains(opts, c) })
		})
		if !mounted {
			missing = append(missing, strings.Join(g.Controllers, ","))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("\n(cgroup v1 hierarchies mounted nowhere: %s: containers' stats read 0; mount and unmount each to release it)", strings.Join(missing, " "))
}
