// Package images builds kubernix's built-in container images offline.
//
// No registry is reachable from a kubernix cluster, so the images that the
// components ask for by their upstream names (the pod sandbox "pause" image,
// CoreDNS, the e2e test image agnhost, and metrics-server) are made locally: each is one
// layer holding a static binary from the bin dir, plus a few extra files,
// packed with go-containerregistry as a docker-archive tarball tagged with the
// upstream reference. containerd imports such a tarball under that name.
//
// Builds are deterministic: the same inputs give the same image digest.
package images

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/release"
)

// BusyboxSource is where Debian's busybox-static package installs the static
// busybox binary that the agnhost image carries as /bin/busybox.
const BusyboxSource = "/bin/busybox"

// BusyboxPackage is the Debian package that provides BusyboxSource.
const BusyboxPackage = "busybox-static"

// Builtin describes one built-in image: a static binary from the bin dir
// placed at Path, plus Extra files. An image without Binary and Path is
// made of its Extra files only (busybox).
type Builtin struct {
	// Name is the short name, e.g. "pause"; it names the tarball (FileName).
	Name string
	// Ref is the fully qualified reference the image is tagged with, e.g.
	// "registry.k8s.io/pause:3.10.2".
	Ref string
	// Binary is the file name of the static binary in the bin dir; empty
	// with Path for an image of Extra files only.
	Binary string
	// Path is where the binary goes in the image, e.g. "/pause".
	Path string
	// Entrypoint is the image config's entrypoint.
	Entrypoint []string
	// Cmd is the image config's default arguments to Entrypoint.
	Cmd []string
	// Extra lists more files, directories and symlinks for the image.
	Extra []File
	// Env is the image config's environment, "NAME=value" each; empty
	// means PATH=/bin alone.
	Env []string
}

// File is one extra entry in an image's layer. At most one of Dir, Link,
// Binary, Source or Content says what it is; with none of them set it is an
// empty regular file.
type File struct {
	// Path is the absolute path in the image.
	Path string
	// Dir makes the entry a directory.
	Dir bool
	// Link makes the entry a symlink pointing at Link.
	Link string
	// Binary is the file name of a static binary in the bin dir that the
	// regular file gets, like Builtin.Binary.
	Binary string
	// Source is the host path whose content the regular file gets. A
	// missing Source fails the build; the error names Package if set.
	Source string
	// Package is the Debian package that installs Source, for the error
	// message when Source is missing.
	Package string
	// Libraries, with Source, also puts into the image what Source needs
	// to run when it is a dynamically linked executable: its program
	// interpreter and shared libraries (SharedLibraries), each at its
	// host path, unless the image lists that path itself.
	Libraries bool
	// Content is the content of a regular file without Binary or Source.
	Content []byte
	// Mode is the permission bits, with fs.ModeSticky, fs.ModeSetuid and
	// fs.ModeSetgid allowed; 0 means 0755 for files and directories.
	// Symlinks are always 0777.
	Mode fs.FileMode
}

// PauseRef is the reference of the pod sandbox image, the default
// release's SandboxImage (release.Release), e.g.
// "registry.k8s.io/pause:3.10.2". containerd pins it as its sandbox image.
func PauseRef() string { return release.Default().SandboxImage }

// CoreDNSRef is the reference of the CoreDNS image under kubeadm's name for
// it, tagged with COREDNS_VERSION of assets/versions.env (the version the
// Makefile builds), e.g. "registry.k8s.io/coredns/coredns:v1.14.6". The
// CoreDNS addon's Deployment asks for it.
func CoreDNSRef() string {
	return "registry.k8s.io/coredns/coredns:" + assets.Version("COREDNS_VERSION")
}

