// Package plantest makes the fixed plans that the tests of the plan, of
// preflight and of the live cluster share: the golden plans compared
// with testdata/ and the plans the checks are tried on. Each names the
// binaries under /BIN, the system's tools in their Debian paths, the
// state dir /STATE and the images dir /IMAGES; none reads the host.
package plantest

import (
	"testing"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/release"
)

// Facts are the host facts of Plan: a cgroup v1 (hybrid) host, the
// kubernix binaries and the pause image under /BIN, runc, nft, unshare
// and nsenter in their Debian paths, the CNI plugins in /usr/lib/cni.
func Facts() doctor.Facts {
	facts := doctor.Facts{Release: release.Default(),
		Cgroups: cgroup.Layout{Mode: cgroup.Hybrid},
		Paths:   map[string]string{},
		CNIDir:  "/usr/lib/cni",
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "registry"} {
		facts.Paths[b] = "/BIN/" + b
	}
	facts.Paths["runc"] = "/usr/sbin/runc"
	facts.Paths["nft"] = "/usr/sbin/nft"
	facts.Paths["unshare"] = "/usr/bin/unshare"
	facts.Paths["nsenter"] = "/usr/bin/nsenter"
	facts.Paths["pause"] = "/BIN/pause"
	return facts
}

// Plan is the plan of cluster "golden" of nodes nodes on Facts, run by
// the executor named (default: the config's default).
func Plan(t testing.TB, nodes int, executor ...string) *plan.Plan {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "golden"
	cfg.Nodes = nodes
	if len(executor) > 0 {
		cfg.Executor = executor[0]
	}
	return Of(t, cfg)
}

// Family is Plan of nodes nodes of the IP family named
// (config.IPFamilyDual or config.IPFamilyIPv6), its IPv6 range the one
// DefaultCIDR6 derives from "golden".
func Family(t testing.TB, nodes int, family string) *plan.Plan {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "golden"
	cfg.Nodes = nodes
	cfg.IPFamily = family
	return Of(t, cfg)
}

// Release is Plan of 1 node for the Kubernetes release version (one of
// release.Known), its binaries under /BIN too.
func Release(t testing.TB, version string) *plan.Plan {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "golden"
	cfg.KubernetesVersion = version
	facts := Facts()
	facts.Release = release.Of(version, "/BIN")
	return With(t, cfg, facts, plan.Rootless{})
}

// Of is the plan of cfg on Facts, run as root (With).
func Of(t testing.TB, cfg config.Config) *plan.Plan {
	t.Helper()
	return With(t, cfg, Facts(), plan.Rootless{})
}

// With is the plan of cfg, resolved with its state dir /STATE, on facts,
// rootless as told, its images in /IMAGES. A config plan.New refuses
// fails t.
func With(t testing.TB, cfg config.Config, facts doctor.Facts, rootless plan.Rootless) *plan.Plan {
	t.Helper()
	cfg.StateDir = "/STATE"
	cfg.Resolve()
	cfg.StateDir = "/STATE"
	pl, err := plan.New(cfg, facts, "/IMAGES", rootless)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// Rootless is the plan of a 1-node rootless cluster "golden" with the
// facts the doctor finds inside rootlesskit's namespaces on a cgroup v1
// host (Facts without unshare, nsenter and the pause image, the
// overlayfs snapshotter), its cgroup parent the delegated /kubernix-1000.
func Rootless(t testing.TB) *plan.Plan {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "golden"
	cfg.CgroupParent = "/kubernix-1000"
	// What a rootless cluster of one node resolves to (EffectiveExecutor).
	cfg.Executor = config.ExecutorProcess
	facts := Facts()
	facts.Mode = doctor.ModeRootlessChild
	facts.Snapshotter = doctor.SnapshotterOverlayfs
	for _, b := range []string{"unshare", "nsenter", "pause"} {
		delete(facts.Paths, b)
	}
	return With(t, cfg, facts, plan.Rootless{Enabled: true})
}

// HostPorts is plan.HostPorts(pl); an error fails t.
func HostPorts(t testing.TB, pl *plan.Plan) []plan.HostPort {
	t.Helper()
	ports, err := plan.HostPorts(pl)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}
