package containerd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/cri"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/node"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/klauspost/compress/zstd"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubernix/kubernix/pkg/images"
)

// binDir holds the containerd binaries `make bins` builds.
var binDir, _ = filepath.Abs("../../../_output/bin")

const runcPath = "/usr/sbin/runc"

// testNode is a containerd started for a test.
type testNode struct {
	dir    string // the temp dir holding everything, short for socket paths
	cfg    Config
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// needContainerd skips the test unless a real containerd can run here.
func needContainerd(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root to run containerd")
	}
	for _, p := range []string{filepath.Join(binDir, "containerd"), filepath.Join(binDir, "containerd-shim-runc-v2"), runcPath} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("integration test: needs %s (make bins; Debian package runc): %v", p, err)
		}
	}
}

// startContainerd renders a config into a fresh dir under /tmp, starts
// containerd with it and waits for CRI Version. Cleanup stops it and
// removes everything, unmounting what is mounted below the dir first.
func startContainerd(t *testing.T) *testNode {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "kbxtest-")
	if err != nil {
		t.Fatal(err)
	}
	canAdj, err := doctor.HasCapability(unix.CAP_SYS_RESOURCE)
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{
		dir: dir,
		cfg: Config{
			Root:                dir + "/root",
			State:               dir + "/state",
			Address:             dir + "/containerd.sock",
			TTRPCAddress:        dir + "/containerd.sock.ttrpc",
			SandboxImage:        pauseRef(t),
			Runtime:             "runc",
			RuntimeBinary:       runcPath,
			RuntimeRoot:         dir + "/runc",
			RestrictOOMScoreAdj: !canAdj,
			CNIBinDirs:          []string{"/usr/lib/cni"},
			CNIConfDir:          dir + "/net.d",
			OptPath:             dir + "/opt",
			ShimSocketDir:       dir + "/s",
		},
		exited: make(chan struct{}),
		log:    dir + "/containerd.log",
	}
	t.Cleanup(func() { n.cleanup(t) })

	config, err := Render(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	n.cmd = exec.Command(filepath.Join(binDir, "containerd"), "--config", configPath)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	// The shim is found on PATH: ours first.
	n.cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	start := time.Now()
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		n.cmd.Wait()
		close(n.exited)
	}()

	client, err := cri.Dial(t.Context(), n.cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		v, err := client.Version(ctx)
		cancel()
		if err == nil {
			t.Logf("%s ready after %v", v, time.Since(start).Round(time.Millisecond))
			return n
		}
		select {
		case <-n.exited:
			t.Fatalf("containerd exited (%v) before it was ready:\n%s", n.cmd.ProcessState, n.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("containerd not ready after 30s: %v\n%s", err, n.logTail())
		}
	}
}

// stop sends SIGTERM and waits for containerd to exit.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	select {
	case <-n.exited:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("containerd ignored SIGTERM for 30s; killing it")
		n.cmd.Process.Kill()
		<-n.exited
	}
}