// MetricsServerRef is the reference of the metrics-server image under its
// upstream name (registry.k8s.io/metrics-server/metrics-server, as in the
// release's components.yaml), tagged with METRICS_SERVER_VERSION of
// assets/versions.env (the version the Makefile builds), e.g.
// "registry.k8s.io/metrics-server/metrics-server:v0.8.0". The
// metrics-server addon's Deployment asks for it.
func MetricsServerRef() string {
	return "registry.k8s.io/metrics-server/metrics-server:" + assets.Version("METRICS_SERVER_VERSION")
}

// AgnhostRef is the reference of the e2e test image agnhost, tagged with
// AGNHOST_VERSION of assets/versions.env (test/images/agnhost/VERSION in the
// pinned Kubernetes), e.g. "registry.k8s.io/e2e-test-images/agnhost:2.66.1".
func AgnhostRef() string {
	return "registry.k8s.io/e2e-test-images/agnhost:" + assets.Version("AGNHOST_VERSION")
}

// LocalPathProvisionerRef is the reference of the local-path-storage
// addon's provisioner image under Rancher's name for it, tagged with
// LOCAL_PATH_PROVISIONER_VERSION of assets/versions.env (the version the
// Makefile builds), e.g. "docker.io/rancher/local-path-provisioner:v0.0.30".
func LocalPathProvisionerRef() string {
	return "docker.io/rancher/local-path-provisioner:" + assets.Version("LOCAL_PATH_PROVISIONER_VERSION")
}

// BusyboxRef is the reference of the built-in busybox image (the
// local-path-storage addon's helper pods run its shell), tagged with
// BUSYBOX_VERSION of assets/versions.env (the version of Debian's
// busybox-static), e.g. "docker.io/library/busybox:1.35.0".
func BusyboxRef() string { return "docker.io/library/busybox:" + assets.Version("BUSYBOX_VERSION") }

// TraefikRef is the reference of the ingress addon's traefik image under
// its Docker Official Image name, tagged with TRAEFIK_VERSION of
// assets/versions.env (the version the Makefile builds), e.g.
// "docker.io/library/traefik:v3.7.13".
func TraefikRef() string { return "docker.io/library/traefik:" + assets.Version("TRAEFIK_VERSION") }

// Builtins returns the built-in images, in a fixed order: pause, coredns,
// agnhost, local-path-provisioner, busybox, metrics-server, traefik. The
// slice is new on every call; callers may change it.
func Builtins() []Builtin {
	return []Builtin{
		{
			Name:       "pause",
			Ref:        PauseRef(),
			Binary:     "pause",
			Path:       "/pause",
			Entrypoint: []string{"/pause"},
		},
		{
			Name:       "coredns",
			Ref:        CoreDNSRef(),
			Binary:     "coredns",
			Path:       "/coredns",
			Entrypoint: []string{"/coredns"},
		},
		{
			// Upstream is alpine based and the e2e tests exec shell tools
			// in it: Debian's (AgnhostTools), and busybox for the rest.
			// Like upstream it runs "agnhost pause" by default.
			Name:       "agnhost",
			Ref:        AgnhostRef(),
			Binary:     "agnhost",
			Path:       "/agnhost",
			Entrypoint: []string{"/agnhost"},
			Cmd:        []string{"pause"},
			Extra:      agnhostExtra(),
			Env:        []string{"PATH=" + AgnhostPath},
		},
		{
			// Upstream puts it in /usr/bin of an alpine image; nothing
			// else of alpine is used.
			Name:       "local-path-provisioner",
			Ref:        LocalPathProvisionerRef(),
			Binary:     "local-path-provisioner",
			Path:       "/usr/bin/local-path-provisioner",
			Entrypoint: []string{"/usr/bin/local-path-provisioner"},
		},
		{
			// Like upstream busybox it runs sh by default.
			Name:       "busybox",
			Ref:        BusyboxRef(),
			Entrypoint: []string{"/bin/sh"},
			Extra:      busyboxFiles(busyboxUsers),
		},
		{
			// Upstream's is distroless: the binary alone, no shell.
			Name:       "metrics-server",
			Ref:        MetricsServerRef(),
			Binary:     "metrics-server",
			Path:       "/metrics-server",
			Entrypoint: []string{"/metrics-server"},
		},
		{
			// Upstream's has traefik at /usr/local/bin/traefik on alpine
			// (run through an entrypoint script that passes flags to
			// it); the binary alone here, run directly.
			Name:       "traefik",
			Ref:        TraefikRef(),
			Binary:     "traefik",
			Path:       "/usr/local/bin/traefik",
			Entrypoint: []string{"/usr/local/bin/traefik"},
		},
	}
}

