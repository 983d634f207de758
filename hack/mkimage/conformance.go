package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubernix/kubernix/pkg/images"
)

// The references of the conformance images: initImageConfigs in
// test/utils/image/manifest.go of k8s.io/kubernetes v1.37.2, the registry
// being the default RegistryList's (PromoterE2eRegistry
// "registry.k8s.io/e2e-test-images", GcEtcdRegistry "registry.k8s.io").
const (
	e2eRegistry        = "registry.k8s.io/e2e-test-images/"
	agnhostPrevRef     = e2eRegistry + "agnhost:2.55"
	busyboxRef         = e2eRegistry + "busybox:1.37.0-2"
	nginxRef           = e2eRegistry + "nginx:1.27.0-2"
	glibcDNSTestingRef = e2eRegistry + "glibc-dns-testing:2.1.1"
	nautilusRef        = e2eRegistry + "nautilus:1.8"
	kittenRef          = e2eRegistry + "kitten:1.8"
	nonewprivsRef      = e2eRegistry + "nonewprivs:1.4"
	sampleAPIServerRef = e2eRegistry + "sample-apiserver:1.29.2"
	etcdRef            = "registry.k8s.io/etcd:3.7.0-0"
)

// conformanceImage is one image of the conformance set: an image that a
// [Conformance] spec of the pinned Kubernetes (v1.37.2) runs and that is
// not a built-in image (pkg/images Builtins), made under its upstream
// reference.
type conformanceImage struct {
	// ID is the image's ImageID in k8s.io/kubernetes/test/utils/image
	// (manifest.go), e.g. "AgnhostPrev"; its Ref is that ID's reference.
	ID string
	images.Builtin
}

// goBinary is a program that mkimage builds with the go command for the
// conformance images: `go build Package` run in the module directory
// Module, CGO disabled, written to the work dir's bin/ as Name.
type goBinary struct {
	// Name is the output's file name.
	Name string
	// Module is the Go module directory to build in, relative to the
	// repository root: "." (kubernix), "bundle" (k8s.io/kubernetes v1.37.2
	// and etcd v3.7.0, as the cluster's binaries) or "test/conformance"
	// (its e2e suite's module graph, which also holds
	// k8s.io/sample-apiserver) or "test/gateway" (the Gateway API
	// conformance suite's).
	Module string
	// Package is the main package's import path or, in ".", its
	// directory.
	Package string
}

// goBinaries are the programs of the conformance images that neither the
// bin dir nor the host has.
var goBinaries = []goBinary{
	// test/images/nonewprivs: prints its effective uid.
	{Name: "nnp", Module: "bundle", Package: "k8s.io/kubernetes/test/images/nonewprivs"},
	// etcd's own main package (etcdmain.Main), the version the cluster runs.
	{Name: "etcd", Module: "bundle", Package: "go.etcd.io/etcd/server/v3"},
	// The Aggregator spec's wardle API server.
	{Name: "sample-apiserver", Module: "test/conformance", Package: "k8s.io/sample-apiserver"},
	// The busybox image's /bin/sh.
	{Name: "envsh", Module: ".", Package: "./images/envsh"},
	// The Gateway API conformance suite's backend (the gateway set).
	{Name: "echo-basic", Module: "test/gateway", Package: "sigs.k8s.io/gateway-api/conformance/echo-basic"},
}

// debPackages are the Debian packages whose files conformance images
// take without the host having them installed: mkimage fetches each with
// `apt-get download` and unpacks it with `dpkg-deb -x` into the work
// dir's deb/<name>/. Installing nginx would start a server on the host.
var debPackages = []string{"nginx"}

