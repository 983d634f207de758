package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"

	"github.com/kubernix/kubernix/pkg/release"
)

// TestOlderRelease runs the release before the default (the first of
// versions.env's KUBERNETES_RELEASES, which `make e2e` builds; or the one
// KUBERNIX_E2E_RELEASE names, `make e2e E2E_RELEASE=v1.35.4`) as a user
// would pick it, `--kubernetes-version v1.<minor>`, on 3 nodes: the
// apiserver and every node report that release; list, status (-o json)
// and config view show it; TestMultiNode's workload checks pass (spread,
// pod to pod across nodes, ClusterIP, NodePort, DNS); kubectl logs, exec
// and port-forward work; the addons are Available. Then the upgrade: with
// a PVC holding data and a LoadBalancer Service added, the stopped cluster
// is brought up with the release one minor newer; the nodes
// report it, and the Deployment, the data and the LoadBalancer IP are
// still there and serve. A downgrade back is refused with exit 2 and
// changes nothing. down leaves nothing.
func TestOlderRelease(t *testing.T) {
	older, newer := olderRelease(t)
	e := newEnv(t, "e2e-rel", "10.136.0.0/16", "--nodes", "3", "--kubernetes-version", semver.MajorMinor(older))
	if bin := filepath.Join(filepath.Dir(e.binDir), "releases", older, "bin"); !isFile(filepath.Join(bin, "kube-apiserver")) {
		t.Fatalf("release %s is not built in %s: run `make bins KUBERNETES_VERSION=%s` (`make e2e` does)", older, bin, older)
	}
	e.parallelAt(weightLong)
	nodes := []string{"e2e-rel-node-0", "e2e-rel-node-1", "e2e-rel-node-2"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))

	t.Run("the apiserver and every node run "+older, func(t *testing.T) {
		e.wantRelease(ctx, t, older, nodes)
	})
	t.Run("list, status and config view show "+older, func(t *testing.T) {
		e.wantShownRelease(ctx, t, older, "running")
		e.wantViewed(ctx, t, older)
	})
	checkWorkloads(ctx, t, e, nodes)
	checkKubectlTools(ctx, t, e)
	t.Run("addons Available, status healthy", func(t *testing.T) {
		out := e.mustKubectl(ctx, "get", "deployments", "-A", "-o",
			`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="Available")].status}{"\n"}{end}`)
		for _, d := range []string{"kube-system/coredns", "kube-system/metrics-server", "local-path-storage/local-path-provisioner"} {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(d) + ` True$`).MatchString(out) {
				t.Errorf("deployment %s is not Available:\n%s", d, out)
			}
		}
		if out, code := e.kubernix(ctx, "status"); code != 0 {
			t.Errorf("status exited %d:\n%s", code, out)
		}
	})

	// What the upgrade must keep: the Deployment above, a volume's data
	// and a LoadBalancer IP.
	c := &storageCluster{t: t, stateDir: e.stateDir, kubectl: e.kubectl, manifestDir: e.stateDir}
	c.apply(ctx, statefulSetManifest(1))
	vols := c.volumes(ctx, 1)
	contents := c.writeFiles(ctx, vols)
	e.apply(ctx, lbService("lb-rel"))
	// An address of the pool, the third /20 of --cidr (the ingress
	// addon's Service, deployed after Ready, may hold the first).
	lbIP := e.assignedIngress(ctx, "lb-rel", netip.MustParsePrefix("10.136.32.0/20"))
	e.wantServed(ctx, t, "http://"+lbIP+"/hostname", "netexec-")
	e.mustKubernix(ctx, "down")

	t.Run("up with "+newer+" upgrades the stopped cluster in place", func(t *testing.T) {
		out := e.mustKubernix(ctx, "up", "--detach", "--kubernetes-version", semver.MajorMinor(newer))
		if want := fmt.Sprintf("kubernetes_version: '%s' → '%s'", older, newer); !strings.Contains(out, want) {
			t.Errorf("up does not say it applies %q:\n%s", want, out)
		}
		e.wantRelease(ctx, t, newer, nodes)
		e.wantShownRelease(ctx, t, newer, "running")
		e.wantViewed(ctx, t, newer)
		// Available holds once 5 of 6 are (maxUnavailable 25%): wait for
		// all 6, then check.
		_, _ = e.kubectl(ctx, "wait", "--for=jsonpath={.status.readyReplicas}=6", "deployment/netexec", "--timeout=180s")
		if got := strings.TrimSpace(e.mustKubectl(ctx, "get", "deployment", "netexec", "-o", "jsonpath={.status.readyReplicas}")); got != "6" {
			t.Errorf("netexec has %s ready replicas after the upgrade, want 6", got)
		}
		for _, v := range c.volumes(ctx, 1) {
			c.wantFile(ctx, v, contents[v.pod], "after the upgrade")
		}
		e.waitIngress(ctx, "lb-rel", lbIP)
		e.wantServed(ctx, t, "http://"+lbIP+"/hostname", "netexec-")
	})
	e.mustKubernix(ctx, "down")

	t.Run("a downgrade is refused and changes nothing", func(t *testing.T) {
		out, code := e.kubernix(ctx, "up", "--detach", "--kubernetes-version", older)
		if code != 2 || !strings.Contains(out, "downgrade") || !strings.Contains(out, "kubernetes_version") {
			t.Errorf("up with %s after %s exited %d, want 2 naming kubernetes_version and the downgrade:\n%s", older, newer, code, out)
		}
		e.wantShownRelease(ctx, t, newer, "stopped")
		e.wantViewed(ctx, t, newer)
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Errorf("the refused up left:\n%s", strings.Join(left, "\n"))
		}
	})
}

