package addons

import (
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/assets"
	goldenfile "github.com/kubernix/kubernix/internal/golden"
	"github.com/kubernix/kubernix/pkg/images"
)

var update = flag.Bool("update", false, "rewrite crds/ from the Gateway API module in Go's module cache")

// TestTable checks every addon of the table: a unique name; a manifest
// or components; a manifest that renders, parses as YAML documents and
// runs only built-in images it names, with a Deployment to wait for.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Table {
		t.Run(a.Name, func(t *testing.T) {
			if a.Name == "" || seen[a.Name] {
				t.Fatalf("name %q empty or given twice", a.Name)
			}
			seen[a.Name] = true
			if a.Manifest == "" {
				if len(a.Components) == 0 || a.Deployment != "" || len(a.Images) != 0 {
					t.Fatalf("an addon without a manifest needs components, and no Deployment or images: %+v", a)
				}
				return
			}
			if ns, name, ok := strings.Cut(a.Deployment, "/"); !ok || ns == "" || name == "" {
				t.Errorf("deployment %q: want namespace/name", a.Deployment)
			}
			b, err := a.Render(Params{ClusterDomain: "cluster.local", DNSIP: netip.MustParseAddr("10.96.0.10")})
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range strings.Split(string(b), "\n---\n") {
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Errorf("manifest document does not parse: %v\n%s", err, doc)
				}
			}
			for _, line := range strings.Split(string(b), "\n") {
				ref, ok := strings.CutPrefix(strings.TrimSpace(line), "image: ")
				if !ok {
					continue
				}
				found := false
				for _, name := range a.Images {
					if bi, ok := images.Lookup(name); ok && bi.Ref == ref {
						found = true
					}
				}
				if !found {
					t.Errorf("manifest runs %s, which is not among its built-in images %v", ref, a.Images)
				}
			}
		})
	}
}

// TestRenderErrors checks that an addon naming an unknown built-in image
// or a missing manifest fails with its name.
func TestRenderErrors(t *testing.T) {
	for _, a := range []Addon{
		{Name: "bad-image", Manifest: "coredns.yaml.tmpl", Images: []string{"nope"}},
		{Name: "no-manifest", Manifest: "nope.yaml.tmpl"},
	} {
		if _, err := a.Render(Params{}); err == nil || !strings.Contains(err.Error(), a.Name) {
			t.Errorf("%s: error %v, want one naming the addon", a.Name, err)
		}
	}
}

// TestLocalPathConfig checks the local-path-storage ConfigMap's
// config.json: valid JSON mapping each node to its volumes dir, whatever
// characters the paths hold.
func TestLocalPathConfig(t *testing.T) {
	a, ok := Lookup("local-path-storage")
	if !ok {
		t.Fatal("no addon local-path-storage")
	}
	tests := []struct {
		name string
		dirs []NodeDir
	}{
		{"one node", []NodeDir{{Node: "kubernix-node-0", Dir: "/var/lib/kubernix/kubernix/nodes/kubernix-node-0/volumes"}}},
		{"two nodes, odd paths", []NodeDir{
			{Node: "a-node-0", Dir: `/tmp/with "quotes"/a-node-0/volumes`},
			{Node: "a-node-1", Dir: `/tmp/back\slash: colon/a-node-1/volumes`},
		}},
	}
	type nodePath struct {
		Node  string   `json:"node"`
		Paths []string `json:"paths"`
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := a.Render(Params{ClusterDomain: "cluster.local", DNSIP: netip.MustParseAddr("10.96.0.10"), Volumes: tt.dirs})
			if err != nil {
				t.Fatal(err)
			}
			var cm struct {
				Kind     string                `json:"kind"`
				Metadata struct{ Name string } `json:"metadata"`
				Data     map[string]string     `json:"data"`
			}
			found := false
			for _, doc := range strings.Split(string(b), "\n---\n") {
				if err := yaml.Unmarshal([]byte(doc), &cm); err != nil || cm.Kind != "ConfigMap" || cm.Metadata.Name != "local-path-config" {
					continue
				}
				found = true
				var cfg struct {
					NodePathMap []nodePath `json:"nodePathMap"`
				}
				if err := json.Unmarshal([]byte(cm.Data["config.json"]), &cfg); err != nil {
					t.Fatalf("config.json: %v\n%s", err, cm.Data["config.json"])
				}
				var want []nodePath
				for _, d := range tt.dirs {
					want = append(want, nodePath{Node: d.Node, Paths: []string{d.Dir}})
				}
				if !reflect.DeepEqual(cfg.NodePathMap, want) {
					t.Errorf("nodePathMap = %+v, want %+v", cfg.NodePathMap, want)
				}
			}
			if !found {
				t.Fatal("no ConfigMap local-path-config in the manifest")
			}
		})
	}
}

