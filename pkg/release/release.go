// Package release names the Kubernetes releases kubernix can run. A
// Release holds the versions of the binaries built for it (the Makefile
// builds them from assets/versions.env), where its Kubernetes binaries
// are, and the image its pod sandboxes run; a plan carries one, every
// component Spec receives it, and doctor and bins.Required check the
// binaries against it. Flags and config fields that differ between
// releases are chosen in the component packages, from the Release their
// Spec holds. Which releases are built is pkg/bins' to find
// (Finder.Releases); Lookup picks one of them, CheckUpgrade says whether a
// cluster may move from one to another.
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
	// "v1.37.2" (KUBERNETES_VERSION of assets/versions.env, or one of its
	// KUBERNETES_RELEASES).
	Kubernetes string
	// Bin is the directory of the release's Kubernetes binaries (etcd,
	// kube-apiserver, ..., kubelet, kube-proxy, kubectl): the bundle's bin
	// dir for the default release, <bundle>/releases/<version>/bin for
	// another (bins.Finder.Releases); "" when not located, and the
	// binaries are found where bins.Finder looks for any other.
	Bin string
	// Containerd is the version of containerd and its runc shim built for
	// the release, e.g. "v2.4.2" (CONTAINERD_VERSION); one for every
	// release.
	Containerd string
	// Registry is the version of the local registry (distribution's
	// cmd/registry), e.g. "v3.1.2" (REGISTRY_VERSION).
	Registry string
	// SandboxImage is the pod sandbox image's reference: kubeadm's
	// PauseVersion for the default release, which containerd pins, e.g.
	// "registry.k8s.io/pause:3.10.2" (PAUSE_VERSION); the built-in pause
	// image serves every release.
	SandboxImage string
}

var (
	// ErrUnsupported is returned, wrapped, by Lookup for a version
	// kubernix builds no release of.
	ErrUnsupported = errors.New("not a Kubernetes release kubernix runs")
	// ErrNotBuilt is returned, wrapped, by Lookup for a release kubernix
	// builds that is not built (or installed) here.
	ErrNotBuilt = errors.New("Kubernetes release not built")
	// ErrUpgrade is returned, wrapped, by CheckUpgrade for a change of
	// release a cluster cannot make in place.
	ErrUpgrade = errors.New("cannot change the Kubernetes release in place")
)

// Default is the release a cluster runs unless told otherwise: the one
// assets/versions.env pins.
func Default() Release { return Of(assets.Version("KUBERNETES_VERSION"), "") }

// Of is the release of the Kubernetes version (one of Known) whose
// Kubernetes binaries are in bin; the other components are the default
// release's.
func Of(kubernetes, bin string) Release {
	v := assets.Versions()
	return Release{
		Kubernetes:   kubernetes,
		Bin:          bin,
		Containerd:   v["CONTAINERD_VERSION"],
		Registry:     v["REGISTRY_VERSION"],
		SandboxImage: "registry.k8s.io/pause:" + v["PAUSE_VERSION"],
	}
}

// Known lists the versions of the releases kubernix builds, newest first:
// the default (KUBERNETES_VERSION), then KUBERNETES_RELEASES of
// assets/versions.env, e.g. ["v1.37.2", "v1.36.3"].
func Known() []string {
	return append([]string{assets.Version("KUBERNETES_VERSION")}, strings.Fields(assets.Version("KUBERNETES_RELEASES"))...)
}

// Matches reports whether the version a user gave ("v1.37.2", "1.37.2",
// or the minor "1.37" or "v1.37") names the release version full
// ("v1.37.2"); spaces around it do not count.
func Matches(given, full string) bool {
	want := strings.TrimPrefix(strings.TrimSpace(given), "v")
	have := strings.TrimPrefix(full, "v")
	return want != "" && (have == want || strings.Count(want, ".") == 1 && strings.HasPrefix(have, want+"."))
}

// Lookup returns the release of built (the releases found, newest first)
// that version names: as Matches reads it, the newest patch of a minor;
// "" names the default. The error wraps ErrUnsupported for a version that
// names none of Known, listing them, and ErrNotBuilt for one kubernix
// builds that built lacks, naming the make command that builds it.
func Lookup(built []Release, version string) (Release, error) {
	if strings.TrimSpace(version) == "" {
		version = Default().Kubernetes
	}
	for _, r := range built {
		if Matches(version, r.Kubernetes) {
			return r, nil
		}
	}
	var names []string
	for _, r := range built {
		names = append(names, r.Kubernetes)
	}
	if known, ok := Named(version); ok {
		return Release{}, fmt.Errorf("%w: %s: build it with `make bins KUBERNETES_VERSION=%s` in the kubernix source tree (then `make install` where kubernix is installed); built here: %s",
			ErrNotBuilt, known, known, strings.Join(names, ", "))
	}
	return Release{}, fmt.Errorf("%w: %q: kubernix runs %s (built here: %s)",
		ErrUnsupported, version, strings.Join(Known(), ", "), strings.Join(names, ", "))
}

// Named returns the release of Known that version names (as Matches
// reads it; "" names the default), its Bin unset, and true; else the
// default release and false.
func Named(version string) (Release, bool) {
	if strings.TrimSpace(version) == "" {
		return Default(), true
	}
	for _, known := range Known() {
		if Matches(version, known) {
			return Of(known, ""), true
		}
	}
	return Default(), false
}

// CheckUpgrade returns nil when a cluster that last ran the release
// version from may run the release to (both like "v1.36.3"): the same
// minor (any patch), or the next minor, as upstream's version skew policy
// allows an upgrade (etcd and the control plane first, then the nodes:
// the order up starts them in). A downgrade, a skip of minors or a
// version that does not parse is an error wrapping ErrUpgrade that says
// why and what to do.
func CheckUpgrade(from, to string) error {
	f, ferr := version.ParseGeneric(from)
	t, terr := version.ParseGeneric(to)
	if ferr != nil || terr != nil {
		return fmt.Errorf("%w: %s → %s: %w", ErrUpgrade, from, to, errors.Join(ferr, terr))
	}
	switch {
	case f.Major() != t.Major():
		return fmt.Errorf("%w: %s → %s changes the major version", ErrUpgrade, from, to)
	case t.Minor() < f.Minor():
		return fmt.Errorf("%w: %s → %s is a downgrade, which upstream does not support: etcd holds the objects as the newer release wrote them", ErrUpgrade, from, to)
	case t.Minor() > f.Minor()+1:
		return fmt.Errorf("%w: %s → %s skips a minor: Kubernetes upgrades one minor at a time; up with --kubernetes-version v%d.%d first", ErrUpgrade, from, to, f.Major(), f.Minor()+1)
	}
	return nil
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
