package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubernix/kubernix/pkg/images"
)

// conformanceIDs are the ImageIDs of k8s.io/kubernetes/test/utils/image
// that the [Conformance] specs of v1.37.2 run (grep imageutils.* in the
// files test/conformance/testdata/conformance.yaml names, and in the
// framework helpers they call), minus the built-in images (Agnhost, Pause)
// and InvalidRegistryImage, which must fail to pull.
var conformanceIDs = []string{
	"AgnhostPrev", "BusyBox", "Nginx", "GlibcDnsTesting", "Nautilus", "Kitten", "Nonewprivs", "APIServer", "Etcd",
}

func TestConformanceImagesMatchManifest(t *testing.T) {
	t.Chdir("../..") // kubernetesDir runs the go command in bundle/
	dir, err := kubernetesDir(context.Background(), false)
	if err != nil {
		t.Skipf("the k8s.io/kubernetes module source is not in the module cache (run `make bins` first): %v", err)
	}
	manifest := manifestRefs(t, filepath.Join(dir, "test", "utils", "image", "manifest.go"))

	set := conformanceImages(t.TempDir())
	var ids []string
	for _, c := range set {
		ids = append(ids, c.ID)
		c.Builtin = c.WithKubernetesDir(dir)
		t.Run(c.Name, func(t *testing.T) {
			want, ok := manifest[c.ID]
			if !ok {
				t.Fatalf("manifest.go has no image %s", c.ID)
			}
			if c.Ref != want {
				t.Errorf("ref %s, want %s (manifest.go's %s)", c.Ref, want, c.ID)
			}
			if err := c.Validate(); err != nil {
				t.Error(err)
			}
			// Files of the module source must be there.
			for _, f := range c.Extra {
				if strings.HasPrefix(f.Source, dir) {
					if _, err := os.Stat(f.Source); err != nil {
						t.Errorf("file %s: %v", f.Path, err)
					}
				}
			}
		})
	}
	if !slices.Equal(ids, conformanceIDs) {
		t.Errorf("conformance set %v, want %v", ids, conformanceIDs)
	}
	var names []string
	for _, c := range set {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if n := slices.Compact(slices.Clone(names)); len(n) != len(names) {
		t.Errorf("image names %v are not unique", names)
	}
}

// manifestRefs returns the default reference of each ImageID that
// initImageConfigs in manifest.go configures, e.g. "AgnhostPrev" ->
// "registry.k8s.io/e2e-test-images/agnhost:2.55".
func manifestRefs(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// initRegistry's fields, e.g. `PromoterE2eRegistry: "registry.k8s.io/e2e-test-images",`
	registries := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+Registry):\s*"([^"]+)",`).FindAllSubmatch(src, -1) {
		registries[string(m[1])] = string(m[2])
	}
	// e.g. `configs[AgnhostPrev] = Config{list.PromoterE2eRegistry, "agnhost", "2.55"}`
	refs := map[string]string{}
	for _, m := range regexp.MustCompile(`configs\[(\w+)\] = Config\{list\.(\w+), "([^"]+)", "([^"]+)"\}`).FindAllSubmatch(src, -1) {
		reg, ok := registries[string(m[2])]
		if !ok {
			t.Fatalf("%s: image %s: unknown registry %s", path, m[1], m[2])
		}
		refs[string(m[1])] = reg + "/" + string(m[3]) + ":" + string(m[4])
	}
	if len(refs) == 0 || len(registries) == 0 {
		t.Fatalf("%s: found %d images and %d registries; has its layout changed?", path, len(refs), len(registries))
	}
	return refs
}

