package containerd

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/pelletier/go-toml/v2"

	"github.com/kubernix/kubernix/assets"
)

// Snapshotters containerd has built in that Config.Snapshotter may name.
const (
	// SnapshotterOverlayfs is the default: overlay mounts, which also work
	// inside a user namespace on this kernel.
	SnapshotterOverlayfs = "overlayfs"
	// SnapshotterNative copies each layer; slow, for file systems without
	// overlay support.
	SnapshotterNative = "native"
)

// RuncShim is the runtime_type of every runtime kubernix configures: the
// runc v2 shim, which runs any runc-compatible OCI runtime (runc, crun) named
// by its BinaryName option.
const RuncShim = "io.containerd.runc.v2"

// runtimeName is what a runtime's name may be: it becomes a TOML table key
// and a RuntimeClass handler.
var runtimeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Config is what a node's containerd config.toml says. Every path is
// absolute. The sockets' paths must stay below 108 bytes (sun_path).
type Config struct {
	// Root is containerd's persistent data dir (images, snapshots).
	Root string
	// State is containerd's transient state dir.
	State string
	// Address is the gRPC (and CRI) socket.
	Address string
	// TTRPCAddress is the ttrpc socket the shims call back on.
	TTRPCAddress string
	// SandboxImage is the pod sandbox image, e.g.
	// "registry.k8s.io/pause:3.10.2" (pinned_images.sandbox).
	SandboxImage string
	// Runtime names the default runtime, e.g. "runc" or "crun".
	Runtime string
	// RuntimeBinary is the OCI runtime the runc v2 shim runs for Runtime
	// (its BinaryName option), e.g. "/usr/sbin/runc".
	RuntimeBinary string
	// RuntimeRoot is the OCI runtime's state dir (its --root, the Root
	// option); "" leaves the shim's default, /run/containerd/runc.
	RuntimeRoot string
	// RestrictOOMScoreAdj keeps containers' oom_score_adj at or above
	// containerd's own; set it when the process lacks CAP_SYS_RESOURCE, or
	// every sandbox fails to start.
	RestrictOOMScoreAdj bool
	// DisableApparmor turns off AppArmor profiles for containers.
	DisableApparmor bool
	// CNIBinDirs are searched for CNI plugins, in order; at least one.
	CNIBinDirs []string
	// CNIConfDir holds the node's CNI network configuration.
	CNIConfDir string
	// OptPath is the dir of containerd's "opt" plugin, under the node dir.
	OptPath string
	// RegistryConfigPath is the dir of per-registry hosts.toml files
	// (images.registry.config_path); "" leaves it unset.
	RegistryConfigPath string
	// Snapshotter is SnapshotterOverlayfs (when "") or SnapshotterNative.
	Snapshotter string
	// ShimSocketDir is where the shims put their sockets, at most 42 bytes
	// long; "" leaves containerd's default, /run/containerd/s as root,
	// which only a per-node mount namespace makes private to the node.
	ShimSocketDir string
	// Patches are TOML documents merged, in order, into the rendered
	// config (Patch): the user's components.containerd.config_patches.
	Patches []string
}

// maxSocketPath is the longest path a unix socket can be bound to.
const maxSocketPath = 107

// maxShimSocketDir is the longest ShimSocketDir: a shim's socket is the dir,
// "/" and a 64 character hash.
const maxShimSocketDir = maxSocketPath - 1 - 64

// Validate reports every problem with c at once, joined. An empty
// Snapshotter is valid and means SnapshotterOverlayfs.
func (c Config) Validate() error {
	var p problems
	c.validateDaemon(&p)
	c.validatePlugins(&p)
	if err := errors.Join(p...); err != nil {
		return fmt.Errorf("invalid containerd config: %w", err)
	}
	return nil
}

