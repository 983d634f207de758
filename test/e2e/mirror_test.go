package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mirrorCIDR is the range of this file's clusters.
const mirrorCIDR = "10.160.0.0/16"

// TestRegistryMirror checks --registry-mirrors (config registry_mirrors)
// on a 2-node cluster: with registry.k8s.io mirrored, an image pushed from
// the host to localhost:<port>/e2e-test-images/agnhost:2.55 is what both
// nodes run for registry.k8s.io/e2e-test-images/agnhost:2.55 with
// imagePullPolicy: Always (nothing leaves the machine: the local registry
// answers first). Then an up that drops the mirror removes the hosts.toml
// kubernix rendered for it and keeps the registry's own.
func TestRegistryMirror(t *testing.T) {
	e := newEnv(t, "kxh-mirror", mirrorCIDR, "--nodes", "2", "--addons", "registry")
	e.parallelAt(weightLong)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.mustKubernix(ctx, "up", "--detach", "--registry-mirrors", "registry.k8s.io")
	e.downOnCleanup()
	nodes := []string{e.name + "-node-0", e.name + "-node-1"}
	port := e.registryPort()
	mirrorFile := filepath.Join(e.stateDir, "registries", "registry.k8s.io", "hosts.toml")
	ownFile := filepath.Join(e.stateDir, "registries", fmt.Sprintf("localhost:%d", port), "hosts.toml")
	// Checked before any pull: without it a pod would go to the real
	// registry.k8s.io.
	if _, err := os.Stat(mirrorFile); err != nil {
		t.Fatalf("up --registry-mirrors registry.k8s.io rendered no mirror hosts.toml: %v", err)
	}

	img := testImage(t, testImageBase(t, e.binDir), fmt.Sprintf("localhost:%d/e2e-test-images/agnhost:2.55", port), "mirrored")
	pushImage(t, img, e.registryLogin(ctx))
	e.runPulled(ctx, nodes, "registry.k8s.io/e2e-test-images/agnhost:2.55", img.digest)

	e.mustKubernix(ctx, "down")
	// A plain up would keep the mirror: it starts from the settings up
	// was last given (cluster.toml).
	e.mustKubernix(ctx, "up", "--detach", "--registry-mirrors=")
	if _, err := os.Stat(mirrorFile); !os.IsNotExist(err) {
		t.Errorf("an up with --registry-mirrors= (none) left the mirror's %s (stat: %v)", mirrorFile, err)
	}
	if _, err := os.Stat(filepath.Dir(mirrorFile)); !os.IsNotExist(err) {
		t.Errorf("an up with --registry-mirrors= (none) left the mirror's directory %s (stat: %v)", filepath.Dir(mirrorFile), err)
	}
	if _, err := os.Stat(ownFile); err != nil {
		t.Errorf("the registry's own hosts.toml is gone: %v", err)
	}
}

// TestRegistryMirrorInvalid: --registry-mirrors that is not a host name,
// or without a local registry, exits 2 naming the flag and creates
// nothing.
func TestRegistryMirrorInvalid(t *testing.T) {
	e := newEnv(t, "kxh-mirror-bad", mirrorCIDR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--registry-mirrors", "https://registry.k8s.io"}, `--registry-mirrors "https://registry.k8s.io"`},
		{[]string{"--registry-mirrors", "docker.io", "--registry-port", "0"}, "--registry-mirrors docker.io: the mirrors are served by the local registry"},
	} {
		e.upRefused(ctx, t, append([]string{"--detach"}, tt.args...), tt.want)
	}
}