func TestConformanceImageFiles(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	workDir := filepath.Join(dir, "work")
	k8sDir := filepath.Join(dir, "kubernetes")
	busybox := filepath.Join(dir, "busybox")
	// Every input in the temporary dir is a fake; those read with their
	// shared libraries are a copy of a small dynamic host program, and the
	// host's own (zsh, dig, ...) are used as they are.
	dynamic := "/usr/bin/printenv"
	set := conformanceImages(workDir)
	for i := range set {
		set[i].Builtin = set[i].WithSource(images.BusyboxSource, busybox).WithKubernetesDir(k8sDir)
		for _, f := range append(set[i].Extra, images.File{Path: "/agnhost", Binary: "agnhost"}) {
			src := f.Source
			if f.Binary != "" {
				src = filepath.Join(binDir, f.Binary)
			}
			if !strings.HasPrefix(src, dir) {
				if _, err := os.Stat(src); src != "" && err != nil {
					t.Skipf("image %s needs the host's %s: %v", set[i].Name, src, err)
				}
				continue
			}
			data := []byte("fake " + src)
			if f.Libraries {
				var err error
				if data, err = os.ReadFile(dynamic); err != nil {
					t.Skipf("a dynamic host program for fake inputs: %v", err)
				}
			}
			if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}

	tests := []struct {
		image      string
		entrypoint []string
		cmd        []string
		// files maps a path in the image to its mode and, if not nil, content.
		files map[string]fileWant
	}{
		{
			image: "agnhost-prev", entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
			files: map[string]fileWant{
				"agnhost":            {mode: 0o755, content: "fake " + filepath.Join(binDir, "agnhost")},
				"etc/kubernix-image": {mode: 0o644, content: "registry.k8s.io/e2e-test-images/agnhost:2.55\n"},
			},
		},
		{
			// /bin/sh is envsh, which runs ash or zsh.
			image: "busybox", entrypoint: []string{"/bin/sh"},
			files: map[string]fileWant{
				"bin/sh":       {mode: 0o755, content: "fake " + filepath.Join(workDir, "bin", "envsh")},
				"bin/ash":      {mode: 0o777, link: "busybox"},
				"bin/hexdump":  {mode: 0o777, link: "busybox"},
				"bin/zsh":      {mode: 0o755},
				"bin/printenv": {mode: 0o755},
				"bin/wget":     {mode: 0o755},
				"bin/busybox":  {mode: 0o755, content: "fake " + busybox},
			},
		},
		{
			image: "nginx", entrypoint: []string{"/usr/sbin/nginx"}, cmd: []string{"-g", "daemon off;"},
			files: map[string]fileWant{
				"usr/sbin/nginx":                  {mode: 0o755},
				"etc/nginx/nginx.conf":            {mode: 0o644, contains: "listen 80;"},
				"usr/share/nginx/html/index.html": {mode: 0o644, contains: "Welcome to nginx!"},
				"var/lib/nginx":                   {mode: 0o755, dir: true},
				"bin/sh":                          {mode: 0o777, link: "busybox"},
			},
		},
		{
			image: "glibc-dns-testing", entrypoint: []string{"/bin/sh"},
			files: map[string]fileWant{
				"usr/bin/dig":                    {mode: 0o755},
				"usr/bin/getent":                 {mode: 0o755},
				"etc/nsswitch.conf":              {mode: 0o644, content: "hosts: files dns\n"},
				"bin/seq":                        {mode: 0o777, link: "busybox"},
				"lib/x86_64-linux-gnu/libc.so.6": {mode: 0o755},
			},
		},
		{
			image: "nautilus", entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
			files: map[string]fileWant{
				"agnhost":      {mode: 0o755},
				"nautilus.jpg": {mode: 0o644},
				"data.json":    {mode: 0o644, content: "fake " + filepath.Join(k8sDir, "test", "images", "nautilus", "html", "data.json")},
			},
		},
		{
			image: "kitten", entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
			files: map[string]fileWant{
				"kitten.jpg":     {mode: 0o644},
				"data.json":      {mode: 0o644, content: "fake " + filepath.Join(k8sDir, "test", "images", "kitten", "html", "data.json")},
				"etc/os-release": {mode: 0o644, contains: `NAME="Alpine Linux"`},
			},
		},
		{
			// The setuid bit is what the AllowPrivilegeEscalation specs test.
			image: "nonewprivs", entrypoint: []string{"/usr/local/bin/nnp"},
			files: map[string]fileWant{"usr/local/bin/nnp": {mode: 0o6755}},
		},
		{
			image: "sample-apiserver", entrypoint: []string{"/sample-apiserver"},
			files: map[string]fileWant{"sample-apiserver": {mode: 0o755}, "tmp": {mode: 0o1777, dir: true}},
		},
		{
			image: "etcd", entrypoint: []string{"/usr/local/bin/etcd"},
			files: map[string]fileWant{"usr/local/bin/etcd": {mode: 0o755, content: "fake " + filepath.Join(workDir, "bin", "etcd")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			i := slices.IndexFunc(set, func(c conformanceImage) bool { return c.Name == tt.image })
			if i < 0 {
				t.Fatalf("no image %s in the conformance set", tt.image)
			}
			b := set[i].Builtin
			out := filepath.Join(dir, "images", b.FileName())
			if err := images.Build(b, binDir, out); err != nil {
				t.Fatal(err)
			}
			checkImage(t, out, tt.entrypoint, tt.cmd, tt.files)
		})
	}
}

// fileWant is what a layer entry must be.
type fileWant struct {
	mode     int64 // tar mode bits, with setuid (0o4000), setgid and sticky
	dir      bool
	link     string // symlink target, for a symlink
	content  string // exact content, unless empty
	contains string // a substring of the content, unless empty
}

// checkImage checks the image tarball at p: its config's entrypoint and
// cmd, and the given entries of its single layer.
func checkImage(t *testing.T, p string, entrypoint, cmd []string, files map[string]fileWant) {
	t.Helper()
	img, err := tarball.ImageFromPath(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, entrypoint) || !slices.Equal(cfg.Config.Cmd, cmd) {
		t.Errorf("entrypoint %q cmd %q, want %q %q", cfg.Config.Entrypoint, cfg.Config.Cmd, entrypoint, cmd)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	seen := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		want, ok := files[name]
		if !ok {
			continue
		}
		seen[name] = true
		if hdr.Mode != want.mode || (hdr.Typeflag == tar.TypeDir) != want.dir || hdr.Linkname != want.link {
			t.Errorf("/%s: mode %o dir %v link %q, want %o dir %v link %q", name, hdr.Mode, hdr.Typeflag == tar.TypeDir, hdr.Linkname, want.mode, want.dir, want.link)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if want.content != "" && string(data) != want.content {
			t.Errorf("/%s: content %q, want %q", name, data, want.content)
		}
		if want.contains != "" && !bytes.Contains(data, []byte(want.contains)) {
			t.Errorf("/%s: content %q, want it to contain %q", name, data, want.contains)
		}
	}
	for name := range files {
		if !seen[name] {
			t.Errorf("/%s: not in the image", name)
		}
	}
}

func TestRunSets(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "unknown set", args: []string{"-set", "nope"}, wantErr: `-set "nope": unknown image set; known: builtin, conformance`},
		{name: "builtin name in the conformance set", args: []string{"-set", "conformance", "pause"}, wantErr: "unknown image pause; known: agnhost-prev, busybox, nginx, glibc-dns-testing, nautilus, kitten, nonewprivs, sample-apiserver, etcd"},
		{name: "conformance name in the builtin set", args: []string{"nautilus"}, wantErr: "unknown image nautilus; known: pause, coredns"},
	}
	t.Chdir("../..")
	if _, err := kubernetesDir(context.Background(), false); err != nil {
		t.Skipf("the k8s.io/kubernetes module source is not in the module cache (run `make bins` first): %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), &stdout, &stderr, append([]string{"-out", out, "-work-dir", t.TempDir()}, tt.args...))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("%s has %d entries after a refused run, want none", out, len(entries))
			}
		})
	}
}