// olderRelease returns the release TestOlderRelease starts with
// (KUBERNIX_E2E_RELEASE, else the newest but the default) and the one it
// upgrades to, a minor newer; it skips when kubernix builds one release
// only, and fails for a release it does not build or one with no newer.
func olderRelease(t *testing.T) (older, newer string) {
	known := release.Known()
	if len(known) < 2 {
		t.Skip("versions.env lists no release besides the default")
	}
	older = known[1]
	if v := os.Getenv("KUBERNIX_E2E_RELEASE"); v != "" {
		older = v
	}
	i := slices.Index(known, older)
	if i < 1 {
		t.Fatalf("KUBERNIX_E2E_RELEASE=%s: not one of the releases kubernix builds but the default: %v", older, known[1:])
	}
	return older, known[i-1]
}

// wantRelease checks that the apiserver and every node of nodes report
// the Kubernetes version, and that each node's kubelet runs from that
// release's binaries.
func (e *env) wantRelease(ctx context.Context, t *testing.T, version string, nodes []string) {
	t.Helper()
	var v struct {
		Server struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(e.mustKubectl(ctx, "version", "-o", "json")), &v); err != nil || v.Server.GitVersion != version {
		t.Errorf("the apiserver reports %q (%v), want %s", v.Server.GitVersion, err, version)
	}
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
	out := e.mustKubectl(ctx, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion}{"\n"}{end}`)
	for _, n := range nodes {
		if !strings.Contains(out, n+" "+version+"\n") {
			t.Errorf("node %s does not report kubelet %s:\n%s", n, version, out)
		}
	}
}

// wantShownRelease checks that list -o json shows the cluster in state
// with the Kubernetes version, and, while it runs, that status -o json
// does, for the cluster and each node.
func (e *env) wantShownRelease(ctx context.Context, t *testing.T, version, state string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), "list", "-o", "json").Output()
	var clusters []listed
	if err == nil {
		err = json.Unmarshal(out, &clusters)
	}
	if err != nil {
		t.Fatalf("kubernix list -o json: %v:\n%s", err, out)
	}
	found := false
	for _, c := range clusters {
		if c.Name == e.name {
			found = true
			if c.Version != version || c.State != state {
				t.Errorf("list shows %s %s %s, want %s %s", c.Name, c.Version, c.State, version, state)
			}
		}
	}
	if !found {
		t.Errorf("list does not show %s", e.name)
	}
	if state != "running" {
		return
	}
	var st struct {
		Version string `json:"kubernetesVersion"`
		Nodes   []struct {
			Kubelet string `json:"kubeletVersion"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(e.mustKubernix(ctx, "status", "-o", "json")), &st); err != nil || st.Version != version || len(st.Nodes) == 0 {
		t.Errorf("status -o json: kubernetesVersion %q, %d nodes (%v); want %s", st.Version, len(st.Nodes), err, version)
	}
	for _, n := range st.Nodes {
		if n.Kubelet != version {
			t.Errorf("status -o json shows a node's kubelet %q, want %s", n.Kubelet, version)
		}
	}
}

// wantViewed checks that config view, given only the cluster's name,
// shows the kubernetes_version its last up resolved (a minor asked for
// is recorded as the patch it ran), which the next up keeps.
func (e *env) wantViewed(ctx context.Context, t *testing.T, asked string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), "config", "view", "--name", e.name, "--state-dir", e.stateDir)
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nkubernetes_version = '"+asked+"'\n") {
		t.Errorf("config view: %v; want it to show kubernetes_version = '%s':\n%s", err, asked, out)
	}
}

// wantServed checks that a GET of url from the host answers with a body
// starting with prefix, within 30 s.
func (e *env) wantServed(ctx context.Context, t *testing.T, url, prefix string) {
	t.Helper()
	eventually(t, 30*time.Second, "GET "+url, func() error {
		body, err := httpGet(ctx, url)
		if err == nil && !strings.HasPrefix(body, prefix) {
			return fmt.Errorf("answer %q does not start with %q", body, prefix)
		}
		return err
	})
}

// isFile reports whether p is a regular file (after symlinks).
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
