package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/pelletier/go-toml/v2"

	"github.com/kubernix/kubernix/pkg/images"
)

// registryCIDR is the range of this file's clusters.
const registryCIDR = "10.166.0.0/16"

// TestRegistry checks the local registry of issue 13 (item 4) on a 2-node
// cluster: an image pushed from the host to localhost:<port> with
// go-containerregistry (no Docker daemon; logged in with `kubernix
// registry login`) runs on both nodes under the same name with
// imagePullPolicy: Always; the registry's storage and account survive
// down and up; and a new push under the same tag is what the next pods
// on both nodes run (Always asks the registry again).
func TestRegistry(t *testing.T) {
	e := newEnv(t, "rg-e2e", registryCIDR, "--nodes", "2", "--addons", "registry")
	e.parallelAt(weightLong)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e.mustKubernix(ctx, "up", "--detach")
	t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	nodes := []string{e.name + "-node-0", e.name + "-node-1"}
	base := testImageBase(t, e.binDir)

	ref := fmt.Sprintf("localhost:%d/e2e/app:v1", e.registryPort())
	auth := e.registryLogin(ctx)
	first := testImage(t, base, ref, "1")
	pushImage(t, first, auth)
	e.runPulled(ctx, nodes, ref, first.digest)

	e.mustKubernix(ctx, "down")
	if _, err := os.Stat(filepath.Join(e.stateDir, "registry", "docker")); err != nil {
		t.Fatalf("down removed the registry's storage: %v", err)
	}
	e.mustKubernix(ctx, "up", "--detach")
	ref = fmt.Sprintf("localhost:%d/e2e/app:v1", e.registryPort())
	desc, err := remote.Head(mustTag(t, ref), remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("after down and up, the registry lost %s: %v", ref, err)
	}
	if desc.Digest.String() != first.digest {
		t.Fatalf("after down and up, %s is %s, want the pushed %s", ref, desc.Digest, first.digest)
	}
	second := testImage(t, base, ref, "2")
	pushImage(t, second, auth)
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

// TestRegistryRootless is TestRegistry reduced, rootless, on the shared
// rootless cluster: localhost:<port>, rootlesskit's port forward to the
// registry in the user's namespaces, refuses a push without the account;
// an image pushed from the host (root here) with the account the user's
// `kubernix registry login` stored runs with imagePullPolicy: Always; and
// from a pod the nodes' address answers pulls but refuses a blob upload.
func TestRegistryRootless(t *testing.T) {
	rc := sharedRootlessCluster(t)
	u, name := rc.u, rc.name
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	port := registryPort(t, rc.state)
	ref := fmt.Sprintf("localhost:%d/e2e/app:rootless", port)
	img := testImage(t, testImageBase(t, u.binDir), ref, "rootless")
	if err := remote.Write(mustTag(t, ref), img.img); !isUnauthorized(err) {
		t.Errorf("push to %s without the account: %v, want 401 Unauthorized", ref, err)
	}
	if out, code := u.kubernix(ctx, "registry", "login", "--name", name); code != 0 {
		t.Fatalf("kubernix registry login as %s exited %d:\n%s", u.name, code, out)
	}
	pushImage(t, img, dockerLogin(t, filepath.Join(u.home, ".docker"), fmt.Sprintf("localhost:%d", port)))
	manifest := filepath.Join(rc.dir, "registry-pod.yaml")
	pods := podPulling("app", name+"-node-0", ref) + "---\n" + pausePod("client", name+"-node-0", images.AgnhostRef(), "Never")
	if err := os.WriteFile(manifest, []byte(rc.inNamespace(pods)), 0o644); err != nil {
		t.Fatal(err)
	}
	rc.mustKubectl(ctx, "apply", "-f", manifest)
	for _, pod := range []string{"app", "client"} {
		if _, err := rc.kubectl(ctx, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=120s"); err != nil {
			desc, _ := rc.kubectl(ctx, "describe", "pod", pod)
			t.Fatalf("pod %s rootless: %v\n%s", pod, err, desc)
		}
	}
	if id := rc.mustKubectl(ctx, "get", "pod", "app", "-o", "jsonpath={.status.containerStatuses[0].imageID}"); !strings.HasSuffix(id, "@"+img.digest) {
		t.Errorf("pod runs %s, want the pushed %s", id, img.digest)
	}
	nodeURL := nodesRegistryURL(t, rc.state, port)
	podCurl := curlInPod(t, func(args ...string) (string, error) { return rc.kubectl(ctx, args...) })
	checkRegistryAnswers(t, "a pod", podCurl, nodeURL, "")
}

// TestRegistryOwnerPushes checks issue 23 (item 2) on the shared cluster
// (its first node, a repository of its own, e2e/owned):
// the address the nodes pull from (the server of their hosts.toml, on the
// bridge) serves pulls to a pod and to a local user (uid 65534) and
// refuses them a blob upload and a manifest delete; 127.0.0.1 refuses
// everything without the registry's account, to that user and to a push
// of the host's root alike; the owner, logged in with `kubernix registry
// login`, pushes, and the image runs with imagePullPolicy: Always.
func TestRegistryOwnerPushes(t *testing.T) {
	e := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	node := sharedRoot.nodeNames()[0]
	port := e.registryPort()
	nodeURL := nodesRegistryURL(t, e.stateDir, port)
	localURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	e.runPod(ctx, "client", node, images.AgnhostRef())
	podCurl := curlInPod(t, func(args ...string) (string, error) { return e.kubectl(ctx, args...) })
	nobodyCurl := func(method, url string) string { return curlAs(ctx, t, 65534, method, url) }

	// Before anything is pushed: no blob of theirs gets in.
	checkRegistryAnswers(t, "a pod", podCurl, nodeURL, "")
	checkRegistryAnswers(t, "uid 65534", nobodyCurl, nodeURL, localURL)

	ref := fmt.Sprintf("localhost:%d/e2e/owned:v1", port)
	img := testImage(t, testImageBase(t, e.binDir), ref, "owned")
	if err := remote.Write(mustTag(t, ref), img.img); !isUnauthorized(err) {
		t.Errorf("push to %s without the account: %v, want 401 Unauthorized", ref, err)
	}
	pushImage(t, img, e.registryLogin(ctx))
	e.runPulled(ctx, []string{node}, ref, img.digest)

	// What is there cannot be deleted from the nodes' address either.
	manifest := nodeURL + "/v2/e2e/owned/manifests/" + img.digest
	for who, curl := range map[string]func(string, string) string{"a pod": podCurl, "uid 65534": nobodyCurl} {
		if code := curl("DELETE", manifest); code != "405" {
			t.Errorf("%s: DELETE %s answered %s, want 405 (read-only)", who, manifest, code)
		}
	}
	if code := nobodyCurl("GET", manifest); code != "200" {
		t.Errorf("uid 65534: GET %s answered %s, want 200: pulls stay open", manifest, code)
	}
}

// checkRegistryAnswers checks, through curl (method, URL -> HTTP status),
// what who gets from the registry: on nodeURL, the address the nodes pull
// from, GET /v2/ answers 200 (so a refusal is not just unreachability)
// and a blob upload 405 (read-only); on localURL, unless "", both 401
// without the account.
func checkRegistryAnswers(t *testing.T, who string, curl func(method, url string) string, nodeURL, localURL string) {
	t.Helper()
	const upload = "/v2/e2e/forged/blobs/uploads/"
	type answer struct{ method, url, code string }
	want := []answer{{"GET", nodeURL + "/v2/", "200"}, {"POST", nodeURL + upload, "405"}}
	if localURL != "" {
		want = append(want, answer{"GET", localURL + "/v2/", "401"}, answer{"POST", localURL + upload, "401"})
	}
	for _, w := range want {
		if code := curl(w.method, w.url); code != w.code {
			t.Errorf("%s: %s %s answered %s, want %s", who, w.method, w.url, code, w.code)
		}
	}
}

// nodesRegistryURL is the registry's URL as the nodes' containerd reaches
// it: the server of the cluster's hosts.toml for localhost:<port>.
func nodesRegistryURL(t *testing.T, stateDir string, port int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "registries", fmt.Sprintf("localhost:%d", port), "hosts.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var hosts struct{ Server string }
	if err := toml.Unmarshal(b, &hosts); err != nil || hosts.Server == "" {
		t.Fatalf("hosts.toml names no server (%v):\n%s", err, b)
	}
	return hosts.Server
}

// curlAs runs curl as uid (its group the same number) with method on
// url, without proxies, and returns the HTTP status it got ("000" when it
// could not connect).
func curlAs(ctx context.Context, t *testing.T, uid int, method, url string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "curl", "-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, url)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("curl -X %s %s as uid %d: %v", method, url, uid, err)
	}
	return string(out)
}

