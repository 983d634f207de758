package addons

import (
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/images"
)

// TestTable checks every addon of the table: a unique name, a manifest
// that renders, parses as YAML documents and runs only built-in images
// it names, and a Deployment to wait for.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Table {
		t.Run(a.Name, func(t *testing.T) {
			if a.Name == "" || seen[a.Name] {
				t.Fatalf("name %q empty or given twice", a.Name)
			}
			seen[a.Name] = true
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