// Lookup returns the built-in image with the given short name.
func Lookup(name string) (Builtin, bool) {
	for _, b := range Builtins() {
		if b.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}

// BusyboxApplets returns the applets the agnhost and busybox images link
// to /bin/busybox. Each is in `busybox --list` of Debian bookworm's
// busybox-static 1.35. wget is left out: that static build crashes
// (SIGSEGV) resolving a URL's host without glibc's NSS modules, which no
// scratch image has; use nc, or agnhost's own clients.
func BusyboxApplets() []string {
	return []string{
		"awk", "base64", "basename", "cat", "chmod", "chown", "cp", "cut",
		"date", "dd", "df", "dirname", "du", "echo", "env", "expr", "false",
		"find", "grep", "gunzip", "gzip", "head", "hostname", "id", "ifconfig",
		"ip", "kill", "less", "ln", "ls", "md5sum", "mkdir", "mkfifo", "mount",
		"mv", "nc", "netstat", "nslookup", "ping", "printf", "ps", "pwd",
		"readlink", "realpath", "rm", "rmdir", "route", "sed", "seq", "sh",
		"sha256sum", "sleep", "sort", "stat", "sync", "tail", "tar", "tee",
		"test", "timeout", "top", "touch", "tr", "traceroute", "true", "umount",
		"uname", "uniq", "vi", "wc", "which", "whoami", "xargs", "zcat",
	}
}

// KubernetesModule is the prefix of the Sources read from the source tree
// of the pinned Kubernetes module, e.g. KubernetesModule +
// "/test/images/agnhost/porter/localhost.crt". WithKubernetesDir replaces
// it with that tree's directory (`go list -m -f '{{.Dir}}'
// k8s.io/kubernetes` in bundle/, as mkimage does).
const KubernetesModule = "k8s.io/kubernetes"

// WithKubernetesDir returns a copy of b whose Sources under
// KubernetesModule read from dir instead.
func (b Builtin) WithKubernetesDir(dir string) Builtin {
	return b.MapFiles(func(f File) File {
		if rest, ok := strings.CutPrefix(f.Source, KubernetesModule+"/"); ok {
			f.Source = filepath.Join(dir, rest)
		}
		return f
	})
}

// AgnhostPath is the agnhost image's PATH, alpine's default, as in
// upstream's image (test/images/agnhost/Dockerfile is FROM alpine).
const AgnhostPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// AgnhostTools are the programs of upstream's agnhost image (alpine's
// bind-tools, curl, netcat-openbsd, iproute2, bash and socat) that the e2e
// specs run, taken from the host's Debian packages with their shared
// libraries: image path, host path, package. /bin/sh is zsh: unlike
// Debian's busybox ash it runs the tools it finds on PATH rather than its
// own applets, and unlike bash and dash it passes on environment variables
// whose names are not shell names (e.g. "data-1", from a ConfigMap), as
// alpine's ash does.
func AgnhostTools() []File {
	tool := func(image, host, pkg string) File {
		return File{Path: image, Source: host, Package: pkg, Libraries: true}
	}
	return []File{
		tool("/bin/zsh", "/bin/zsh", "zsh"),
		{Path: "/bin/sh", Link: "zsh"},
		tool("/bin/bash", "/bin/bash", "bash"),
		tool("/usr/bin/dig", "/usr/bin/dig", "bind9-dnsutils"),
		tool("/usr/bin/nslookup", "/usr/bin/nslookup", "bind9-dnsutils"),
		tool("/usr/bin/host", "/usr/bin/host", "bind9-host"),
		tool("/usr/bin/curl", "/usr/bin/curl", "curl"),
		tool("/usr/bin/nc", "/bin/nc.openbsd", "netcat-openbsd"),
		tool("/usr/bin/socat", "/usr/bin/socat", "socat"),
		tool("/sbin/ip", "/bin/ip", "iproute2"),
		tool("/usr/bin/getent", "/usr/bin/getent", "libc-bin"),
	}
}

// agnhostExtra is what the e2e tests expect in agnhost besides the agnhost
// binary: /agnhost-2, which the entrypoint tests run to tell an overridden
// entrypoint apart; /coredns, which the DNS tests run as a server;
// /uploads for netexec; /localhost.crt and /localhost.key, the TLS pair
// of netexec and porter (from test/images/agnhost/porter, as upstream
// adds them); the users and groups upstream's image defines; the tools
// (AgnhostTools); and busybox's files (busyboxFiles) for the rest of the
// shell commands, less the applets the tools replace.
func agnhostExtra() []File {
	porter := KubernetesModule + "/test/images/agnhost/porter/"
	files := []File{
		{Path: "/agnhost-2", Link: "agnhost"},
		{Path: "/coredns", Binary: "coredns"},
		{Path: "/uploads", Dir: true},
		{Path: "/localhost.crt", Source: porter + "localhost.crt", Mode: 0o644},
		{Path: "/localhost.key", Source: porter + "localhost.key", Mode: 0o644},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Content: []byte("hosts: files dns\n")},
	}
	tools := AgnhostTools()
	shadowed := map[string]bool{}
	for _, t := range tools {
		shadowed[path.Base(t.Path)] = true
	}
	files = append(files, tools...)
	for _, f := range busyboxFiles(agnhostUsers) {
		if path.Dir(f.Path) == "/bin" && f.Link == "busybox" && shadowed[path.Base(f.Path)] {
			continue
		}
		files = append(files, f)
	}
	return files
}

