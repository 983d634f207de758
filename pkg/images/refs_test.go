package images_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/images"
	"github.com/kubernix/kubernix/pkg/release"
)

// TestBuiltinRefsMatchComponents ties the built-in images to what asks for
// them: each image is tagged with its pinned version from
// assets/versions.env (which the Makefile builds), and the pause and
// CoreDNS images carry exactly the refs that containerd's sandbox setting
// and the CoreDNS and metrics-server addons ask for. Bumping a version in
// one place only would make pods ask for an image that was never built.
func TestBuiltinRefsMatchComponents(t *testing.T) {
	tests := []struct {
		name       string
		versionKey string
		// component is the ref a component asks for, "" when only tests
		// use the image.
		component string
	}{
		{"pause", "PAUSE_VERSION", release.Default().SandboxImage},
		{"coredns", "COREDNS_VERSION", addonImage(t, "coredns", "coredns/coredns")},
		{"agnhost", "AGNHOST_VERSION", ""},
		{"local-path-provisioner", "LOCAL_PATH_PROVISIONER_VERSION", addonImage(t, "local-path-storage", "rancher/local-path-provisioner")},
		{"busybox", "BUSYBOX_VERSION", addonImage(t, "local-path-storage", "library/busybox")},
		{"metrics-server", "METRICS_SERVER_VERSION", addonImage(t, "metrics-server", "metrics-server/metrics-server")},
		{"traefik", "TRAEFIK_VERSION", addonImage(t, "ingress", "library/traefik")},
	}
	if n := len(images.Builtins()); n != len(tests) {
		t.Fatalf("Builtins() has %d images, the test knows %d: add the new one here", n, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := images.Lookup(tt.name)
			if !ok {
				t.Fatalf("no built-in image %q", tt.name)
			}
			tag, err := b.Tag()
			if err != nil {
				t.Fatal(err)
			}
			want := assets.Version(tt.versionKey)
			if want == "" {
				t.Fatalf("assets/versions.env has no %s", tt.versionKey)
			}
			if tag.TagStr() != want {
				t.Errorf("image %s is tagged %q, versions.env has %s=%s", b.Ref, tag.TagStr(), tt.versionKey, want)
			}
			if tt.component != "" && b.Ref != tt.component {
				t.Errorf("built-in image %s: the components ask for %s", b.Ref, tt.component)
			}
		})
	}
}

// addonImage returns the image of repository repo (e.g.
// "coredns/coredns") that the addon's rendered manifest runs (its
// "image:" lines).
func addonImage(t *testing.T, name, repo string) string {
	t.Helper()
	a, ok := addons.Lookup(name)
	if !ok {
		t.Fatalf("no addon %q", name)
	}
	b, err := a.Render(addons.Params{ClusterDomain: "cluster.local", DNSIP: netip.MustParseAddr("10.0.0.10")})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, line := range strings.Split(string(b), "\n") {
		if ref, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok && strings.Contains(ref, "/"+repo+":") {
			refs = append(refs, ref)
		}
	}
	if len(slices.Compact(refs)) != 1 {
		t.Fatalf("addon %s runs images %q of %s, want one", name, refs, repo)
	}
	return refs[0]
}
