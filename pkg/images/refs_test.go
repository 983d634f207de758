package images_test

import (
	"testing"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/images"
)

// TestBuiltinRefsMatchComponents ties the built-in images to what asks for
// them: each image is tagged with its pinned version from
// assets/versions.env (which the Makefile builds), and the pause and
// CoreDNS images carry exactly the refs that containerd's sandbox setting
// and the CoreDNS addon ask for. Bumping a version in one place only would
// make pods ask for an image that was never built.
func TestBuiltinRefsMatchComponents(t *testing.T) {
	tests := []struct {
		name       string
		versionKey string
		// component is the ref a component asks for, "" when only tests
		// use the image.
		component string
	}{
		{"pause", "PAUSE_VERSION", cluster.SandboxImage()},
		{"coredns", "COREDNS_VERSION", cluster.CoreDNSImage()},
		{"agnhost", "AGNHOST_VERSION", ""},
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