// users are an image's /etc/passwd and /etc/group.
type users struct{ passwd, group string }

// busyboxUsers are root and nobody.
var busyboxUsers = users{
	passwd: "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
	group: "root:x:0:\n" +
		"nogroup:x:65534:\n",
}

// agnhostUsers adds those upstream's agnhost image makes with adduser and
// addgroup: user-defined-in-image (uid 1000) in group-defined-in-image
// (gid 50000).
var agnhostUsers = users{
	passwd: busyboxUsers.passwd +
		"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n",
	group: busyboxUsers.group +
		"user-defined-in-image:x:1000:\n" +
		"group-defined-in-image:x:50000:user-defined-in-image\n",
}

// busyboxFiles are /bin/busybox (from BusyboxSource) with its applet links
// (BusyboxApplets), the passwd and group files of u that tools like id and
// whoami read, /root and /tmp.
func busyboxFiles(u users) []File {
	files := []File{
		{Path: "/bin/busybox", Source: BusyboxSource, Package: BusyboxPackage},
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte(u.passwd)},
		{Path: "/etc/group", Mode: 0o644, Content: []byte(u.group)},
		{Path: "/root", Dir: true, Mode: 0o700},
		{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
	}
	for _, applet := range BusyboxApplets() {
		files = append(files, File{Path: "/bin/" + applet, Link: "busybox"})
	}
	return files
}

// FileName returns the name of the image's tarball, e.g. "pause.tar".
func (b Builtin) FileName() string {
	return b.Name + ".tar"
}

