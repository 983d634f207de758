package images

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fakeInputs writes a small fake binary for every builtin into a new bin dir,
// and fakes of their host sources (fakeSources); it returns the bin dir and
// the builtins reading from the fakes.
func fakeInputs(t *testing.T) (string, []Builtin) {
	t.Helper()
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var bs []Builtin
	for _, b := range Builtins() {
		if b.Binary != "" {
			writeFile(t, filepath.Join(binDir, b.Binary), "fake "+b.Binary+" binary\n")
		}
		bs = append(bs, fakeSources(t, dir, b))
	}
	return binDir, bs
}

// fakeSources returns b reading each host source from a fake in dir:
// busybox (BusyboxSource) from dir/busybox, holding "fake busybox\n", and
// each other one from dir/src/<its image path>, holding "fake <image
// path>\n", without shared libraries.
func fakeSources(t *testing.T, dir string, b Builtin) Builtin {
	t.Helper()
	return b.MapFiles(func(f File) File {
		switch {
		case f.Source == "":
		case f.Source == BusyboxSource:
			f.Source = filepath.Join(dir, "busybox")
			writeFile(t, f.Source, "fake busybox\n")
		default:
			f.Source = filepath.Join(dir, "src", f.Path)
			f.Libraries = false
			if err := os.MkdirAll(filepath.Dir(f.Source), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, f.Source, "fake "+f.Path+"\n")
		}
		return f
	})
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// layerEntry is a tar entry read back from an image layer.
type layerEntry struct {
	hdr     *tar.Header
	content string
}

// readImage reads the tarball at p back with the tag ref and returns the image
// and its single layer's entries in order.
func readImage(t *testing.T, p, ref string) (v1.Image, []layerEntry) {
	t.Helper()
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatalf("read back %s as %s: %v", p, ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("got %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var entries []layerEntry
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, layerEntry{hdr: hdr, content: string(data)})
	}
	return img, entries
}

func TestBuiltins(t *testing.T) {
	tests := []struct {
		name, ref, binary, path, fileName, entrypoint string
		cmd                                           []string
	}{
		{"pause", PauseRef(), "pause", "/pause", "pause.tar", "/pause", nil},
		{"coredns", CoreDNSRef(), "coredns", "/coredns", "coredns.tar", "/coredns", nil},
		{"agnhost", AgnhostRef(), "agnhost", "/agnhost", "agnhost.tar", "/agnhost", []string{"pause"}},
		{"local-path-provisioner", LocalPathProvisionerRef(), "local-path-provisioner", "/usr/bin/local-path-provisioner",
			"local-path-provisioner.tar", "/usr/bin/local-path-provisioner", nil},
		{"busybox", BusyboxRef(), "", "", "busybox.tar", "/bin/sh", nil},
		{"metrics-server", MetricsServerRef(), "metrics-server", "/metrics-server", "metrics-server.tar", "/metrics-server", nil},
		{"traefik", TraefikRef(), "traefik", "/usr/local/bin/traefik", "traefik.tar", "/usr/local/bin/traefik", nil},
	}
	all := Builtins()
	if len(all) != len(tests) {
		t.Fatalf("Builtins() has %d images, want %d", len(all), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := Lookup(tt.name)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", tt.name)
			}
			if all[i].Name != tt.name {
				t.Errorf("Builtins()[%d] is %q, want %q", i, all[i].Name, tt.name)
			}
			if b.Ref != tt.ref || b.Binary != tt.binary || b.Path != tt.path {
				t.Errorf("got ref %q binary %q path %q, want %q %q %q", b.Ref, b.Binary, b.Path, tt.ref, tt.binary, tt.path)
			}
			if want := []string{tt.entrypoint}; !slices.Equal(b.Entrypoint, want) {
				t.Errorf("entrypoint %q, want %q", b.Entrypoint, want)
			}
			if !slices.Equal(b.Cmd, tt.cmd) {
				t.Errorf("cmd %q, want %q", b.Cmd, tt.cmd)
			}
			if got := b.FileName(); got != tt.fileName {
				t.Errorf("FileName() = %q, want %q", got, tt.fileName)
			}
			if err := b.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found something`)
	}
}

func TestBuild(t *testing.T) {
	binDir, builtins := fakeInputs(t)
	outDir := t.TempDir()

	for _, b := range builtins {
		t.Run(b.Name, func(t *testing.T) {
			out := filepath.Join(outDir, b.FileName())
			if err := Build(b, binDir, out); err != nil {
				t.Fatal(err)
			}

			info, err := Inspect(out)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{b.Ref}; !slices.Equal(info.Tags, want) {
				t.Errorf("tags %q, want %q", info.Tags, want)
			}
			if fi, err := os.Stat(out); err != nil || fi.Size() != info.Size {
				t.Errorf("Inspect size %d, stat %v %v", info.Size, fi, err)
			}

			img, entries := readImage(t, out, b.Ref)
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != "linux" || cfg.Architecture != "amd64" {
				t.Errorf("platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
			}
			if !slices.Equal(cfg.Config.Entrypoint, b.Entrypoint) {
				t.Errorf("entrypoint %q, want %q", cfg.Config.Entrypoint, b.Entrypoint)
			}
			if !slices.Equal(cfg.Config.Cmd, b.Cmd) {
				t.Errorf("cmd %q, want %q", cfg.Config.Cmd, b.Cmd)
			}
			wantEnv := []string{"PATH=/bin"}
			if b.Name == "agnhost" {
				wantEnv = []string{"PATH=" + AgnhostPath}
			}
			if want := wantEnv; !slices.Equal(cfg.Config.Env, want) {
				t.Errorf("env %q, want %q", cfg.Config.Env, want)
			}
			id, err := img.ConfigName()
			if err != nil || id.String() != info.ID {
				t.Errorf("config digest %v (%v), Inspect ID %s", id, err, info.ID)
			}

			byName := map[string]layerEntry{}
			var names []string
			for _, e := range entries {
				byName[e.hdr.Name] = e
				names = append(names, e.hdr.Name)
				if e.hdr.Uid != 0 || e.hdr.Gid != 0 {
					t.Errorf("%s: owner %d:%d, want 0:0", e.hdr.Name, e.hdr.Uid, e.hdr.Gid)
				}
				if !e.hdr.ModTime.Equal(time.Unix(0, 0)) {
					t.Errorf("%s: mtime %v, want the Unix epoch", e.hdr.Name, e.hdr.ModTime)
				}
			}
			if !slices.IsSorted(names) {
				t.Errorf("layer entries not sorted: %q", names)
			}

			switch b.Name {
			case "agnhost":
				checkFile(t, byName, "agnhost", 0o755, "fake agnhost binary\n")
				checkFile(t, byName, "coredns", 0o755, "fake coredns binary\n")
				checkDir(t, byName, "uploads/", 0o755)
				if e := byName["agnhost-2"]; e.hdr == nil || e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != "agnhost" {
					t.Errorf("/agnhost-2 is not a symlink to agnhost: %+v", e.hdr)
				}
				checkFile(t, byName, "localhost.crt", 0o644, "fake /localhost.crt\n")
				checkFile(t, byName, "localhost.key", 0o644, "fake /localhost.key\n")
				// The tools replace busybox's applets of the same name, and
				// /bin/sh is zsh.
				for _, tool := range []string{"bin/zsh", "usr/bin/dig", "usr/bin/curl", "usr/bin/nc", "usr/bin/getent", "sbin/ip"} {
					checkFile(t, byName, tool, 0o755, "fake /"+tool+"\n")
				}
				if e := byName["bin/sh"]; e.hdr == nil || e.hdr.Linkname != "zsh" {
					t.Errorf("/bin/sh is not a symlink to zsh: %+v", e.hdr)
				}
				for _, shadowed := range []string{"bin/nc", "bin/ip", "bin/nslookup"} {
					if _, ok := byName[shadowed]; ok {
						t.Errorf("/%s (busybox) is in the image beside the tool", shadowed)
					}
				}
				if !strings.Contains(byName["etc/passwd"].content, "user-defined-in-image:x:1000:") ||
					!strings.Contains(byName["etc/group"].content, "group-defined-in-image:x:50000:user-defined-in-image") {
					t.Errorf("passwd %q, group %q: no user-defined-in-image (1000) in group-defined-in-image (50000)", byName["etc/passwd"].content, byName["etc/group"].content)
				}
			case "busybox":
				if _, ok := byName["agnhost"]; ok {
					t.Error("busybox has /agnhost")
				}
			default:
				bin := strings.TrimPrefix(b.Path, "/")
				checkFile(t, byName, bin, 0o755, "fake "+b.Binary+" binary\n")
				if want := strings.Count(bin, "/") + 1; len(entries) != want { // the binary and its parents
					t.Errorf("layer has %q, want only %q and its parent directories", names, bin)
				}
				return
			}

			// agnhost and busybox: busybox's files.
			checkFile(t, byName, "bin/busybox", 0o755, "fake busybox\n")
			checkDir(t, byName, "bin/", 0o755)
			checkDir(t, byName, "etc/", 0o755)
			checkDir(t, byName, "tmp/", 0o777|fs.ModeSticky)
			checkFile(t, byName, "etc/passwd", 0o644, "")
			applets := []string{"cat", "ls", "sleep", "echo", "mkdir", "rm", "chmod"}
			if b.Name == "busybox" {
				applets = append(applets, "sh", "nslookup", "nc", "ip")
			}
			for _, applet := range applets {
				e, ok := byName["bin/"+applet]
				if !ok {
					t.Errorf("no /bin/%s", applet)
					continue
				}
				if e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != "busybox" {
					t.Errorf("/bin/%s: type %c link %q, want a symlink to busybox", applet, e.hdr.Typeflag, e.hdr.Linkname)
				}
			}
		})
	}
}

func checkFile(t *testing.T, byName map[string]layerEntry, n string, mode fs.FileMode, content string) {
	t.Helper()
	e, ok := byName[n]
	if !ok {
		t.Errorf("no %s in the layer", n)
		return
	}
	if e.hdr.Typeflag != tar.TypeReg {
		t.Errorf("%s: type %c, want a regular file", n, e.hdr.Typeflag)
	}
	if got := e.hdr.FileInfo().Mode().Perm(); got != mode {
		t.Errorf("%s: mode %v, want %v", n, got, mode)
	}
	if content != "" && e.content != content {
		t.Errorf("%s: content %q, want %q", n, e.content, content)
	}
}

func checkDir(t *testing.T, byName map[string]layerEntry, n string, mode fs.FileMode) {
	t.Helper()
	e, ok := byName[n]
	if !ok {
		t.Errorf("no %s in the layer", n)
		return
	}
	if e.hdr.Typeflag != tar.TypeDir {
		t.Errorf("%s: type %c, want a directory", n, e.hdr.Typeflag)
	}
	if got := e.hdr.FileInfo().Mode() &^ fs.ModeDir; got != mode {
		t.Errorf("%s: mode %v, want %v", n, got, mode)
	}
}

func TestBuildDeterministic(t *testing.T) {
	binDir, builtins := fakeInputs(t)
	outDir := t.TempDir()

	for _, b := range builtins {
		t.Run(b.Name, func(t *testing.T) {
			var digests []v1.Hash
			var sums [][32]byte
			for i, out := range []string{"first.tar", "second.tar"} {
				if i > 0 {
					// A new mtime on the input must not change the image.
					later := time.Now().Add(time.Hour)
					if err := os.Chtimes(b.Inputs(binDir)[0], later, later); err != nil {
						t.Fatal(err)
					}
				}
				out = filepath.Join(outDir, b.Name+"-"+out)
				if err := Build(b, binDir, out); err != nil {
					t.Fatal(err)
				}
				img, _ := readImage(t, out, b.Ref)
				d, err := img.Digest()
				if err != nil {
					t.Fatal(err)
				}
				digests = append(digests, d)
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				sums = append(sums, sha256.Sum256(data))
			}
			if digests[0] != digests[1] {
				t.Errorf("two builds gave digests %s and %s", digests[0], digests[1])
			}
			if sums[0] != sums[1] {
				t.Errorf("two builds gave different tarballs")
			}
		})
	}
}

func TestBuildMissingInput(t *testing.T) {
	agnhost, _ := Lookup("agnhost")
	tests := []struct {
		name  string
		image Builtin
		// setup prepares the bin dir and returns the builtin to build.
		setup func(t *testing.T, binDir string, b Builtin) Builtin
		want  []string // substrings of the error; "BINDIR" stands for the bin dir
	}{
		{
			name:  "missing binary",
			image: agnhost,
			setup: func(t *testing.T, binDir string, b Builtin) Builtin {
				return b.WithSource(BusyboxSource, filepath.Join(binDir, "busybox"))
			},
			want: []string{`binary "agnhost" not found`, "bin dir BINDIR", "BINDIR/agnhost"},
		},
		{
			name:  "missing extra binary",
			image: agnhost,
			setup: func(t *testing.T, binDir string, b Builtin) Builtin {
				writeFile(t, filepath.Join(binDir, "agnhost"), "x")
				writeFile(t, filepath.Join(binDir, "busybox"), "x")
				return b.WithSource(BusyboxSource, filepath.Join(binDir, "busybox"))
			},
			want: []string{`binary "coredns" not found`, "bin dir BINDIR", "BINDIR/coredns"},
		},
		{
			name:  "missing busybox",
			image: agnhost,
			setup: func(t *testing.T, binDir string, b Builtin) Builtin {
				writeFile(t, filepath.Join(binDir, "agnhost"), "x")
				writeFile(t, filepath.Join(binDir, "coredns"), "x")
				return b.WithSource(BusyboxSource, filepath.Join(binDir, "no-busybox"))
			},
			want: []string{"BINDIR/no-busybox", "/bin/busybox", "busybox-static", "apt-get install -y busybox-static"},
		},
		{
			name:  "file under a file",
			image: Builtin{Name: "x", Ref: "registry.k8s.io/x:1", Binary: "x", Path: "/x", Entrypoint: []string{"/x"}, Extra: []File{{Path: "/x/y"}}},
			setup: func(t *testing.T, binDir string, b Builtin) Builtin {
				writeFile(t, filepath.Join(binDir, "x"), "x")
				return b
			},
			want: []string{"/x/y: parent /x is not a directory"},
		},
		{
			name:  "binary is a directory",
			image: Builtin{Name: "x", Ref: "registry.k8s.io/x:1", Binary: "x", Path: "/x", Entrypoint: []string{"/x"}},
			setup: func(t *testing.T, binDir string, b Builtin) Builtin {
				if err := os.Mkdir(filepath.Join(binDir, "x"), 0o755); err != nil {
					t.Fatal(err)
				}
				return b
			},
			want: []string{`binary "x"`, "BINDIR/x: not a regular file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			binDir := t.TempDir()
			outDir := t.TempDir()
			b := tt.setup(t, binDir, tt.image).MapFiles(func(f File) File {
				if f.Source != "" && !strings.HasPrefix(f.Source, binDir) {
					f = fakeSources(t, t.TempDir(), Builtin{Extra: []File{f}}).Extra[0]
				}
				return f
			})
			out := filepath.Join(outDir, b.FileName())
			err := Build(b, binDir, out)
			if err == nil {
				t.Fatal("Build succeeded")
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "BINDIR", binDir)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.HasPrefix(tt.name, "missing") && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v is not fs.ErrNotExist", err)
			}
			left, _ := os.ReadDir(outDir)
			if len(left) != 0 {
				t.Errorf("failed build left %v in the out dir", left)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := Builtin{Name: "x", Ref: "registry.k8s.io/x:1", Binary: "x", Path: "/x", Entrypoint: []string{"/x"}}
	tests := []struct {
		name   string
		change func(b *Builtin)
		want   []string // substrings of the error; none means valid
	}{
		{name: "valid", change: func(b *Builtin) {}},
		{
			name: "every problem at once",
			change: func(b *Builtin) {
				*b = Builtin{Name: "a/b", Ref: "x", Binary: "../x", Path: "x"}
			},
			want: []string{`name "a/b"`, "ref", `binary "../x"`, `path: "x" is not absolute`, "entrypoint: empty"},
		},
		{
			name: "extra files only",
			change: func(b *Builtin) {
				b.Binary, b.Path, b.Extra = "", "", []File{{Path: "/x", Content: []byte("x")}}
			},
		},
		{
			name: "binary without path",
			change: func(b *Builtin) {
				b.Path = ""
			},
			want: []string{`path: "" is not absolute`},
		},
		{
			name: "ref without tag",
			change: func(b *Builtin) {
				b.Ref = "registry.k8s.io/x"
			},
			want: []string{"ref"},
		},
		{
			name: "bad extra files",
			change: func(b *Builtin) {
				b.Extra = []File{
					{Path: "/x"},
					{Path: "/"},
					{Path: "/y", Dir: true, Link: "z"},
					{Path: "/z", Mode: fs.ModeDevice},
					{Path: "/w", Binary: "../w"},
				}
			},
			want: []string{`"/x": path given twice`, "root cannot be an entry", "more than one of", "mode", `binary "../w"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := good
			tt.change(&b)
			err := b.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if berr := Build(b, t.TempDir(), filepath.Join(t.TempDir(), "x.tar")); berr == nil {
				t.Error("Build of an invalid builtin succeeded")
			}
		})
	}
}