// curlInPod returns a curl (method, URL -> HTTP status) run in the pod
// "client" through kubectl.
func curlInPod(t *testing.T, kubectl func(args ...string) (string, error)) func(method, url string) string {
	return func(method, url string) string {
		t.Helper()
		out, err := kubectl("exec", "client", "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, url)
		if err != nil {
			t.Fatalf("curl -X %s %s in a pod: %v\n%s", method, url, err, out)
		}
		return out
	}
}

// registryLogin runs `kubernix registry login` for the cluster with a
// Docker config of its own, and returns the account it stored there.
func (e *env) registryLogin(ctx context.Context) authn.Authenticator {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), "docker")
	out, code := e.kubernixIn(ctx, append(e.environ(), "DOCKER_CONFIG="+dir), "registry", "login")
	if code != 0 {
		e.t.Fatalf("kubernix registry login exited %d:\n%s", code, out)
	}
	return dockerLogin(e.t, dir, fmt.Sprintf("localhost:%d", e.registryPort()))
}

// dockerLogin returns the account for host in the Docker config in dir,
// as docker and crane would use it.
func dockerLogin(t *testing.T, dir, host string) authn.Authenticator {
	t.Helper()
	cf, err := dockerconfig.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := cf.GetAuthConfig(host)
	if err != nil || ac.Username == "" || ac.Password == "" {
		t.Fatalf("the Docker config %s has no login for %s (%v)", cf.Filename, host, err)
	}
	return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password})
}

// isUnauthorized reports whether err is the registry's 401.
func isUnauthorized(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusUnauthorized
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
func podPulling(pod, node, ref string) string { return pausePod(pod, node, ref, "Always") }

// pausePod is a pod on node running image (agnhost's pause, or for the
// tests' own images, testImageBase's sleep) with the pull policy, in the
// namespace of the kubectl that applies it.
func pausePod(pod, node, image, pullPolicy string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: %s
      imagePullPolicy: %s
      args: ["pause"]
`, pod, node, image, pullPolicy)
}

// pushImage pushes img to its ref from the host with the registry's
// account, as a user's crane would after `kubernix registry login`.
func pushImage(t *testing.T, img testImg, auth authn.Authenticator) {
	t.Helper()
	if err := remote.Write(mustTag(t, img.ref), img.img, remote.WithAuth(auth)); err != nil {
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