// Tag returns Ref parsed as a fully qualified tag. It fails if Ref lacks a
// registry or a tag.
func (b Builtin) Tag() (name.Tag, error) {
	tag, err := name.NewTag(b.Ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image %q: ref: %w", b.Name, err)
	}
	return tag, nil
}

// Inputs returns the host files the image is built from: the binary in binDir
// (if any), then every Extra Binary (in binDir) or Source, in order.
func (b Builtin) Inputs(binDir string) []string {
	var inputs []string
	if b.Binary != "" {
		inputs = append(inputs, filepath.Join(binDir, b.Binary))
	}
	for _, f := range b.Extra {
		switch {
		case f.Binary != "":
			inputs = append(inputs, filepath.Join(binDir, f.Binary))
		case f.Source != "":
			inputs = append(inputs, f.Source)
		}
	}
	return inputs
}

// WithSource returns a copy of b whose Extra files read from newSource where
// they read from oldSource, e.g. to take busybox from somewhere other than
// BusyboxSource.
func (b Builtin) WithSource(oldSource, newSource string) Builtin {
	return b.MapFiles(func(f File) File {
		if f.Source == oldSource {
			f.Source = newSource
		}
		return f
	})
}

// MapFiles returns a copy of b whose Extra files are fn of b's, e.g. to
// read the sources from elsewhere.
func (b Builtin) MapFiles(fn func(File) File) Builtin {
	b.Extra = slices.Clone(b.Extra)
	for i := range b.Extra {
		b.Extra[i] = fn(b.Extra[i])
	}
	b.Entrypoint = slices.Clone(b.Entrypoint)
	b.Cmd = slices.Clone(b.Cmd)
	b.Env = slices.Clone(b.Env)
	return b
}

// Validate reports every problem with b at once, joined.
func (b Builtin) Validate() error {
	var errs []error
	if b.Name == "" || path.Base(b.Name) != b.Name || b.Name == "." || b.Name == ".." {
		errs = append(errs, fmt.Errorf("name %q: must be a plain file name", b.Name))
	}
	if _, err := b.Tag(); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	if b.Binary != "" || b.Path != "" {
		if err := checkBinary(b.Binary); err != nil {
			errs = append(errs, err)
		}
		if err := checkImagePath(b.Path); err != nil {
			errs = append(errs, fmt.Errorf("path: %w", err))
		}
		seen[path.Clean(b.Path)] = true
	}
	if len(b.Entrypoint) == 0 {
		errs = append(errs, errors.New("entrypoint: empty"))
	}
	for _, f := range b.Extra {
		if err := f.validate(); err != nil {
			errs = append(errs, fmt.Errorf("extra file %q: %w", f.Path, err))
			continue
		}
		p := path.Clean(f.Path)
		if seen[p] {
			errs = append(errs, fmt.Errorf("extra file %q: path given twice", f.Path))
		}
		seen[p] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid builtin image %q: %w", b.Name, err)
	}
	return nil
}

func (f File) validate() error {
	if err := checkImagePath(f.Path); err != nil {
		return err
	}
	kinds := 0
	for _, set := range []bool{f.Dir, f.Link != "", f.Binary != "", f.Source != "", f.Content != nil} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return errors.New("more than one of Dir, Link, Binary, Source and Content set")
	}
	if f.Binary != "" {
		if err := checkBinary(f.Binary); err != nil {
			return err
		}
	}
	if f.Libraries && f.Source == "" {
		return errors.New("Libraries without Source")
	}
	if f.Mode&^(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid) != 0 {
		return fmt.Errorf("mode %v: only permission, sticky, setuid and setgid bits allowed", f.Mode)
	}
	return nil
}

func checkBinary(name string) error {
	if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
		return fmt.Errorf("binary %q: must be a file name in the bin dir", name)
	}
	return nil
}

func checkImagePath(p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("%q is not absolute", p)
	}
	if path.Clean(p) == "/" {
		return errors.New("the root cannot be an entry")
	}
	return nil
}