func TestPrepared(t *testing.T) {
	set := conformanceBuiltins(conformanceImages("/work"))
	pick := func(names ...string) []images.Builtin {
		var out []images.Builtin
		for _, b := range set {
			if slices.Contains(names, b.Name) {
				out = append(out, b)
			}
		}
		return out
	}
	tests := []struct {
		images   []images.Builtin
		wantGo   []string
		wantDebs []string
	}{
		{images: pick("agnhost-prev", "nautilus", "glibc-dns-testing")},
		{images: pick("nonewprivs"), wantGo: []string{"nnp"}},
		{images: pick("busybox"), wantGo: []string{"envsh"}},
		{images: pick("nginx"), wantDebs: []string{"nginx"}},
		{images: pick("etcd", "sample-apiserver"), wantGo: []string{"etcd", "sample-apiserver"}},
		{images: set, wantGo: []string{"nnp", "etcd", "sample-apiserver", "envsh"}, wantDebs: []string{"nginx"}},
	}
	for _, tt := range tests {
		var gotGo []string
		for _, g := range goBinariesFor(tt.images, "/bin", "/work") {
			gotGo = append(gotGo, g.Name)
		}
		if !slices.Equal(gotGo, tt.wantGo) {
			t.Errorf("goBinariesFor(%v) = %v, want %v", names(tt.images), gotGo, tt.wantGo)
		}
		if got := debPackagesFor(tt.images, "/bin", "/work"); !slices.Equal(got, tt.wantDebs) {
			t.Errorf("debPackagesFor(%v) = %v, want %v", names(tt.images), got, tt.wantDebs)
		}
	}
}