func TestUpToDate(t *testing.T) {
	binDir, builtins := fakeInputs(t)
	b := builtins[2] // agnhost: binary, coredns, host sources, busybox last
	out := filepath.Join(t.TempDir(), b.FileName())
	inputs := b.Inputs(binDir)
	want := []string{filepath.Join(binDir, "agnhost"), filepath.Join(binDir, "coredns")}
	for _, f := range b.Extra {
		if f.Source != "" {
			want = append(want, f.Source)
		}
	}
	if !slices.Equal(inputs, want) || inputs[len(inputs)-1] != filepath.Join(filepath.Dir(binDir), "busybox") {
		t.Fatalf("Inputs() = %q, want %q ending with busybox", inputs, want)
	}
	// Inputs start old; touching one makes it newer than any output so far.
	setTime := func(t *testing.T, p string, mtime time.Time) {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range inputs {
		setTime(t, in, time.Now().Add(-time.Hour))
	}
	touch := func(p string) func(t *testing.T) {
		return func(t *testing.T) {
			// Newer than the output, whatever clock wrote it.
			later := time.Now()
			if st, err := os.Stat(out); err == nil && !st.ModTime().Before(later) {
				later = st.ModTime().Add(time.Second)
			}
			setTime(t, p, later)
		}
	}
	steps := []struct {
		name  string
		do    func(t *testing.T)
		b     Builtin
		fresh bool
	}{
		{name: "no output yet", do: func(*testing.T) {}, b: b, fresh: false},
		{name: "after build", do: func(t *testing.T) {
			if err := Build(b, binDir, out); err != nil {
				t.Fatal(err)
			}
			settle(t, out, inputs)
		}, b: b, fresh: true},
		{name: "other ref", do: func(*testing.T) {}, b: Builtin{Name: b.Name, Ref: "registry.k8s.io/other:1", Binary: b.Binary, Extra: b.Extra}, fresh: false},
		{name: "other definition", do: func(*testing.T) {}, b: func() Builtin {
			other := b.MapFiles(func(f File) File { return f })
			other.Env = []string{"PATH=/other"}
			return other
		}(), fresh: false},
		{name: "busybox changed", do: touch(inputs[len(inputs)-1]), b: b, fresh: false},
		{name: "rebuilt", do: func(t *testing.T) {
			if err := Build(b, binDir, out); err != nil {
				t.Fatal(err)
			}
			settle(t, out, inputs)
		}, b: b, fresh: true},
		{name: "extra binary changed", do: touch(inputs[1]), b: b, fresh: false},
		{name: "rebuilt again", do: func(t *testing.T) {
			if err := Build(b, binDir, out); err != nil {
				t.Fatal(err)
			}
			settle(t, out, inputs)
		}, b: b, fresh: true},
		{name: "binary changed", do: touch(inputs[0]), b: b, fresh: false},
		{name: "binary gone", do: func(t *testing.T) {
			if err := os.Remove(filepath.Join(binDir, b.Binary)); err != nil {
				t.Fatal(err)
			}
		}, b: b, fresh: false},
	}
	// The steps build on each other, so they run in order in one test.
	for _, s := range steps {
		s.do(t)
		fresh, err := UpToDate(s.b, binDir, out)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if fresh != s.fresh {
			t.Errorf("%s: UpToDate = %v, want %v", s.name, fresh, s.fresh)
		}
	}
}

func TestInspectNotATarball(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.tar")
	writeFile(t, p, "not a tarball")
	if _, err := Inspect(p); err == nil {
		t.Error("Inspect of a non-tarball succeeded")
	}
	if _, err := Inspect(filepath.Join(t.TempDir(), "missing.tar")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Inspect of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestBusyboxApplets(t *testing.T) {
	applets := BusyboxApplets()
	if !slices.IsSorted(applets) || len(slices.Compact(slices.Clone(applets))) != len(applets) {
		t.Errorf("applets not sorted and unique: %q", applets)
	}
	if _, err := os.Stat(BusyboxSource); err != nil {
		t.Skipf("no %s (apt-get install -y %s) to check the applets against: %v", BusyboxSource, BusyboxPackage, err)
	}
	list, err := exec.Command(BusyboxSource, "--list").Output()
	if err != nil {
		t.Fatalf("%s --list: %v", BusyboxSource, err)
	}
	have := map[string]bool{}
	for _, a := range strings.Fields(string(list)) {
		have[a] = true
	}
	for _, a := range applets {
		if !have[a] {
			t.Errorf("applet %q is not in `%s --list`", a, BusyboxSource)
		}
	}
}

// TestBusyboxVersion checks that the busybox image's tag, BUSYBOX_VERSION
// of assets/versions.env, is the version of the host's busybox it is made
// from.
func TestBusyboxVersion(t *testing.T) {
	if _, err := os.Stat(BusyboxSource); err != nil {
		t.Skipf("no %s (apt-get install -y %s) to check the version of: %v", BusyboxSource, BusyboxPackage, err)
	}
	out, _ := exec.Command(BusyboxSource).Output() // without an applet it prints its banner and exits 1
	want := "BusyBox v" + strings.TrimPrefix(BusyboxRef(), "docker.io/library/busybox:") + " "
	if !strings.HasPrefix(string(out), want) {
		first, _, _ := strings.Cut(string(out), "\n")
		t.Errorf("%s says %q, want %q...: set BUSYBOX_VERSION in assets/versions.env", BusyboxSource, first, want)
	}
}

// settle moves out's mtime a second ahead: file times come from the
// kernel's coarse clock, which can lag the fine clock a test's touch used,
// so a file written right after a touch may not look newer.
func settle(t *testing.T, out string, inputs []string) {
	t.Helper()
	later := time.Now()
	for _, in := range inputs {
		if st, err := os.Stat(in); err == nil && !st.ModTime().Before(later) {
			later = st.ModTime()
		}
	}
	later = later.Add(time.Second)
	if err := os.Chtimes(out, later, later); err != nil {
		t.Fatal(err)
	}
}
