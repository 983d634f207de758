package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// storageCluster is what the storage checks need of a cluster, root or
// rootless: kubectl against it, its state dir, and a way to apply a
// manifest.
type storageCluster struct {
	t        *testing.T
	stateDir string
	kubectl  func(ctx context.Context, args ...string) (string, error)
	// manifestDir is where manifests are written for kubectl apply -f.
	manifestDir string
}

func (c *storageCluster) mustKubectl(ctx context.Context, args ...string) string {
	c.t.Helper()
	out, err := c.kubectl(ctx, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// statefulSetManifest is a StatefulSet "data" of replicas agnhost pods,
// at most one per node, each with a 1Mi volume at /data from a
// volumeClaimTemplate without a storageClassName: the default
// StorageClass provisions it.
func statefulSetManifest(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: data, namespace: default}
spec:
  replicas: %d
  serviceName: data
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: data}}
  template:
    metadata: {labels: {app: data}}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: data}}
              topologyKey: kubernetes.io/hostname
      containers:
        - name: data
          image: %s
          imagePullPolicy: Never
          args: ["pause"]
          volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Mi}}
`, replicas, agnhost)
}

// apply writes manifest to a file and applies it.
func (c *storageCluster) apply(ctx context.Context, manifest string) {
	c.t.Helper()
	f := filepath.Join(c.manifestDir, "storage.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.mustKubectl(ctx, "apply", "-f", f)
}

// volume is where one pod's volume lives.
type volume struct {
	pod, node, pv string
	// dir is the volume's directory on the host.
	dir string
}

// volumes returns the volume of each of the StatefulSet's n pods, once
// each is Ready: its PVC bound to a PV of StorageClass standard whose
// hostPath is under the volumes dir of the pod's node in the state dir.
func (c *storageCluster) volumes(ctx context.Context, n int) []volume {
	c.t.Helper()
	c.mustKubectl(ctx, "rollout", "status", "statefulset/data", "--timeout=180s")
	var out []volume
	for i := range n {
		v := volume{pod: "data-" + strconv.Itoa(i)}
		v.node = strings.TrimSpace(c.mustKubectl(ctx, "get", "pod", v.pod, "-o", "jsonpath={.spec.nodeName}"))
		pvc := "data-" + v.pod
		f := strings.Fields(c.mustKubectl(ctx, "get", "pvc", pvc, "-o", "jsonpath={.status.phase} {.spec.storageClassName} {.spec.volumeName}"))
		if len(f) != 3 || f[0] != "Bound" || f[1] != "standard" {
			c.t.Fatalf("PVC %s: phase, class, volume = %q, want Bound to a volume of class standard", pvc, f)
		}
		v.pv = f[2]
		v.dir = strings.TrimSpace(c.mustKubectl(ctx, "get", "pv", v.pv, "-o", "jsonpath={.spec.hostPath.path}"))
		if want := filepath.Join(c.stateDir, "nodes", v.node, "volumes") + "/"; !strings.HasPrefix(v.dir, want) {
			c.t.Fatalf("PV %s of pod %s on %s is at %q, want it under %s", v.pv, v.pod, v.node, v.dir, want)
		}
		out = append(out, v)
	}
	return out
}

// wantFile checks that pod sees content in /data/file and that the file
// is in the volume's directory on the host.
func (c *storageCluster) wantFile(ctx context.Context, v volume, content, when string) {
	c.t.Helper()
	if got, err := c.kubectl(ctx, "exec", v.pod, "--", "cat", "/data/file"); err != nil || got != content {
		c.t.Errorf("%s: pod %s reads %q (%v) from /data/file, want %q", when, v.pod, got, err, content)
	}
	if b, err := os.ReadFile(filepath.Join(v.dir, "file")); err != nil || string(b) != content {
		c.t.Errorf("%s: %s/file on the host holds %q (%v), want %q", when, v.dir, b, err, content)
	}
}

// writeFiles writes a distinct content to /data/file in each pod and
// returns it by pod.
func (c *storageCluster) writeFiles(ctx context.Context, vols []volume) map[string]string {
	c.t.Helper()
	contents := map[string]string{}
	for _, v := range vols {
		contents[v.pod] = v.pod + " on " + v.node + " at " + time.Now().Format(time.RFC3339Nano) + "\n"
		c.mustKubectl(ctx, "exec", v.pod, "--", "sh", "-c", "printf '%s' '"+contents[v.pod]+"' > /data/file")
		c.wantFile(ctx, v, contents[v.pod], "written")
	}
	return contents
}

// deleteAll deletes the StatefulSet and its PVCs and waits until the
// provisioner has removed every volume's directory and PV.
func (c *storageCluster) deleteAll(ctx context.Context, vols []volume) {
	c.t.Helper()
	c.mustKubectl(ctx, "delete", "statefulset", "data", "--wait=true", "--timeout=120s")
	for _, v := range vols {
		c.mustKubectl(ctx, "delete", "pvc", "data-"+v.pod, "--wait=true", "--timeout=120s")
	}
	for _, v := range vols {
		eventually(c.t, 120*time.Second, "volume "+v.pv+" removed", func() error {
			if _, err := os.Stat(v.dir); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s still there (%v)", v.dir, err)
			}
			if out, _ := c.kubectl(ctx, "get", "pv", v.pv, "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
				return fmt.Errorf("PV %s still there", v.pv)
			}
			return nil
		})
	}
}

// TestStorage checks the local-path-storage addon on two nodes: the
// default StorageClass standard provisions a volume on the node of each
// pod of a StatefulSet, in that node's dir of the state dir; a file
// written there survives the pod's deletion, and `down` then `up` of the
// same cluster; deleting the StatefulSet and its PVCs removes the
// directories and PVs; down leaves nothing behind.
func TestStorage(t *testing.T) {
	e := newEnv(t, "e2e-storage", "10.161.0.0/16", "--nodes", "2", "--addons", "local-path-storage")
	e.parallelAt(weightLong)
	nodes := []string{"e2e-storage-node-0", "e2e-storage-node-1"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	c := &storageCluster{t: t, stateDir: e.stateDir, kubectl: e.kubectl, manifestDir: e.stateDir}

	out := e.mustKubectl(ctx, "get", "storageclass", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations.storageclass\.kubernetes\.io/is-default-class} {.provisioner} {.volumeBindingMode} {.reclaimPolicy}{"\n"}{end}`)
	if strings.TrimSpace(out) != "standard true rancher.io/local-path WaitForFirstConsumer Delete" {
		t.Fatalf("storage classes:\n%s\nwant only standard, the default, rancher.io/local-path, WaitForFirstConsumer, Delete", out)
	}

	c.apply(ctx, statefulSetManifest(2))
	vols := c.volumes(ctx, 2)
	if vols[0].node == vols[1].node {
		t.Fatalf("both pods on %s, want one per node", vols[0].node)
	}
	contents := c.writeFiles(ctx, vols)

	// A deleted pod comes back with its file.
	e.mustKubectl(ctx, "delete", "pod", vols[0].pod, "--wait=true")
	if back := c.volumes(ctx, 2); back[0] != vols[0] {
		t.Errorf("pod came back with %+v, want %+v", back[0], vols[0])
	}
	c.wantFile(ctx, vols[0], contents[vols[0].pod], "after the pod's deletion")

	// down keeps the files and leaves nothing else; up brings them back.
	e.mustKubernix(ctx, "down")
	for _, v := range vols {
		if b, err := os.ReadFile(filepath.Join(v.dir, "file")); err != nil || string(b) != contents[v.pod] {
			t.Errorf("after down: %s/file holds %q (%v), want %q", v.dir, b, err, contents[v.pod])
		}
	}
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Errorf("after down with volumes in place:\n%s", strings.Join(left, "\n"))
	}
	t.Logf("up again:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	for _, v := range c.volumes(ctx, 2) {
		c.wantFile(ctx, v, contents[v.pod], "after down and up")
	}

	c.deleteAll(ctx, vols)

	e.mustKubernix(ctx, "down")
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Errorf("after the last down:\n%s", strings.Join(left, "\n"))
	}
}