// cleanup stops containerd, kills shims left behind (by PID), unmounts what
// is mounted below the dir and removes it and the test's cgroups.
func (n *testNode) cleanup(t *testing.T) {
	if n.cmd != nil && n.cmd.Process != nil {
		n.stop(t)
	}
	if t.Failed() {
		t.Logf("containerd log:\n%s", n.logTail())
	}
	for _, pid := range shimsOf(t, n.dir) {
		t.Errorf("shim %d outlived containerd; killing it", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	mounts, err := node.MountsUnder(n.dir)
	if err != nil {
		t.Error(err)
	}
	for _, m := range mounts {
		if err := unix.Unmount(m, 0); err != nil {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", m, err)
			}
		}
	}
	if err := os.RemoveAll(n.dir); err != nil {
		t.Error(err)
	}
	if pids := cgroupProcs(t, cgroupParent(n.dir)); len(pids) > 0 {
		t.Errorf("processes %v outlived containerd in the test's cgroup; killing them", pids)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(cgroupProcs(t, cgroupParent(n.dir))) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := cgroup.Remove(cgroupParent(n.dir)); err != nil {
		t.Error(err)
	}
}

// cgroupProcs returns the PIDs in cgroup path or below it, in any hierarchy.
func cgroupProcs(t *testing.T, path string) []int {
	mounts, err := cgroup.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, m := range mounts {
		filepath.WalkDir(filepath.Join(m, strings.Trim(path, "/")), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for f := range strings.FieldsSeq(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// logTail returns the last lines of containerd's log.
func (n *testNode) logTail() string {
	b, _ := os.ReadFile(n.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// cgroupParent is the cgroup the test's pods go in: named after the test
// dir so that cleanup removes exactly it.
func cgroupParent(dir string) string {
	return "/" + filepath.Base(dir)
}

// shimsOf returns the PIDs of containerd-shim processes whose command line
// mentions dir.
func shimsOf(t *testing.T, dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.Contains(filepath.Base(args[0]), "containerd-shim") && bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pauseRef is the pause image's ref, the sandbox image.
func pauseRef(t *testing.T) string {
	b, ok := images.Lookup("pause")
	if !ok {
		t.Fatal("no builtin pause image")
	}
	return b.Ref
}

// otherRef names a second image, built like pause but not the sandbox image,
// which the CRI plugin pins by itself.
const otherRef = "example.com/kbxtest/other:1"

// buildImages builds as docker-archives the pause image, a copy of it
// tagged otherRef, and an image with a layer of its own, from _output/bin/pause, or from images/pause when that is
// not built. It returns their paths.
func buildImages(t *testing.T) (pause, other, unique string) {
	t.Helper()
	b, _ := images.Lookup("pause")
	dir := binDir
	if _, err := os.Stat(filepath.Join(binDir, b.Binary)); err != nil {
		dir = t.TempDir()
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, b.Binary), "../../../images/pause")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", build, err, out)
		}
	}
	out := t.TempDir()
	o := b
	o.Name, o.Ref = "other", otherRef
	u := b
	u.Name, u.Ref = "unique", "example.com/kbxtest/unique:1"
	u.Extra = []images.File{{Path: "/unique", Content: []byte("a layer of its own")}}
	for _, img := range []images.Builtin{b, o, u} {
		if err := images.Build(img, dir, filepath.Join(out, img.FileName())); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(out, b.FileName()), filepath.Join(out, o.FileName()), filepath.Join(out, u.FileName())
}

// find returns the image named ref in list.
func find(list []ImportedImage, ref string) (ImportedImage, bool) {
	for _, img := range list {
		if img.Ref == ref {
			return img, true
		}
	}
	return ImportedImage{}, false
}

func TestContainerd(t *testing.T) {
	needContainerd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	tarball, otherTarball, uniqueTarball := buildImages(t)
	n := startContainerd(t)
	socket := n.cfg.Address
	ref := n.cfg.SandboxImage

	client, err := cri.Dial(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	t.Run("ping", func(t *testing.T) {
		if err := cri.Ping(ctx, socket); err != nil {
			t.Errorf("Ping of the running containerd: %v", err)
		}
		missing := filepath.Join(t.TempDir(), "none.sock")
		if err := cri.Ping(ctx, missing); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("Ping of %s = %v, want an error naming the socket", missing, err)
		}
	})

	var imported ImportedImage
	t.Run("import", func(t *testing.T) {
		labels := map[string]string{LabelPinned: PinnedValue, LabelSource: tarball}
		got, err := Import(ctx, socket, tarball, ImportOptions{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Ref != ref {
			t.Fatalf("imported %+v, want %s", got, ref)
		}
		imported = got[0]
		list, err := List(ctx, socket)
		if err != nil {
			t.Fatal(err)
		}
		// The CRI plugin adds a record named by the image ID.
		t.Logf("listed %+v", list)
		if img, ok := find(list, ref); !ok || img.Digest != imported.Digest ||
			img.Labels[LabelPinned] != PinnedValue || img.Labels[LabelSource] != tarball {
			t.Errorf("listed %+v", list)
		}
		bySource, err := List(ctx, socket, fmt.Sprintf("labels.%q==%q", LabelSource, tarball))
		if err != nil || len(bySource) != 1 {
			t.Errorf("list by source: %+v, %v", bySource, err)
		}
		waitPinned(ctx, t, client, ref, true)
	})

	t.Run("pin", func(t *testing.T) {
		if _, err := Import(ctx, socket, otherTarball, ImportOptions{Labels: map[string]string{LabelSource: otherTarball}}); err != nil {
			t.Fatal(err)
		}
		waitPinned(ctx, t, client, otherRef, false)
		if err := Pin(ctx, socket, otherRef); err != nil {
			t.Fatal(err)
		}
		waitPinned(ctx, t, client, otherRef, true)
		if err := Unpin(ctx, socket, otherRef); err != nil {
			t.Fatal(err)
		}
		waitPinned(ctx, t, client, otherRef, false)
		list, _ := List(ctx, socket)
		if img, _ := find(list, otherRef); img.Labels[LabelSource] != otherTarball {
			t.Errorf("unpin changed other labels: %+v", img)
		}
		// The sandbox image stays pinned: the CRI plugin pins it again.
		if err := Unpin(ctx, socket, ref); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		waitPinned(ctx, t, client, ref, true)
		if err := Pin(ctx, socket, "example.com/missing:1"); !errdefs.IsNotFound(err) {
			t.Errorf("pinning a missing image: %v, want not found", err)
		}
	})

	t.Run("compressed", func(t *testing.T) {
		for _, c := range []struct {
			ext      string
			compress func(io.Writer) io.WriteCloser
		}{
			{".tar.gz", func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }},
			{".tar.zst", func(w io.Writer) io.WriteCloser {
				z, err := zstd.NewWriter(w)
				if err != nil {
					t.Fatal(err)
				}
				return z
			}},
		} {
			path := compressFile(t, tarball, c.ext, c.compress)
			got, err := Import(ctx, socket, path, ImportOptions{Labels: map[string]string{LabelSource: path}})
			if err != nil {
				t.Errorf("%s: %v", c.ext, err)
				continue
			}
			if len(got) != 1 || got[0].Digest != imported.Digest || got[0].Labels[LabelSource] != path || got[0].Labels[LabelPinned] != PinnedValue {
				t.Errorf("%s: imported %+v, want the same image, still pinned, with the new source", c.ext, got)
			}
		}
	})

	t.Run("oci layout", func(t *testing.T) {
		const ociRef = "example.com/kbxtest/oci:1"
		path := ociArchive(t, otherTarball, ociRef)
		got, err := Import(ctx, socket, path, ImportOptions{Labels: map[string]string{LabelSource: path}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Ref != ociRef {
			t.Errorf("imported %+v, want %s", got, ociRef)
		}
		waitPinned(ctx, t, client, ociRef, false)
	})

	t.Run("bad archives", func(t *testing.T) {
		before, err := List(ctx, socket)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		bad := map[string][]byte{
			"random.tar":    bytes.Repeat([]byte("not an image "), 1000),
			"empty.tar":     nil,
			"truncated.tar": readFile(t, tarball)[:4096],
			"notimage.tar":  tarOf(t, map[string][]byte{"hello.txt": []byte("hi")}),
			// Layers that are not the config's diff IDs: Import checks them.
			"badlayer.tar": corruptLayer(t, uniqueTarball),
			// An OCI layout whose only name is a tag names no image.
			"bare-tag.tar": readFile(t, ociArchive(t, otherTarball, "1.0")),
		}
		for name, data := range bad {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Import(ctx, socket, path, ImportOptions{Labels: map[string]string{LabelSource: path}})
			if err == nil {
				t.Errorf("%s: no error", name)
				continue
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error does not name the file: %v", name, err)
			}
			t.Logf("%s: %v", name, err)
		}
		_, err = Import(ctx, socket, filepath.Join(dir, "missing.tar"), ImportOptions{})
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("missing file: %v, want ErrNotExist", err)
		}
		after, err := List(ctx, socket)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("bad imports changed the images:\nbefore %+v\nafter  %+v", before, after)
		}
		// Nor did they leave partial ingests (truncated.tar's layer).
		c, cctx, err := connect(ctx, socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if st, err := c.ContentStore().ListStatuses(cctx); err != nil || len(st) > 0 {
			t.Errorf("active ingests after failed imports: %+v, %v", st, err)
		}
	})

	t.Run("pods", func(t *testing.T) {
		runPod(ctx, t, client, n, ref)
		if err := client.RemoveAll(ctx); err != nil {
			t.Fatal(err)
		}
		ctrs, err := client.Runtime.ListContainers(ctx, &runtime.ListContainersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := client.Runtime.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ctrs.Containers) != 0 || len(pods.Items) != 0 {
			t.Errorf("after RemoveAll: %d containers, %d pod sandboxes", len(ctrs.Containers), len(pods.Items))
		}
		// RemoveAll of nothing is fine.
		if err := client.RemoveAll(ctx); err != nil {
			t.Errorf("second RemoveAll: %v", err)
		}
	})

	t.Run("stop", func(t *testing.T) {
		// As a node stops: SIGTERM right after RemoveAll. The shims, told
		// to shut down when their tasks were deleted, may take a moment to
		// exit, but none may stay.
		start := time.Now()
		n.stop(t)
		t.Logf("containerd stopped in %v", time.Since(start).Round(time.Millisecond))
		deadline := time.Now().Add(5 * time.Second)
		for len(shimsOf(t, n.dir)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if pids := shimsOf(t, n.dir); len(pids) > 0 {
			t.Errorf("shims %v outlived containerd by 5s", pids)
		}
	})
}

// runPod runs a sandbox (host network, so no CNI) and a container of image
// in it, and checks both run.
func runPod(ctx context.Context, t *testing.T, client *cri.Client, n *testNode, image string) {
	t.Helper()
	ns := &runtime.NamespaceOption{Network: runtime.NamespaceMode_NODE, Pid: runtime.NamespaceMode_CONTAINER, Ipc: runtime.NamespaceMode_POD}
	podConfig := &runtime.PodSandboxConfig{
		Metadata:     &runtime.PodSandboxMetadata{Name: "test", Namespace: "default", Uid: "kbxtest-uid"},
		LogDirectory: filepath.Join(n.dir, "pods"),
		Linux: &runtime.LinuxPodSandboxConfig{
			CgroupParent:    cgroupParent(n.dir),
			SecurityContext: &runtime.LinuxSandboxSecurityContext{NamespaceOptions: ns},
		},
	}
	pod, err := client.Runtime.RunPodSandbox(ctx, &runtime.RunPodSandboxRequest{Config: podConfig})
	if err != nil {
		t.Fatalf("run pod sandbox: %v\n%s", err, n.logTail())
	}
	ctr, err := client.Runtime.CreateContainer(ctx, &runtime.CreateContainerRequest{
		PodSandboxId: pod.PodSandboxId,
		Config: &runtime.ContainerConfig{
			Metadata: &runtime.ContainerMetadata{Name: "pause"},
			Image:    &runtime.ImageSpec{Image: image},
			LogPath:  "pause.log",
			Linux: &runtime.LinuxContainerConfig{
				SecurityContext: &runtime.LinuxContainerSecurityContext{NamespaceOptions: ns},
			},
		},
		SandboxConfig: podConfig,
	})
	if err != nil {
		t.Fatalf("create container: %v\n%s", err, n.logTail())
	}
	if _, err := client.Runtime.StartContainer(ctx, &runtime.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		t.Fatalf("start container: %v\n%s", err, n.logTail())
	}
	status, err := client.Runtime.ContainerStatus(ctx, &runtime.ContainerStatusRequest{ContainerId: ctr.ContainerId})
	if err != nil {
		t.Fatal(err)
	}
	if s := status.Status.State; s != runtime.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container state %v, want running", s)
	}
	podStatus, err := client.Runtime.PodSandboxStatus(ctx, &runtime.PodSandboxStatusRequest{PodSandboxId: pod.PodSandboxId})
	if err != nil {
		t.Fatal(err)
	}
	if s := podStatus.Status.State; s != runtime.PodSandboxState_SANDBOX_READY {
		t.Errorf("pod sandbox state %v, want ready", s)
	}
	if len(shimsOf(t, n.dir)) == 0 {
		t.Errorf("no shim mentions %s on its command line; the shim check would pass vacuously", n.dir)
	}
}

// waitPinned waits until CRI's ImageStatus reports ref, with Pinned as want;
// the CRI image cache follows containerd's image events, asynchronously.
func waitPinned(ctx context.Context, t *testing.T, client *cri.Client, ref string, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := client.Images.ImageStatus(ctx, &runtime.ImageStatusRequest{Image: &runtime.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Image != nil && resp.Image.Pinned == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRI image status of %s: %+v, want pinned=%v", ref, resp.Image, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compressFile writes path compressed, to a file named with ext.
func compressFile(t *testing.T, path, ext string, compress func(io.Writer) io.WriteCloser) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".tar")+ext)
	var buf bytes.Buffer
	w := compress(&buf)
	if _, err := w.Write(readFile(t, path)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// tarOf returns a tar archive of files.
func tarOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// corruptLayer returns the docker-archive at path with the content of every
// layer replaced by garbage, which the config's diff IDs do not match.
func corruptLayer(t *testing.T, path string) []byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(readFile(t, path)))
	for {
		hdr, err := tr.Next()
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
		files[hdr.Name] = b
	}
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) == 0 {
		t.Fatalf("%s: manifest.json: %v", path, err)
	}
	for _, m := range manifest {
		for _, l := range m.Layers {
			if _, ok := files[l]; !ok {
				t.Fatalf("%s: no layer %s", path, l)
			}
			files[l] = bytes.Repeat([]byte("corrupt layer "), 100)
		}
	}
	return tarOf(t, files)
}

// ociArchive converts the docker-archive at path into an OCI image layout
// archive whose index names the image refName.
func ociArchive(t *testing.T, path, refName string) string {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{ocispec.AnnotationRefName: refName})); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "oci.tar")
	if err := os.WriteFile(out, tarOf(t, files), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
