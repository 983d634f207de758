package containerd

import (
	"testing"

	"github.com/containerd/containerd/v2/core/images"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestImageName(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"docker-archive", map[string]string{images.AnnotationImageName: "registry.k8s.io/pause:3.10.2"}, "registry.k8s.io/pause:3.10.2"},
		{"containerd name wins", map[string]string{images.AnnotationImageName: "a.io/x:1", ocispec.AnnotationRefName: "b.io/y:2"}, "a.io/x:1"},
		{"oci full ref", map[string]string{ocispec.AnnotationRefName: "example.com/app:1"}, "example.com/app:1"},
		{"oci short ref normalized", map[string]string{ocispec.AnnotationRefName: "busybox:1.36"}, "docker.io/library/busybox:1.36"},
		{"oci bare tag", map[string]string{ocispec.AnnotationRefName: "1.36"}, ""},
		{"oci invalid", map[string]string{ocispec.AnnotationRefName: "example.com/app:bad tag"}, ""},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := imageName(tt.annotations); got != tt.want {
				t.Errorf("imageName(%v) = %q, want %q", tt.annotations, got, tt.want)
			}
		})
	}
}
