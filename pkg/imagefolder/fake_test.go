package imagefolder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/kubernix/kubernix/pkg/components/containerd"
)

// fakeRuntime is a Runtime over in-memory image stores, one per socket. A
// fake tarball is a text file of "ref digest" lines; one holding the word
// "corrupt" fails to import, as a damaged archive does.
type fakeRuntime struct {
	mu       sync.Mutex
	stores   map[string]map[string]containerd.ImportedImage // socket -> ref -> image
	imports  map[string]int                                 // file base name -> imports, all nodes
	pulls    map[string]int                                 // ref -> pulls, all nodes
	registry map[string]string                              // ref -> digest pullable
	down     map[string]bool                                // sockets whose containerd is down
	failNext int                                            // imports that fail before any succeeds
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		stores: map[string]map[string]containerd.ImportedImage{}, imports: map[string]int{},
		pulls: map[string]int{}, registry: map[string]string{}, down: map[string]bool{},
	}
}

var errDown = errors.New("connection refused")

func (r *fakeRuntime) store(socket string) (map[string]containerd.ImportedImage, error) {
	if r.down[socket] {
		return nil, fmt.Errorf("connect to containerd at %s: %w", socket, errDown)
	}
	s := r.stores[socket]
	if s == nil {
		s = map[string]containerd.ImportedImage{}
		r.stores[socket] = s
	}
	return s, nil
}

func (r *fakeRuntime) Import(ctx context.Context, to containerd.Target, path string, opts containerd.ImportOptions) ([]containerd.ImportedImage, error) {
	socket := to.Socket
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("import images from %s: %w", path, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.store(socket)
	if err != nil {
		return nil, err
	}
	if r.failNext > 0 {
		r.failNext--
		return nil, fmt.Errorf("import images from %s: injected failure", path)
	}
	if strings.Contains(string(b), "corrupt") {
		return nil, fmt.Errorf("import images from %s: read image archive: corrupt", path)
	}
	var out []containerd.ImportedImage
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			return nil, fmt.Errorf("import images from %s: bad line %q", path, sc.Text())
		}
		img := s[f[0]]
		img.Ref, img.Digest = f[0], f[1]
		img.Labels = withLabels(img.Labels, opts.Labels)
		s[f[0]] = img
		out = append(out, img)
	}
	r.imports[filepath.Base(path)]++
	return out, nil
}

func withLabels(have, set map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range set {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func (r *fakeRuntime) Pull(ctx context.Context, socket, ref string, labels map[string]string) (containerd.ImportedImage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.store(socket)
	if err != nil {
		return containerd.ImportedImage{}, err
	}
	digest, ok := r.registry[ref]
	if !ok {
		return containerd.ImportedImage{}, fmt.Errorf("pull %s: not found", ref)
	}
	img := s[ref]
	img.Ref, img.Digest, img.Labels = ref, digest, withLabels(img.Labels, labels)
	s[ref] = img
	r.pulls[ref]++
	return img, nil
}

func (r *fakeRuntime) List(ctx context.Context, socket string, filters ...string) ([]containerd.ImportedImage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.store(socket)
	if err != nil {
		return nil, err
	}
	var out []containerd.ImportedImage
	for _, ref := range slices.Sorted(maps.Keys(s)) {
		if len(filters) == 0 || slices.ContainsFunc(filters, func(f string) bool { return matches(f, s[ref]) }) {
			out = append(out, s[ref])
		}
	}
	return out, nil
}

// matches supports the two containerd filters the folder uses:
// name=="ref" and labels."key"=="value".
func matches(filter string, img containerd.ImportedImage) bool {
	if filter == fmt.Sprintf("name==%q", img.Ref) {
		return true
	}
	for k, v := range img.Labels {
		if filter == fmt.Sprintf("labels.%q==%q", k, v) {
			return true
		}
	}
	return false
}

func (r *fakeRuntime) SetLabels(ctx context.Context, socket, ref string, labels map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.store(socket)
	if err != nil {
		return err
	}
	img, ok := s[ref]
	if !ok {
		return fmt.Errorf("image %s: %w", ref, errdefs.ErrNotFound)
	}
	img.Labels = withLabels(img.Labels, labels)
	s[ref] = img
	return nil
}

// image returns the image ref on socket.
func (r *fakeRuntime) image(socket, ref string) (containerd.ImportedImage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, ok := r.stores[socket][ref]
	return img, ok
}

func (r *fakeRuntime) importCount(file string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.imports[file]
}

func (r *fakeRuntime) setDown(socket string, down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down[socket] = down
}

// fixture is a folder with two nodes over a fakeRuntime.
type fixture struct {
	t     *testing.T
	dir   string
	rec   string
	rt    *fakeRuntime
	nodes []Node
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	state := t.TempDir()
	fx := &fixture{
		t: t, dir: filepath.Join(state, "images"), rec: filepath.Join(state, "images.json"), rt: newFakeRuntime(),
		nodes: []Node{{Name: "n0", Socket: "/s/n0.sock"}, {Name: "n1", Socket: "/s/n1.sock"}},
	}
	if err := os.MkdirAll(fx.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return fx
}

// folder returns a Folder over the fixture, with opts' durations and clock.
func (fx *fixture) folder(opts Options) *Folder {
	fx.t.Helper()
	opts.Dir, opts.RecordFile, opts.Nodes, opts.Runtime = fx.dir, fx.rec, fx.nodes, fx.rt
	f, err := New(opts)
	if err != nil {
		fx.t.Fatal(err)
	}
	return f
}

// write writes a file into the folder with mtime at (zero: an hour ago,
// long settled).
func (fx *fixture) write(name, content string, at time.Time) {
	fx.t.Helper()
	path := filepath.Join(fx.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		fx.t.Fatal(err)
	}
	if at.IsZero() {
		at = time.Now().Add(-time.Hour)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fixture) remove(name string) {
	fx.t.Helper()
	if err := os.Remove(filepath.Join(fx.dir, name)); err != nil {
		fx.t.Fatal(err)
	}
}

// wantImage checks ref on every node: its digest, and pinned with source
// file, or (file "") unpinned without source.
func (fx *fixture) wantImage(ref, digest, file string) {
	fx.t.Helper()
	for _, nd := range fx.nodes {
		img, ok := fx.rt.image(nd.Socket, ref)
		if !ok {
			fx.t.Errorf("node %s: no image %s", nd.Name, ref)
			continue
		}
		if img.Digest != digest {
			fx.t.Errorf("node %s: %s digest %s, want %s", nd.Name, ref, img.Digest, digest)
		}
		pinned, source := img.Labels[containerd.LabelPinned], img.Labels[containerd.LabelSource]
		switch {
		case file == "" && (pinned != "" || source != ""):
			fx.t.Errorf("node %s: %s labels %v, want unpinned without source", nd.Name, ref, img.Labels)
		case file != "" && (pinned != containerd.PinnedValue || source != SourceLabel(file)):
			fx.t.Errorf("node %s: %s labels %v, want pinned from %s", nd.Name, ref, img.Labels, file)
		}
	}
}