// TestStorageRootless is TestStorage reduced, as an ordinary user: one
// node, a volume in the user's state dir whose file survives the pod's
// deletion and down and up, and is removed with its PVC.
func TestStorageRootless(t *testing.T) {
	rootlessParallel(t)
	rc := newRootlessCluster(t, "kxstorage", "e2e-rlst")
	u, name, kctx, state := rc.u, rc.name, rc.kctx, rc.state
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	up := func() {
		t.Helper()
		out, code := u.kubernix(ctx, "up", "--detach", "--name", name, "--cidr", "10.162.0.0/16")
		if code != 0 {
			log, _ := os.ReadFile(filepath.Join(state, "logs", "supervisor", "supervisor.log"))
			t.Fatalf("up --detach as %s exited %d:\n%s\nsupervisor log:\n%s", u.name, code, out, log)
		}
		t.Logf("up:\n%s", out)
	}
	up()
	c := &storageCluster{t: t, stateDir: state, manifestDir: u.home,
		kubectl: func(ctx context.Context, args ...string) (string, error) { return u.kubectl(ctx, kctx, args...) }}

	c.apply(ctx, statefulSetManifest(1))
	vols := c.volumes(ctx, 1)
	contents := c.writeFiles(ctx, vols)
	c.mustKubectl(ctx, "delete", "pod", vols[0].pod, "--wait=true")
	c.volumes(ctx, 1)
	c.wantFile(ctx, vols[0], contents[vols[0].pod], "after the pod's deletion")

	if out, code := u.kubernix(ctx, "down", "--name", name); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	up()
	c.volumes(ctx, 1)
	c.wantFile(ctx, vols[0], contents[vols[0].pod], "after down and up")

	c.deleteAll(ctx, vols)
}