// validateDaemon checks containerd's own directories and sockets, the
// sandbox image and the OCI runtime.
func (c Config) validateDaemon(p *problems) {
	p.abs("root", c.Root)
	p.abs("state", c.State)
	p.socket("address", c.Address)
	p.socket("ttrpc address", c.TTRPCAddress)
	if c.Address != "" && c.Address == c.TTRPCAddress {
		p.add(fmt.Errorf("address and ttrpc address: both %q", c.Address))
	}
	if c.SandboxImage == "" {
		p.add(errors.New("sandbox image: empty"))
	}
	if !runtimeName.MatchString(c.Runtime) {
		p.add(fmt.Errorf("runtime %q: want lower-case letters, digits, '-' or '_'", c.Runtime))
	}
	p.abs("runtime binary", c.RuntimeBinary)
	if c.RuntimeRoot != "" {
		p.abs("runtime root", c.RuntimeRoot)
	}
}

// validatePlugins checks the settings of containerd's CNI, opt, registry,
// shim and snapshotter plugins.
func (c Config) validatePlugins(p *problems) {
	if len(c.CNIBinDirs) == 0 {
		p.add(errors.New("CNI bin dirs: none"))
	}
	for _, d := range c.CNIBinDirs {
		p.abs("CNI bin dir", d)
	}
	p.abs("CNI conf dir", c.CNIConfDir)
	p.abs("opt path", c.OptPath)
	if c.RegistryConfigPath != "" {
		p.abs("registry config path", c.RegistryConfigPath)
	}
	if c.ShimSocketDir != "" {
		p.abs("shim socket dir", c.ShimSocketDir)
		if len(c.ShimSocketDir) > maxShimSocketDir {
			p.add(fmt.Errorf("shim socket dir %q: %d bytes, at most %d", c.ShimSocketDir, len(c.ShimSocketDir), maxShimSocketDir))
		}
	}
	switch c.Snapshotter {
	case "", SnapshotterOverlayfs, SnapshotterNative:
	default:
		p.add(fmt.Errorf("snapshotter %q: want %q or %q (others, like fuse-overlayfs, run as separate proxy plugins, which kubernix does not configure)",
			c.Snapshotter, SnapshotterOverlayfs, SnapshotterNative))
	}
}

// problems collects validation errors in check order.
type problems []error

func (p *problems) add(err error) { *p = append(*p, err) }

// abs records a problem when path, the value of field, is empty or relative.
func (p *problems) abs(field, path string) {
	switch {
	case path == "":
		p.add(fmt.Errorf("%s: empty", field))
	case !filepath.IsAbs(path):
		p.add(fmt.Errorf("%s %q: not an absolute path", field, path))
	}
}

// socket is abs for a unix socket path, which must also fit maxSocketPath.
func (p *problems) socket(field, path string) {
	p.abs(field, path)
	if len(path) > maxSocketPath {
		p.add(fmt.Errorf("%s %q: %d bytes, a unix socket path has at most %d", field, path, len(path), maxSocketPath))
	}
}

// Render returns containerd's config.toml for c, from the template
// assets.ContainerdConfigTemplate. It returns every problem with c at once,
// joined, when c is invalid, and template errors as errors. With
// c.Patches, the rendered config is Patch'ed; an error then names the
// patch that is not TOML.
func Render(c Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Snapshotter == "" {
		c.Snapshotter = SnapshotterOverlayfs
	}
	tmpl, err := template.New("containerd.toml").
		Option("missingkey=error").
		Funcs(template.FuncMap{"toml": tomlValue}).
		Parse(assets.ContainerdConfigTemplate)
	if err != nil {
		return nil, fmt.Errorf("render containerd config: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, c); err != nil {
		return nil, fmt.Errorf("render containerd config: %w", err)
	}
	if len(c.Patches) > 0 {
		return Patch(buf.Bytes(), c.Patches)
	}
	return buf.Bytes(), nil
}

// tomlValue returns v as a TOML value (a quoted string, an array, a bool...),
// for the template's "toml" func. A string also serves as a quoted key.
func tomlValue(v any) (string, error) {
	const key = "v"
	b, err := toml.Marshal(map[string]any{key: v})
	if err != nil {
		return "", fmt.Errorf("toml value %v: %w", v, err)
	}
	s, ok := strings.CutPrefix(strings.TrimSuffix(string(b), "\n"), key+" = ")
	if !ok || strings.Contains(s, "\n") {
		return "", fmt.Errorf("toml value %v: not a single-line value: %q", v, b)
	}
	return s, nil
}
