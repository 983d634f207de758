package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/imagefolder"
)

// TestImages checks what issue #5 asks of images on a two-node cluster
// (container executor): the images folder (a tarball present at up is in
// place before the nodes are Ready; tarballs dropped in, rewritten and
// removed; a .txt list pulled from a registry through hosts.toml; a slowly
// written tarball imported once; an unchanged file not imported again
// after a restart) and `kubernix image load` (a good tarball into every
// node, a corrupt one refused without leftovers).
func TestImages(t *testing.T) {
	e := newEnv(t, "e2e-images", "10.203.0.0/16", "--nodes", "2", leanAddons)
	e.parallelAt(weightLongest)
	nodes := []string{"e2e-images-node-0", "e2e-images-node-1"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e.downOnCleanup()
	folder := filepath.Join(e.stateDir, "images")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	base := testImageBase(t, e.binDir)

	early := testImage(t, base, "example.test/early:v1", "early")
	dropImage(t, folder, "early.tar", early)
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))

	t.Run("a file present at up is imported before the nodes are Ready", func(t *testing.T) {
		rec := readImagesRecord(t, e)
		for _, n := range nodes {
			e.wantImage(ctx, n, early.ref, recordedDigest(rec, "early.tar", n, early.ref), "folder:early.tar", true)
		}
	})

	app1 := testImage(t, base, "example.test/app:v1", "v1")
	t.Run("dropped tarball: a pod runs it without a pull", func(t *testing.T) {
		dropImage(t, folder, "app.tar", app1)
		for _, n := range nodes {
			e.waitImported(ctx, "app.tar", n, 1)
			e.wantImage(ctx, n, app1.ref, recordedDigest(readImagesRecord(t, e), "app.tar", n, app1.ref), "folder:app.tar", true)
		}
		for i, n := range nodes {
			pod := fmt.Sprintf("app-v1-%d", i)
			e.runPod(ctx, pod, n, app1.ref)
			if out := strings.TrimSpace(e.mustKubectl(ctx, "exec", pod, "--", "cat", "/version")); out != "v1" {
				t.Errorf("pod %s on %s: /version = %q, want v1", pod, n, out)
			}
			events := e.mustKubectl(ctx, "get", "events", "--field-selector", "involvedObject.name="+pod, "-o", "jsonpath={.items[*].reason}")
			if strings.Contains(events, "Pulling") {
				t.Errorf("pod %s pulled its image: events %s", pod, events)
			}
		}
	})

	app2 := testImage(t, base, "example.test/app:v1", "v2")
	t.Run("rewritten tarball: imported again under the same name", func(t *testing.T) {
		v1Digest, _ := e.image(ctx, nodes[0], app1.ref)
		dropImage(t, folder, "app.tar", app2)
		for _, n := range nodes {
			e.waitImported(ctx, "app.tar", n, 2)
			d := recordedDigest(readImagesRecord(t, e), "app.tar", n, app2.ref)
			if d == v1Digest.Digest {
				t.Errorf("node %s: digest %s unchanged by the new version", n, d)
			}
			e.wantImage(ctx, n, app2.ref, d, "folder:app.tar", true)
		}
		e.runPod(ctx, "app-v2", nodes[1], app2.ref)
		if out := strings.TrimSpace(e.mustKubectl(ctx, "exec", "app-v2", "--", "cat", "/version")); out != "v2" {
			t.Errorf("/version = %q, want v2", out)
		}
	})

	t.Run("removed file: its image unpinned, kept", func(t *testing.T) {
		if err := os.Remove(filepath.Join(folder, "app.tar")); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			eventually(t, time.Minute, "app image unpinned on "+n, func() error {
				img, ok := e.image(ctx, n, app2.ref)
				if !ok {
					return fmt.Errorf("image %s gone", app2.ref)
				}
				if len(img.Labels[containerd.LabelPinned]+img.Labels[containerd.LabelSource]) > 0 {
					return fmt.Errorf("labels %v", img.Labels)
				}
				return nil
			})
		}
		eventually(t, 10*time.Second, "removed file forgotten by the record", func() error {
			if fr := readImagesRecord(t, e).Files["app.tar"]; fr != nil {
				return fmt.Errorf("still recorded: %+v", fr)
			}
			return nil
		})
	})

	t.Run("a .txt list is pulled from a registry on the bridge", func(t *testing.T) {
		bridge := "10.203.0.1" // the node network's first address, the host side of the bridge
		l, err := net.Listen("tcp", bridge+":0")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(registry.New(registry.Logger(stdlog.New(io.Discard, "", 0))))
		srv.Listener.Close()
		srv.Listener = l
		srv.Start()
		defer srv.Close()
		hostPort := l.Addr().String()
		listed := testImage(t, base, "registry.kubernix.test/listed:v1", "listed")
		push, err := name.ParseReference(hostPort+"/listed:v1", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(push, listed.img, remote.WithTransport(&http.Transport{Proxy: nil}), remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		// The ref's registry host is an alias (the .test TLD never
		// resolves) for the registry on the bridge, which every node
		// reaches: 127.0.0.1 in a sandboxed node is its own loopback.
		hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n",
			"http://"+hostPort, "http://"+hostPort)
		dir := filepath.Join(e.stateDir, "registries", "registry.kubernix.test")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			t.Fatal(err)
		}
		list := "# pulled through hosts.toml\n\nregistry.kubernix.test/listed:v1  # the only one\n"
		if err := os.WriteFile(filepath.Join(folder, "list.txt"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			e.waitImported(ctx, "list.txt", n, 1)
			// Pulled, the image is the registry's manifest, digest and all.
			e.wantImage(ctx, n, listed.ref, listed.digest, "folder:list.txt", true)
		}
		e.runPod(ctx, "listed", nodes[0], listed.ref)
	})

	t.Run("a slowly written tarball is imported once", func(t *testing.T) {
		slow := testImage(t, base, "example.test/slow:v1", "slow")
		var b bytes.Buffer
		if err := tarball.Write(mustTag(t, slow.ref), slow.img, &b); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(folder, "slow.tar"))
		if err != nil {
			t.Fatal(err)
		}
		// 10 chunks 300 ms apart: 3 s of writing, 3 settle periods.
		data, chunk := b.Bytes(), b.Len()/10+1
		for off := 0; off < len(data); off += chunk {
			if _, err := f.Write(data[off:min(off+chunk, len(data))]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			e.waitImported(ctx, "slow.tar", n, 1)
			e.wantImage(ctx, n, slow.ref, "", "folder:slow.tar", true)
		}
		time.Sleep(3 * time.Second) // time for a second import, were there one
		rec := readImagesRecord(t, e)
		for _, n := range nodes {
			if ni := recorded(rec, "slow.tar", n); ni == nil || ni.Imports != 1 {
				t.Errorf("node %s: record of slow.tar %+v, want 1 import", n, ni)
			}
		}
		logs := supervisorLog(t, e)
		if n := strings.Count(logs, `msg="images folder: imported" file=slow.tar `); n != len(nodes) {
			t.Errorf("supervisor logged %d imports of slow.tar, want %d (one per node)", n, len(nodes))
		}
		if strings.Contains(logs, "failed; will retry\" file=slow.tar") {
			t.Errorf("supervisor tried to import slow.tar before it was complete:\n%s", logs)
		}
	})

	t.Run("image load: a tarball into every node", func(t *testing.T) {
		loaded := testImage(t, base, "example.test/loaded:v1", "loaded")
		path := filepath.Join(t.TempDir(), "loaded.tar")
		writeImage(t, path, loaded)
		out := e.mustKubernix(ctx, "image", "load", path)
		t.Logf("image load:\n%s", out)
		if !strings.Contains(out, loaded.ref) || !strings.Contains(out, nodes[0]) || !strings.Contains(out, nodes[1]) {
			t.Errorf("image load output does not name the image and both nodes:\n%s", out)
		}
		for _, n := range nodes {
			e.wantImage(ctx, n, loaded.ref, "", "load:"+path, true)
		}
		img, _ := e.image(ctx, nodes[0], loaded.ref)
		if !strings.Contains(out, img.Digest) {
			t.Errorf("image load output lacks the digest %s:\n%s", img.Digest, out)
		}
		list := e.mustKubernix(ctx, "image", "list", "--node", "1")
		if !strings.Contains(list, loaded.ref) || strings.Contains(list, nodes[0]) {
			t.Errorf("image list --node 1:\n%s", list)
		}
	})

	t.Run("image load: corrupt files refused, named, nothing left", func(t *testing.T) {
		dir := t.TempDir()
		notImage := filepath.Join(dir, "not-an-image.tar")
		if err := os.WriteFile(notImage, []byte("just text\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		damaged := testImage(t, base, "example.test/damaged:v1", "damaged")
		damagedPath := filepath.Join(dir, "damaged.tar")
		writeImage(t, damagedPath, damaged)
		corruptLayer(t, damagedPath)
		good := testImage(t, base, "example.test/good:v1", "good")
		goodPath := filepath.Join(dir, "good.tar")
		writeImage(t, goodPath, good)

		out, code := e.kubernix(ctx, "image", "load", notImage, damagedPath, goodPath)
		t.Logf("image load (exit %d):\n%s", code, out)
		if code == 0 {
			t.Error("image load of corrupt files exited 0")
		}
		for _, p := range []string{notImage, damagedPath} {
			if !strings.Contains(out, p) {
				t.Errorf("the error does not name %s", p)
			}
		}
		for _, n := range nodes {
			if img, ok := e.image(ctx, n, damaged.ref); ok {
				t.Errorf("node %s: damaged image left behind: %+v", n, img)
			}
			e.wantImage(ctx, n, good.ref, "", "load:"+goodPath, true)
		}
	})

	t.Logf("down:\n%s", e.mustKubernix(ctx, "down"))

	t.Run("after a restart: unchanged files not imported again, new ones before Ready", func(t *testing.T) {
		late := testImage(t, base, "example.test/late:v1", "late")
		dropImage(t, folder, "late.tar", late)
		e.mustKubernix(ctx, "up", "--detach")
		rec := readImagesRecord(t, e)
		for _, n := range nodes {
			e.wantImage(ctx, n, late.ref, recordedDigest(rec, "late.tar", n, late.ref), "folder:late.tar", true)
			e.wantImage(ctx, n, early.ref, recordedDigest(rec, "early.tar", n, early.ref), "folder:early.tar", true)
		}
		for _, file := range []string{"early.tar", "list.txt", "slow.tar"} {
			for _, n := range nodes {
				if ni := recorded(rec, file, n); ni == nil || ni.Imports != 1 {
					t.Errorf("%s on %s: %+v, want still 1 import", file, n, ni)
				}
			}
		}
		e.mustKubernix(ctx, "down")
		if left := e.leftovers(nodes, false); len(left) > 0 {
			t.Fatalf("down left behind:\n%s", strings.Join(left, "\n"))
		}
	})
}

// testImg is an image built for the test.
type testImg struct {
	ref    string
	img    v1.Image
	digest string // as containerd names it after import: the manifest's
}

// testImageBase is the base of the tests' own images: the built-in busybox
// image (sh, cat), read from the images `make images` built beside binDir,
// made to run as agnhost's pause does, whatever its arguments (pausePod's
// "pause"): it sleeps until SIGTERM. It is 2 MiB where agnhost is 200:
// writing, pushing and importing each test image costs the machine next
// to nothing.
func testImageBase(t *testing.T, binDir string) v1.Image {
	t.Helper()
	img, err := tarball.ImageFromPath(filepath.Join(binDir, "..", "images", "busybox.tar"), nil)
	if err != nil {
		t.Fatalf("read the built-in busybox image (make images): %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config.DeepCopy()
	c.Entrypoint = []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait", "sh"}
	c.Cmd = nil
	img, err = mutate.Config(img, *c)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// testImage is base with a layer holding /version = version, as ref.
func testImage(t *testing.T, base v1.Image, ref, version string) testImg {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "version", Mode: 0o644, Size: int64(len(version) + 1), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(version + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// LayerFromOpener keeps the layer in memory: LayerFromReader buffers
	// it in a temporary file of the host's that it never removes.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b.Bytes())), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return testImg{ref: ref, img: img, digest: d.String()}
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// writeImage writes img as a docker-archive ("docker save") at path.
func writeImage(t *testing.T, path string, img testImg) {
	t.Helper()
	if err := tarball.WriteToFile(path, mustTag(t, img.ref), img.img); err != nil {
		t.Fatal(err)
	}
}

// dropImage puts img into the folder as name the way a careful user
// does: written beside it under a hidden name, then renamed in.
func dropImage(t *testing.T, folder, name string, img testImg) {
	t.Helper()
	tmp := filepath.Join(folder, "."+name+".tmp")
	writeImage(t, tmp, img)
	if err := os.Rename(tmp, filepath.Join(folder, name)); err != nil {
		t.Fatal(err)
	}
}

// corruptLayer flips bytes in the middle of the last layer of the
// docker-archive at path: the archive still reads, its content is wrong.
func corruptLayer(t *testing.T, path string) {
	t.Helper()
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(in)), tar.NewWriter(&out)
	var layers []string
	entries := map[string][]byte{}
	var order []*tar.Header
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = b
		order = append(order, h)
		if strings.HasSuffix(h.Name, ".tar.gz") {
			layers = append(layers, h.Name)
		}
	}
	if len(layers) == 0 {
		t.Fatal("no layer in the archive")
	}
	last := entries[layers[len(layers)-1]]
	for i := len(last) / 2; i < len(last)/2+16 && i < len(last); i++ {
		last[i] ^= 0xff
	}
	for _, h := range order {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(entries[h.Name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// socket is the containerd socket of node n.
func (e *env) socket(n string) string {
	return filepath.Join(e.stateDir, "nodes", n, "containerd.sock")
}

// image returns the image ref in node n's containerd, if there is one.
func (e *env) image(ctx context.Context, n, ref string) (containerd.ImportedImage, bool) {
	e.t.Helper()
	imgs, err := containerd.List(ctx, e.socket(n))
	if err != nil {
		e.t.Fatalf("node %s: %v", n, err)
	}
	for _, img := range imgs {
		if img.Ref == ref {
			return img, true
		}
	}
	return containerd.ImportedImage{}, false
}

// waitImported waits until the images folder's record counts imports
// imports of file into node n.
func (e *env) waitImported(ctx context.Context, file, n string, imports int) {
	e.t.Helper()
	eventually(e.t, 2*time.Minute, fmt.Sprintf("import %d of %s into %s", imports, file, n), func() error {
		if ni := recorded(readImagesRecord(e.t, e), file, n); ni == nil || ni.Imports < imports {
			return fmt.Errorf("recorded: %+v", ni)
		}
		return nil
	})
}

// recorded returns the record's import of file into node n, or nil.
func recorded(rec *imagefolder.Record, file, n string) *imagefolder.NodeImport {
	if fr := rec.Files[file]; fr != nil {
		return fr.Nodes[n]
	}
	return nil
}

// recordedDigest is the digest the record has for ref from file on node
// n: containerd's digest of the imported image (for a docker-archive,
// containerd writes the manifest itself, so it is not the test image's).
func recordedDigest(rec *imagefolder.Record, file, n, ref string) string {
	if ni := recorded(rec, file, n); ni != nil {
		for _, img := range ni.Images {
			if img.Ref == ref {
				return img.Digest
			}
		}
	}
	return "(not recorded)"
}

// wantImage checks, now, that node n has ref (with digest unless "") with
// source label source and pinned or not.
func (e *env) wantImage(ctx context.Context, n, ref, digest, source string, pinned bool) {
	e.t.Helper()
	img, ok := e.image(ctx, n, ref)
	switch {
	case !ok:
		e.t.Errorf("node %s: no image %s", n, ref)
	case digest != "" && img.Digest != digest:
		e.t.Errorf("node %s: %s digest %s, want %s", n, ref, img.Digest, digest)
	case img.Labels[containerd.LabelSource] != source:
		e.t.Errorf("node %s: %s source %q, want %q", n, ref, img.Labels[containerd.LabelSource], source)
	case (img.Labels[containerd.LabelPinned] == containerd.PinnedValue) != pinned:
		e.t.Errorf("node %s: %s labels %v, want pinned=%v", n, ref, img.Labels, pinned)
	}
}

// runPod runs image on node n as pod name (imagePullPolicy Never, so it
// can only use what is in the node) and waits until it is Ready.
func (e *env) runPod(ctx context.Context, pod, n, image string) {
	e.t.Helper()
	e.apply(ctx, pausePod(pod, n, image, "Never"))
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=120s")
}

// readImagesRecord reads the images folder's record from the state dir
// (empty before the first import).
func readImagesRecord(t *testing.T, e *env) *imagefolder.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.stateDir, "images.json"))
	if os.IsNotExist(err) {
		return &imagefolder.Record{Files: map[string]*imagefolder.FileRecord{}}
	}
	if err != nil {
		t.Fatal(err)
	}
	rec := &imagefolder.Record{}
	if err := json.Unmarshal(b, rec); err != nil {
		t.Fatal(err)
	}
	if rec.Files == nil {
		rec.Files = map[string]*imagefolder.FileRecord{}
	}
	return rec
}

// supervisorLog returns the detached supervisor's log.
func supervisorLog(t *testing.T, e *env) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.stateDir, "logs", "supervisor", "supervisor.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