func TestSameContent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := write("a", "one"), write("b", "one"), write("c", "two")
	tests := []struct {
		x, y string
		want bool
	}{
		{a, b, true},
		{a, c, false},
		{a, filepath.Join(dir, "missing"), false},
	}
	for _, tt := range tests {
		got, err := sameContent(tt.x, tt.y)
		if err != nil || got != tt.want {
			t.Errorf("sameContent(%s, %s) = %v, %v; want %v", filepath.Base(tt.x), filepath.Base(tt.y), got, err, tt.want)
		}
	}
	if _, err := sameContent(filepath.Join(dir, "missing"), a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sameContent of a missing new file: %v, want fs.ErrNotExist", err)
	}
}

// TestInModule: -module moves the programs of the Kubernetes tree (the
// bundle's and test/conformance's) to a release's module, and leaves
// kubernix's own and the Gateway API suite's.
func TestInModule(t *testing.T) {
	for _, g := range goBinaries {
		got := inModule(g, "bundle/releases/v1.35")
		want := "bundle/releases/v1.35"
		if g.Module == "." || g.Module == "test/gateway" {
			want = g.Module
		}
		if got.Module != want || got.Package != g.Package || got.Name != g.Name {
			t.Errorf("inModule(%s) = %+v, want module %s", g.Name, got, want)
		}
		if inModule(g, "") != g {
			t.Errorf("inModule(%s, \"\") changed it", g.Name)
		}
	}
}

// TestGatewaySet: -set gateway is echo-basic under the tag most of the
// Gateway API suite's manifests run, made from the program built in
// test/gateway (and nothing else of the work dir).
func TestGatewaySet(t *testing.T) {
	set, err := imageSet(options{set: setGateway, workDir: "/w"})
	if err != nil || len(set) != 1 || set[0].Name != "echo-basic" || set[0].Ref != echoBasicRef {
		t.Fatalf("gateway set %+v, %v; want echo-basic %s", set, err, echoBasicRef)
	}
	need := goBinariesFor(set, "/bin", "/w")
	if len(need) != 1 || need[0].Module != "test/gateway" || need[0].Package != "sigs.k8s.io/gateway-api/conformance/echo-basic" {
		t.Errorf("programs for the gateway set: %+v; want echo-basic of test/gateway", need)
	}
	if pkgs := debPackagesFor(set, "/bin", "/w"); len(pkgs) != 0 {
		t.Errorf("Debian packages for the gateway set: %v; want none", pkgs)
	}
}
