package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// componentsCIDR is the range of this file's clusters.
const componentsCIDR = "10.181.0.0/16"

// componentsAuditPolicy logs ConfigMaps of the default namespace with
// their bodies and nothing else: kubernix's own policy logs every request
// at Metadata level, without bodies.
const componentsAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
  namespaces: [default]
- level: None
`

// componentsFile is the cluster file of TestComponents, two nodes by
// its [[nodes]] tables; %s is the audit policy's path.
const componentsFile = `addons = []
registry_port = 0
feature_gates = { CoordinatedLeaderElection = true }
runtime_config = { 'coordination.k8s.io/v1beta1' = 'true' }
audit_policy = %q

[components.kube-apiserver]
args = ['--enable-admission-plugins=NodeRestriction,DenyServiceExternalIPs']

[components.containerd]
config_patches = ['''
[plugins.'io.containerd.cri.v1.runtime']
  max_container_log_line_size = 32768
''']

[[nodes]]

[[nodes]]
kubelet_args = ['--max-pods=50']
`

// TestComponents starts a 2-node cluster from a cluster file with a
// feature gate on, a beta API group version enabled, an extra admission
// plugin, a kubelet flag on node 1, a containerd config patch and an
// audit policy (issue 15), and observes each in the running cluster.
func TestComponents(t *testing.T) {
	e := newEnv(t, "kxc-comp", componentsCIDR)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	file := filepath.Join(dir, "cluster.toml")
	if err := os.WriteFile(policy, []byte(componentsAuditPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(fmt.Sprintf(componentsFile, policy)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := e.mustKubernix(ctx, "up", "--config", file, "--dry-run")
	var missing []string
	for _, want := range []string{"--feature-gates=CoordinatedLeaderElection=true", "--runtime-config=coordination.k8s.io/v1beta1=true",
		"--enable-admission-plugins=NodeRestriction,DenyServiceExternalIPs", "--max-pods=50"} {
		if !strings.Contains(plan, want) {
			missing = append(missing, want)
		}
	}
	if strings.Contains(plan, "--enable-admission-plugins=NodeRestriction ") {
		missing = append(missing, "no --enable-admission-plugins of kubernix's")
	}
	if len(missing) > 0 {
		t.Errorf("up --dry-run does not show %q:\n%s", missing, plan)
	}
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach", "--config", file))
	node0, node1 := e.name+"-node-0", e.name+"-node-1"
	// kubectl fails the subtest t, not the whole test, on an error.
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := e.kubectl(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("feature gate on in the apiserver and the kubelets", func(t *testing.T) {
		metrics := kubectl(t, "get", "--raw", "/metrics")
		if !regexp.MustCompile(`(?m)^kubernetes_feature_enabled\{name="CoordinatedLeaderElection"[^}]*\} 1$`).MatchString(metrics) {
			t.Errorf("the apiserver's /metrics do not show CoordinatedLeaderElection enabled: %q",
				regexp.MustCompile(`(?m)^kubernetes_feature_enabled\{name="CoordinatedLeaderElection".*$`).FindString(metrics))
		}
		for _, n := range []string{node0, node1} {
			configz := kubectl(t, "get", "--raw", "/api/v1/nodes/"+n+"/proxy/configz")
			var cz struct {
				KubeletConfig struct {
					FeatureGates map[string]bool `json:"featureGates"`
				} `json:"kubeletconfig"`
			}
			if err := json.Unmarshal([]byte(configz), &cz); err != nil {
				t.Fatalf("%s configz: %v: %s", n, err, configz)
			}
			if !cz.KubeletConfig.FeatureGates["CoordinatedLeaderElection"] {
				t.Errorf("kubelet of %s: featureGates %v, want CoordinatedLeaderElection on", n, cz.KubeletConfig.FeatureGates)
			}
		}
	})

	t.Run("runtime config serves coordination.k8s.io/v1beta1", func(t *testing.T) {
		versions := kubectl(t, "api-versions")
		if !strings.Contains(versions, "coordination.k8s.io/v1beta1\n") {
			t.Errorf("discovery lacks coordination.k8s.io/v1beta1:\n%s", versions)
		}
		kubectl(t, "get", "leasecandidates.v1beta1.coordination.k8s.io", "-A")
	})

	t.Run("admission plugin DenyServiceExternalIPs refuses externalIPs", func(t *testing.T) {
		svc := filepath.Join(dir, "svc.yaml")
		manifest := "apiVersion: v1\nkind: Service\nmetadata: {name: kxc-external, namespace: default}\n" +
			"spec: {ports: [{port: 80}], externalIPs: [10.181.250.1]}\n"
		if err := os.WriteFile(svc, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := e.kubectl(ctx, "create", "-f", svc)
		if err == nil || !strings.Contains(err.Error(), "externalIPs") {
			t.Errorf("a Service with externalIPs: %v, want it refused by DenyServiceExternalIPs", err)
		}
	})

	t.Run("node 1's kubelet runs with --max-pods=50", func(t *testing.T) {
		for n, want := range map[string]string{node0: "110", node1: "50"} {
			if got := kubectl(t, "get", "node", n, "-o", "jsonpath={.status.capacity.pods}"); got != want {
				t.Errorf("node %s: capacity pods %s, want %s", n, got, want)
			}
		}
	})

	t.Run("containerd runs with the config patch", func(t *testing.T) {
		for _, n := range []string{node0, node1} {
			sock := filepath.Join(e.stateDir, "nodes", n, "containerd.sock")
			out, err := exec.CommandContext(ctx, filepath.Join(e.binDir, "crictl"), "--runtime-endpoint", "unix://"+sock, "info").Output()
			if err != nil {
				t.Fatalf("crictl info on %s: %v", n, err)
			}
			var info struct {
				Config struct {
					MaxContainerLogLineSize int `json:"maxContainerLogLineSize"`
				} `json:"config"`
			}
			if err := json.Unmarshal(out, &info); err != nil {
				t.Fatalf("crictl info on %s: %v: %s", n, err, out)
			}
			if got := info.Config.MaxContainerLogLineSize; got != 32768 {
				t.Errorf("containerd of %s: maxContainerLogLineSize %d, want 32768 (the patch)", n, got)
			}
		}
	})

	t.Run("audit log follows the user's policy", func(t *testing.T) {
		kubectl(t, "create", "configmap", "kxc-audited", "--from-literal=k=v")
		kubectl(t, "create", "namespace", "kxc-unaudited")
		log := filepath.Join(e.stateDir, "logs", "control-plane", "audit.log")
		eventually(t, 30*time.Second, "the ConfigMap's create in the audit log with its body", func() error {
			b, err := os.ReadFile(log)
			if err != nil {
				return err
			}
			var found bool
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var ev struct {
					Level     string `json:"level"`
					Verb      string `json:"verb"`
					ObjectRef struct{ Resource, Name string }
					Request   json.RawMessage `json:"requestObject"`
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					return fmt.Errorf("audit line %q: %w", line, err)
				}
				if ev.ObjectRef.Resource != "configmaps" {
					return fmt.Errorf("audit log holds an event the policy excludes: %s", line)
				}
				if ev.Verb == "create" && ev.ObjectRef.Name == "kxc-audited" && ev.Level == "RequestResponse" && len(ev.Request) > 0 {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("no RequestResponse create event of ConfigMap kxc-audited in %s", log)
			}
			return nil
		})
	})
}

// TestComponentsRefused runs up and up --dry-run with a feature gate no
// component knows and with a file that is no audit policy, and config
// validate with that gate: each exits 2 naming the flag (and, for the
// gate, each component refusing it), and leaves nothing behind.
func TestComponentsRefused(t *testing.T) {
	hostAlone(t) // its leak check sees every new network namespace
	e := newEnv(t, "kxc-bad", componentsCIDR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	notPolicy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(notPolicy, []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown feature gate", []string{"--feature-gates", "KubernixNoSuchGate=true,CoordinatedLeaderElection=true"},
			[]string{"--feature-gates KubernixNoSuchGate=true: kube-apiserver refuses it", "kube-controller-manager refuses it",
				"kube-scheduler refuses it", "kubelet refuses it", "kube-proxy refuses it", "unrecognized feature gate: KubernixNoSuchGate"}},
		{"not an audit policy", []string{"--audit-policy", notPolicy}, []string{"--audit-policy " + notPolicy + ": not an audit policy"}},
	}
	for _, tt := range tests {
		for _, mode := range [][]string{{"--detach"}, {"--dry-run"}} {
			t.Run(tt.name+" "+mode[0], func(t *testing.T) {
				e.upRefused(ctx, t, append(mode, tt.args...), tt.want...)
			})
		}
	}
	t.Run("config validate asks the binaries", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "gates.toml")
		text := fmt.Sprintf("feature_gates = { KubernixNoSuchGate = true }\nstate_dir = %q\n", e.stateDir)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		before := dirList(t, e.stateDir)
		cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), "config", "validate", file)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--feature-gates KubernixNoSuchGate=true: kube-apiserver refuses it") {
			t.Errorf("config validate %s: %v, want exit 2 naming the gate and kube-apiserver:\n%s", file, err, out)
		}
		e.checkRefusedLeftNothing(t, before)
	})
}