// conformanceImages returns the conformance set, in a fixed order, made
// from the work dir workDir (goBinaries in bin/, debPackages under deb/).
// Images derived from agnhost and busybox take their content from the
// built-in ones; Sources under images.KubernetesModule read from the
// Kubernetes module's source tree (Builtin.WithKubernetesDir).
func conformanceImages(workDir string) []conformanceImage {
	goBin := func(name string) string { return filepath.Join(workDir, "bin", name) }
	html := func(image, file string) string {
		return images.KubernetesModule + "/test/images/" + image + "/html/" + file
	}
	return []conformanceImage{
		{ID: "AgnhostPrev", Builtin: agnhostPrev()},
		{ID: "BusyBox", Builtin: busybox(goBin("envsh"))},
		{ID: "Nginx", Builtin: nginx(filepath.Join(workDir, "deb", "nginx"))},
		{ID: "GlibcDnsTesting", Builtin: glibcDNSTesting()},
		{ID: "Nautilus", Builtin: updateDemo("nautilus", nautilusRef, []images.File{
			{Path: "/nautilus.jpg", Mode: 0o644, Source: html("nautilus", "nautilus.jpg")},
			{Path: "/data.json", Mode: 0o644, Source: html("nautilus", "data.json")},
		})},
		{ID: "Kitten", Builtin: updateDemo("kitten", kittenRef, []images.File{
			{Path: "/kitten.jpg", Mode: 0o644, Source: html("kitten", "kitten.jpg")},
			{Path: "/data.json", Mode: 0o644, Source: html("kitten", "data.json")},
			// The ImageVolume spec mounts kitten and reads its
			// /etc/os-release, expecting "Alpine Linux": upstream's
			// base is agnhost, which is alpine.
			{Path: "/etc/os-release", Mode: 0o644, Content: []byte(alpineOSRelease)},
		})},
		{ID: "Nonewprivs", Builtin: images.Builtin{
			// Upstream: alpine with nnp in /usr/local/bin, chmod +s, CMD
			// nnp. The AllowPrivilegeEscalation specs run it as uid 1000
			// and read the effective uid it prints: 0 through the setuid
			// bit, unless no_new_privs is set.
			Name:       "nonewprivs",
			Ref:        nonewprivsRef,
			Entrypoint: []string{"/usr/local/bin/nnp"},
			Extra: []images.File{
				{Path: "/usr/local/bin/nnp", Source: goBin("nnp"), Mode: 0o755 | fs.ModeSetuid | fs.ModeSetgid},
			},
		}},
		{ID: "APIServer", Builtin: images.Builtin{
			// Upstream: k8s.io/sample-apiserver's main at /sample-apiserver.
			Name:       "sample-apiserver",
			Ref:        sampleAPIServerRef,
			Entrypoint: []string{"/sample-apiserver"},
			Extra: []images.File{
				{Path: "/sample-apiserver", Source: goBin("sample-apiserver")},
				{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
			},
		}},
		{ID: "Etcd", Builtin: images.Builtin{
			// The Aggregator spec runs /usr/local/bin/etcd beside the
			// sample-apiserver; its data dir is ./default.etcd, in the
			// working directory /.
			Name:       "etcd",
			Ref:        etcdRef,
			Entrypoint: []string{"/usr/local/bin/etcd"},
			Extra: []images.File{
				{Path: "/usr/local/bin/etcd", Source: goBin("etcd")},
				{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
			},
		}},
	}
}

// alpineOSRelease is the /etc/os-release of the kitten image: the fields of
// upstream's alpine base, with a comment saying what this image is.
const alpineOSRelease = `# kubernix's stand-in for the Alpine Linux based upstream image
NAME="Alpine Linux"
ID=alpine
PRETTY_NAME="Alpine Linux (kubernix conformance image)"
HOME_URL="https://alpinelinux.org/"
`

// builtin returns the built-in image called name (pkg/images Builtins).
func builtin(name string) images.Builtin {
	b, ok := images.Lookup(name)
	if !ok {
		panic("mkimage: pkg/images has no built-in image " + name)
	}
	return b
}

// agnhostPrev is agnhost under the tag of the previous agnhost release
// (AgnhostPrev): the rolling-update specs switch a workload between it and
// agnhost, so it must be a distinct image. It holds the built-in agnhost's
// files plus /etc/kubernix-image naming its tag, which gives it a digest of
// its own.
func agnhostPrev() images.Builtin {
	b := builtin("agnhost")
	b.Name = "agnhost-prev"
	b.Ref = agnhostPrevRef
	return overlay(b, []images.File{{Path: "/etc/kubernix-image", Mode: 0o644, Content: []byte(agnhostPrevRef + "\n")}})
}

// updateDemo returns an image like upstream's nautilus and kitten, which
// add files to agnhost and run its test-webserver, serving the files under
// / on port 80. It holds the agnhost binary and the files alone: the specs
// only fetch the files (Update Demo, through the pod proxy) or read them
// (ImageVolume), and so the image stays a third of agnhost's size.
func updateDemo(name, ref string, files []images.File) images.Builtin {
	return images.Builtin{
		Name:       name,
		Ref:        ref,
		Binary:     "agnhost",
		Path:       "/agnhost",
		Entrypoint: []string{"/agnhost"},
		Cmd:        []string{"test-webserver"},
		Extra:      files,
	}
}

// defaultPath is the PATH of upstream's busybox, nginx and Debian based
// images, the same as alpine's.
const defaultPath = images.AgnhostPath

// busyboxApplets are the applets the conformance specs run in busybox
// beyond images.BusyboxApplets, all in Debian's busybox-static 1.35.
var busyboxApplets = []string{"ash", "hexdump", "od", "sysctl", "nproc", "usleep", "xxd", "mktemp", "yes"}

// builtinBusybox returns the built-in busybox image (busybox's files and
// applet links, root and nobody, /root and /tmp), the base of the
// conformance busybox, nginx and glibc-dns-testing, with the applets of
// busyboxApplets added.
func builtinBusybox() images.Builtin {
	b := builtin("busybox")
	b.Env = []string{"PATH=" + defaultPath}
	var applets []images.File
	for _, a := range busyboxApplets {
		applets = append(applets, images.File{Path: "/bin/" + a, Link: "busybox"})
	}
	return overlay(b, applets)
}

// busybox is upstream's busybox 1.37 image as the specs use it: busybox's
// applets, /bin/sh being envsh (images/envsh, built at envshPath), which
// runs busybox's ash, or zsh where ash would drop environment variables;
// coreutils' printenv, which Debian's busybox lacks; and GNU wget, which
// the PreStop spec's hook runs (`wget -O- --post-data=...`), as busybox's
// static wget crashes resolving a host name without glibc's NSS modules.
func busybox(envshPath string) images.Builtin {
	b := builtinBusybox()
	b.Name = "busybox"
	b.Ref = busyboxRef
	return overlay(b, []images.File{
		{Path: "/bin/sh", Source: envshPath},
		{Path: "/bin/zsh", Source: "/bin/zsh", Package: "zsh", Libraries: true},
		{Path: "/bin/printenv", Source: "/usr/bin/printenv", Package: "coreutils", Libraries: true},
		{Path: "/bin/wget", Source: "/usr/bin/wget", Package: "wget", Libraries: true},
	})
}

// glibcDNSTesting is upstream's glibc-dns-testing (Debian with dnsutils)
// as the DNS specs use it: their probe script, run by sh, resolves with
// dig and getent, both glibc programs here too, taken from the host's
// Debian packages; busybox provides the shell and the rest.
func glibcDNSTesting() images.Builtin {
	b := builtinBusybox()
	b.Name = "glibc-dns-testing"
	b.Ref = glibcDNSTestingRef
	return overlay(b, []images.File{
		{Path: "/usr/bin/dig", Source: "/usr/bin/dig", Package: "bind9-dnsutils", Libraries: true},
		{Path: "/usr/bin/getent", Source: "/usr/bin/getent", Package: "libc-bin", Libraries: true},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Content: []byte("hosts: files dns\n")},
	})
}

// nginx is upstream's nginx image (nginx 1.27 on alpine, serving
// /usr/share/nginx/html on port 80) made of Debian's nginx binary, unpacked
// under debRoot, with a configuration of its own, and busybox for the
// commands the specs run in it.
func nginx(debRoot string) images.Builtin {
	b := builtinBusybox()
	b.Name = "nginx"
	b.Ref = nginxRef
	b.Entrypoint = []string{"/usr/sbin/nginx"}
	b.Cmd = []string{"-g", "daemon off;"}
	return overlay(b, []images.File{
		{Path: "/usr/sbin/nginx", Source: filepath.Join(debRoot, "usr", "sbin", "nginx"), Libraries: true},
		{Path: "/etc/nginx/nginx.conf", Mode: 0o644, Content: []byte(nginxConf)},
		{Path: "/usr/share/nginx/html/index.html", Mode: 0o644, Content: []byte(nginxIndex)},
		// Debian's build keeps request bodies and proxy buffers here.
		{Path: "/var/lib/nginx", Dir: true},
		{Path: "/var/log/nginx", Dir: true},
		{Path: "/run", Dir: true},
	})
}

// nginxConf serves /usr/share/nginx/html on port 80 and logs to the
// container's output, as upstream's image does.
const nginxConf = `# kubernix: nginx of the conformance image registry.k8s.io/e2e-test-images/nginx
worker_processes 1;
error_log stderr notice;
pid /run/nginx.pid;
events {
	worker_connections 1024;
}
http {
	types {
		text/html html htm;
		application/json json;
		image/jpeg jpeg jpg;
	}
	default_type application/octet-stream;
	access_log /dev/stdout;
	server {
		listen 80;
		root /usr/share/nginx/html;
		index index.html;
	}
}
`

// nginxIndex is the start of upstream's default page.
const nginxIndex = `<!DOCTYPE html>
<html>
<head><title>Welcome to nginx!</title></head>
<body><h1>Welcome to nginx!</h1></body>
</html>
`

// overlay returns b with files added to its Extra; each replaces the
// entry of b with the same path, if any.
func overlay(b images.Builtin, files []images.File) images.Builtin {
	b = b.MapFiles(func(f images.File) images.File { return f }) // a copy
	for _, f := range files {
		i := slices.IndexFunc(b.Extra, func(e images.File) bool { return path.Clean(e.Path) == path.Clean(f.Path) })
		if i >= 0 {
			b.Extra[i] = f
			continue
		}
		b.Extra = append(b.Extra, f)
	}
	return b
}

// conformanceBuiltins returns the Builtin of each image.
func conformanceBuiltins(set []conformanceImage) []images.Builtin {
	out := make([]images.Builtin, 0, len(set))
	for _, c := range set {
		out = append(out, c.Builtin)
	}
	return out
}

// prepare makes what the images read from the work dir workDir: it
// builds their goBinaries (those of the Kubernetes tree in module, when
// given: inModule) and fetches their debPackages.
func prepare(ctx context.Context, bs []images.Builtin, binDir, workDir, module string) error {
	for _, g := range goBinariesFor(bs, binDir, workDir) {
		if err := buildGo(ctx, inModule(g, module), filepath.Join(workDir, "bin")); err != nil {
			return err
		}
	}
	for _, pkg := range debPackagesFor(bs, binDir, workDir) {
		if err := fetchDeb(ctx, pkg, filepath.Join(workDir, "deb")); err != nil {
			return err
		}
	}
	return nil
}

// inModule is g built in module instead (a release's module, whose
// go.mod pins that release's Kubernetes tree and etcd) when module is set
// and g is a program of the Kubernetes tree (built in bundle or
// test/conformance); else g.
func inModule(g goBinary, module string) goBinary {
	if module != "" && (g.Module == "bundle" || g.Module == "test/conformance") {
		g.Module = module
	}
	return g
}

// goBinariesFor returns the goBinaries that the images read from the work
// dir, in the order of goBinaries.
func goBinariesFor(bs []images.Builtin, binDir, workDir string) []goBinary {
	var need []goBinary
	for _, g := range goBinaries {
		if reads(bs, binDir, func(in string) bool { return in == filepath.Join(workDir, "bin", g.Name) }) {
			need = append(need, g)
		}
	}
	return need
}

// debPackagesFor returns the debPackages that the images read from the
// work dir, in the order of debPackages.
func debPackagesFor(bs []images.Builtin, binDir, workDir string) []string {
	var need []string
	for _, pkg := range debPackages {
		root := filepath.Join(workDir, "deb", pkg) + string(filepath.Separator)
		if reads(bs, binDir, func(in string) bool { return strings.HasPrefix(in, root) }) {
			need = append(need, pkg)
		}
	}
	return need
}

// reads reports whether one of the images has an input (Builtin.Inputs)
// that match accepts.
func reads(bs []images.Builtin, binDir string, match func(string) bool) bool {
	for _, b := range bs {
		if slices.ContainsFunc(b.Inputs(binDir), match) {
			return true
		}
	}
	return false
}

// buildGo builds g into dir with the go command, statically (CGO
// disabled) and stripped. The output is replaced only when its content
// changes, so that images built from it stay up to date across runs. The
// error carries the command line and its output.
func buildGo(ctx context.Context, g goBinary, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("go build %s: %w", g.Name, err)
	}
	out, err := filepath.Abs(filepath.Join(dir, g.Name))
	if err != nil {
		return fmt.Errorf("go build %s: %w", g.Name, err)
	}
	tmp := out + ".new"
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, g.Package)
	cmd.Dir = g.Module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if err := runCmd(cmd); err != nil {
		os.Remove(tmp)
		return err
	}
	same, err := sameContent(tmp, out)
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go build %s: %w", g.Name, err)
	}
	if same {
		return os.Remove(tmp)
	}
	return os.Rename(tmp, out)
}

