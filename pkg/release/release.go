// Package release names the Kubernetes releases kubernix can run. A
// Release holds the versions of the binaries built for it (the Makefile
// builds them from assets/versions.env) and the image its pod sandboxes
// run; a plan carries one, every component Spec receives it, and doctor and
// bins.Required check the binaries against it. Flags and config fields that
// differ between releases are chosen in the component packages, from the
// Release their Spec holds.
package release

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubernix/kubernix/assets"
)

// Release is one Kubernetes release and what kubernix runs with it.
type Release struct {
	// Kubernetes is the release's version as its binaries print it, e.g.
	// "v1.37.2" (KUBERNETES_VERSION of assets/versions.env).
	Kubernetes string
	// Containerd is the version of containerd and its runc shim built for
	// the release, e.g. "v2.4.2" (CONTAINERD_VERSION).
	Containerd string
	// Registry is the version of the local registry (distribution's
	// cmd/registry), e.g. "v3.1.2" (REGISTRY_VERSION).
	Registry string
	// SandboxImage is the pod sandbox image's reference: kubeadm's
	// PauseVersion for the release, which containerd pins, e.g.
	// "registry.k8s.io/pause:3.10.2" (PAUSE_VERSION).
	SandboxImage string
}

// ErrUnsupported is returned, wrapped, by Lookup for a version kubernix
// has no binaries for.
var ErrUnsupported = errors.New("unsupported Kubernetes version")

// Default is the release a cluster runs unless told otherwise: the one
// assets/versions.env pins.
func Default() Release {
	v := assets.Versions()
	return Release{
		Kubernetes:   v["KUBERNETES_VERSION"],
		Containerd:   v["CONTAINERD_VERSION"],
		Registry:     v["REGISTRY_VERSION"],
		SandboxImage: "registry.k8s.io/pause:" + v["PAUSE_VERSION"],
	}
}

// Supported lists the releases kubernix can run, newest first.
func Supported() []Release { return []Release{Default()} }

// Lookup returns the supported release of version ("v1.37.2", "1.37.2"
// or the minor "1.37", which picks its newest patch). The error wraps
// ErrUnsupported and lists the supported versions.
func Lookup(version string) (Release, error) {
	want := strings.TrimPrefix(strings.TrimSpace(version), "v")
	var names []string
	for _, r := range Supported() {
		have := strings.TrimPrefix(r.Kubernetes, "v")
		if have == want || strings.HasPrefix(have, want+".") && strings.Count(want, ".") == 1 {
			return r, nil
		}
		names = append(names, r.Kubernetes)
	}
	return Release{}, fmt.Errorf("%w %q: kubernix runs %s", ErrUnsupported, version, strings.Join(names, ", "))
}

// Minor is the release's minor version, e.g. 37 for "v1.37.2"; 0 if the
// version does not parse as k8s.io/apimachinery's util/version
// ParseGeneric reads it (at least major.minor, an optional "v").
func (r Release) Minor() int {
	v, err := version.ParseGeneric(r.Kubernetes)
	if err != nil {
		return 0
	}
	return int(v.Minor())
}

// AtLeast reports whether the release is 1.minor or newer: how a component
// package picks a flag that a release added or changed.
func (r Release) AtLeast(minor int) bool { return r.Minor() >= minor }

// String is the Kubernetes version, e.g. "v1.37.2".
func (r Release) String() string { return r.Kubernetes }
