package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/pelletier/go-toml/v2"
)

// registryCIDR is the range of this file's clusters.
const registryCIDR = "10.166.0.0/16"

// TestRegistry checks the local registry of issue 13 (item 4) on a 2-node
// cluster: an image pushed from the host to localhost:<port> with
// go-containerregistry (no Docker daemon) runs on both nodes under the
// same name with imagePullPolicy: Always; the registry's storage survives
// down and up; and a new push under the same tag is what the next pods
// on both nodes run (Always asks the registry again).
func TestRegistry(t *testing.T) {
	e := newEnv(t, "rg-e2e", registryCIDR, "--nodes", "2")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.mustKubernix(ctx, "up", "--detach")
	t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	nodes := []string{e.name + "-node-0", e.name + "-node-1"}
	base := testImageBase(t, e)

	ref := fmt.Sprintf("localhost:%d/e2e/app:v1", e.registryPort())
	first := testImage(t, base, ref, "1")
	pushImage(t, first)
	e.runPulled(ctx, nodes, ref, first.digest)

	e.mustKubernix(ctx, "down")
	if _, err := os.Stat(filepath.Join(e.stateDir, "registry", "docker")); err != nil {
		t.Fatalf("down removed the registry's storage: %v", err)
	}
	e.mustKubernix(ctx, "up", "--detach")
	ref = fmt.Sprintf("localhost:%d/e2e/app:v1", e.registryPort())
	desc, err := remote.Head(mustTag(t, ref))
	if err != nil {
		t.Fatalf("after down and up, the registry lost %s: %v", ref, err)
	}
	if desc.Digest.String() != first.digest {
		t.Fatalf("after down and up, %s is %s, want the pushed %s", ref, desc.Digest, first.digest)
	}
	second := testImage(t, base, ref, "2")
	pushImage(t, second)
	e.runPulled(ctx, nodes, ref, second.digest)
}

// TestRegistryPortInUse: `up --registry-port P` with P taken on 127.0.0.1
// by another program exits 2 naming the flag and the holder, and creates
// nothing (no process, link, mount or file of the cluster; the state dir
// untouched).
func TestRegistryPortInUse(t *testing.T) {
	e := newEnv(t, "rg-e2e-bad", registryCIDR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	before := dirList(t, e.stateDir)
	out, code := e.kubernix(ctx, "up", "--detach", "--registry-port", port)
	if code == 0 { // wrongly accepted: take the cluster down again
		t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	}
	want := "port " + port + " is in use, so registry-localhost cannot listen on 127.0.0.1"
	if code != 2 || !strings.Contains(out, want) || !strings.Contains(out, "choose another --registry-port") {
		t.Fatalf("up --registry-port %s (taken): exit %d, output:\n%s\nwant exit 2 mentioning %q and --registry-port", port, code, out, want)
	}
	e.checkRefusedLeftNothing(t, before)
}

// TestRegistryRootless is TestRegistry reduced, rootless: as an ordinary
// user, a 1-node cluster; an image pushed from the host (root here) to
// localhost:<port>, which is rootlesskit's port forward to the registry in
// the user's namespaces, runs with imagePullPolicy: Always.
func TestRegistryRootless(t *testing.T) {
	u := newRootlessUser(t, "kxrlregistry")
	u.addSubIDs()
	u.openTun()
	u.delegateCgroups()
	const name = "rg-rl"
	kctx := "kubernix-" + name
	state := filepath.Join(u.home, ".local", "share", "kubernix", name)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if out, code := u.kubernix(context.Background(), "down", "--name", name); code != 0 {
			t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})
	if out, code := u.kubernix(ctx, "up", "--detach", "--name", name, "--cidr", "10.167.0.0/16"); code != 0 {
		log, _ := os.ReadFile(filepath.Join(state, "logs", "supervisor", "supervisor.log"))
		t.Fatalf("up --detach as %s exited %d:\n%s\nsupervisor log:\n%s", u.name, code, out, log)
	}
	ref := fmt.Sprintf("localhost:%d/e2e/app:rootless", registryPort(t, state))
	base, err := tarball.ImageFromPath(filepath.Join(u.binDir, "..", "images", "agnhost.tar"), nil)
	if err != nil {
		t.Fatalf("read the built-in agnhost image (make images): %v", err)
	}
	img := testImage(t, base, ref, "rootless")
	pushImage(t, img)
	manifest := filepath.Join(u.home, "registry-pod.yaml")
	if err := os.WriteFile(manifest, []byte(podPulling("app", name+"-node-0", ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	u.mustKubectl(ctx, kctx, "apply", "-f", manifest)
	if _, err := u.kubectl(ctx, kctx, "wait", "--for=condition=Ready", "pod/app", "--timeout=120s"); err != nil {
		desc, _ := u.kubectl(ctx, kctx, "describe", "pod", "app")
		t.Fatalf("%s rootless: %v\n%s", ref, err, desc)
	}
	if id := u.mustKubectl(ctx, kctx, "get", "pod", "app", "-o", "jsonpath={.status.containerStatuses[0].imageID}"); !strings.HasSuffix(id, "@"+img.digest) {
		t.Errorf("pod runs %s, want the pushed %s", id, img.digest)
	}
}

// registryPort is the local registry's port the running cluster chose, as
// recorded in its effective config.
func (e *env) registryPort() int {
	e.t.Helper()
	return registryPort(e.t, e.stateDir)
}

// registryPort is the registry port recorded in the state dir's
// kubernix.toml.
func registryPort(t *testing.T, stateDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "kubernix.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RegistryPort int `toml:"registry_port"`
	}
	if err := toml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.RegistryPort == 0 {
		t.Fatal("kubernix.toml records no registry_port")
	}
	return cfg.RegistryPort
}

// podPulling is a pod running ref on node with imagePullPolicy: Always.
func podPulling(pod, node, ref string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: %s
      imagePullPolicy: Always
      args: ["pause"]
`, pod, node, ref)
}

// pushImage pushes img to its ref from the host, as a user's crane would.
func pushImage(t *testing.T, img testImg) {
	t.Helper()
	if err := remote.Write(mustTag(t, img.ref), img.img); err != nil {
		t.Fatalf("push %s from the host: %v", img.ref, err)
	}
}

// runPulled runs ref on each of nodes as pod app-<i> (replacing one left
// from before) with imagePullPolicy: Always, waits until each is Ready,
// and checks that each runs the image of digest.
func (e *env) runPulled(ctx context.Context, nodes []string, ref, digest string) {
	e.t.Helper()
	for i, n := range nodes {
		pod := "app-" + strconv.Itoa(i)
		e.mustKubectl(ctx, "delete", "pod", pod, "--ignore-not-found", "--wait=true")
		e.apply(ctx, podPulling(pod, n, ref))
	}
	for i, n := range nodes {
		pod := "app-" + strconv.Itoa(i)
		if _, err := e.kubectl(ctx, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=120s"); err != nil {
			desc, _ := e.kubectl(ctx, "describe", "pod", pod)
			e.t.Fatalf("%s on %s: %v\n%s", ref, n, err, desc)
		}
		id := e.mustKubectl(ctx, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].imageID}")
		if !strings.HasSuffix(id, "@"+digest) {
			e.t.Errorf("pod %s on %s runs %s, want the pushed %s", pod, n, id, digest)
		}
	}
}