// fetchDeb unpacks the Debian package pkg (the candidate version of the
// host's apt sources) into dir/pkg, unless it is there: it downloads the
// .deb with `apt-get download` and unpacks it with `dpkg-deb -x`, which
// runs none of its scripts. The error carries the failed command line and
// its output.
func fetchDeb(ctx context.Context, pkg, dir string) error {
	dest := filepath.Join(dir, pkg)
	if _, err := os.Stat(dest); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fetch Debian package %s: %w", pkg, err)
	}
	tmp, err := os.MkdirTemp(dir, "."+pkg+"-")
	if err != nil {
		return fmt.Errorf("fetch Debian package %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	if err := runIn(ctx, tmp, "apt-get", "download", pkg); err != nil {
		return err
	}
	debs, err := filepath.Glob(filepath.Join(tmp, pkg+"_*.deb"))
	if err != nil || len(debs) != 1 {
		return fmt.Errorf("fetch Debian package %s: apt-get download left %d .deb files in %s, want 1 (%v)", pkg, len(debs), tmp, err)
	}
	if err := runIn(ctx, tmp, "dpkg-deb", "-x", filepath.Base(debs[0]), "root"); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(tmp, "root"), dest); err != nil {
		return fmt.Errorf("fetch Debian package %s: %w", pkg, err)
	}
	return nil
}

// runIn runs a command in dir, as runCmd.
func runIn(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return runCmd(cmd)
}

// runCmd runs cmd; the error carries its command line, directory and
// output.
func runCmd(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return cmdError(cmd, err, out.Bytes())
	}
	return nil
}

// output runs cmd and returns its standard output; the error carries its
// command line, directory and standard error.
func output(cmd *exec.Cmd) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, cmdError(cmd, err, stderr.Bytes())
	}
	return out, nil
}

// cmdError is err of the command cmd that printed out (on a line of its
// own, if any).
func cmdError(cmd *exec.Cmd, err error, out []byte) error {
	err = fmt.Errorf("%s (in %s): %w", strings.Join(cmd.Args, " "), cmd.Dir, err)
	if out = bytes.TrimSpace(out); len(out) > 0 {
		err = fmt.Errorf("%w\n%s", err, out)
	}
	return err
}

// sameContent reports whether the files a and b hold the same bytes; a
// missing b is not the same.
func sameContent(a, b string) (bool, error) {
	bData, err := os.ReadFile(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	aData, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	return bytes.Equal(aData, bData), nil
}