// TestServing checks every addon with a serving certificate against its
// rendered manifest: the Service it is for exists, a pod mounts its
// Secret, its APIService exists and neither skips TLS verification nor
// carries a caBundle of its own (kubernix sets it), and no container
// skips verifying the kubelets.
func TestServing(t *testing.T) {
	for _, a := range Table {
		if a.Serving == nil {
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			b, err := a.Render(Params{ClusterDomain: "cluster.local", DNSIP: netip.MustParseAddr("10.96.0.10")})
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(strings.ToLower(line), "insecure") {
					t.Errorf("manifest skips TLS verification: %q", line)
				}
			}
			ns, svc := a.Serving.ServiceName()
			found := map[string]bool{}
			for _, doc := range strings.Split(string(b), "\n---\n") {
				var obj struct {
					Kind     string
					Metadata struct{ Name, Namespace string }
					Spec     struct {
						CABundle string `json:"caBundle"`
						Template struct {
							Spec struct {
								Volumes []struct {
									Secret *struct {
										SecretName string `json:"secretName"`
									}
								}
							}
						}
					}
				}
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatal(err)
				}
				switch {
				case obj.Kind == "Service" && obj.Metadata.Namespace == ns && obj.Metadata.Name == svc:
					found["service"] = true
				case obj.Kind == "APIService" && obj.Metadata.Name == a.Serving.APIService:
					found["apiservice"] = true
					if obj.Spec.CABundle != "" {
						t.Errorf("APIService %s has a caBundle of its own", obj.Metadata.Name)
					}
				case obj.Kind == "Deployment" && obj.Metadata.Namespace == ns:
					for _, v := range obj.Spec.Template.Spec.Volumes {
						if v.Secret != nil && v.Secret.SecretName == a.Serving.Secret {
							found["secret"] = true
						}
					}
				}
			}
			for _, what := range []string{"service", "apiservice", "secret"} {
				if !found[what] {
					t.Errorf("manifest lacks the %s that Serving %+v names", what, *a.Serving)
				}
			}
		})
	}
}

// TestTolerations checks that every addon with a Deployment tolerates the
// taints that mark a node for critical addons or the control plane, as
// kubeadm's and k3s's addons do, and that its tolerations come from its
// manifest.
func TestTolerations(t *testing.T) {
	taints := []corev1.Taint{
		{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoExecute},
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
	}
	for _, a := range Table {
		t.Run(a.Name, func(t *testing.T) {
			tols, err := a.Tolerations()
			if err != nil {
				t.Fatal(err)
			}
			if a.Deployment == "" {
				if len(tols) != 0 {
					t.Errorf("tolerations %v without a Deployment", tols)
				}
				return
			}
			for _, taint := range taints {
				if !Tolerates(tols, taint) {
					t.Errorf("tolerations %v do not tolerate %v", tols, taint)
				}
			}
		})
	}
	if _, err := (Addon{Name: "x", Manifest: "coredns.yaml.tmpl", Images: []string{"coredns"}, Deployment: "kube-system/nope"}).Tolerations(); err == nil {
		t.Error("no error for a Deployment the manifest lacks")
	}
}

// TestGatewayAPICRDs checks the ingress addon's CRDs file: the standard
// channel of GATEWAY_API_VERSION, a CustomResourceDefinition per
// resource traefik watches, and (where the module is in Go's module
// cache, as after `make bins`) byte for byte the module's
// config/crd/standard files in its kustomization's order; -update
// rewrites the file from them.
func TestGatewayAPICRDs(t *testing.T) {
	a, _ := Lookup(Ingress)
	version := assets.Version("GATEWAY_API_VERSION")
	t.Run("the module's files", func(t *testing.T) {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			t.Skipf("go env GOMODCACHE: %v", err)
		}
		dir := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "gateway-api@"+version, "config", "crd")
		kustomization, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Skipf("sigs.k8s.io/gateway-api %s is not in the module cache (make bins puts it there): %v", version, err)
		}
		var k struct {
			Resources []string `json:"resources"`
		}
		if err := yaml.Unmarshal(kustomization, &k); err != nil {
			t.Fatal(err)
		}
		var want []byte
		for _, r := range k.Resources {
			f, err := os.ReadFile(filepath.Join(dir, r))
			if err != nil {
				t.Fatal(err)
			}
			want = append(append(want, "---\n"...), f...)
		}
		goldenfile.Check(t, filepath.Join("crds", a.CRDs), want, *update)
	})
	b, err := a.CRDManifest()
	if err != nil {
		t.Fatal(err)
	}
	crds := map[string]bool{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("a document does not parse: %v", err)
		}
		if obj.Kind != "CustomResourceDefinition" {
			continue
		}
		crds[obj.Metadata.Name] = true
		if v, ch := obj.Metadata.Annotations["gateway.networking.k8s.io/bundle-version"], obj.Metadata.Annotations["gateway.networking.k8s.io/channel"]; v != version || ch != "standard" {
			t.Errorf("CRD %s is of %s channel %s; want %s standard", obj.Metadata.Name, v, ch, version)
		}
	}
	for _, r := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "referencegrants", "backendtlspolicies", "listenersets"} {
		if !crds[r+".gateway.networking.k8s.io"] {
			t.Errorf("no CRD of %s.gateway.networking.k8s.io", r)
		}
	}

}
