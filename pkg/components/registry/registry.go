// Package registry describes the cluster's local image registry: the CNCF
// distribution registry (github.com/distribution/distribution/v3,
// cmd/registry), serving plain HTTP on this machine only, with its storage
// in the state dir (kept across down and up).
//
// One name works on the host and on every node: `localhost:<port>/app:v1`.
// The host pushes to 127.0.0.1:<port>; each node's containerd, whose
// loopback is its own, resolves localhost:<port> to the registry's bridge
// address through a hosts.toml in its registry config dir
// (containerd's config_path).
//
// The registry serves one address (its http.addr), and the cluster needs
// two, each with its own config: Name on the bridge address, which every
// node and pod reaches, serves pulls only (storage.maintenance.readonly:
// pushes and deletes answer 405, and it purges no uploads), and LocalName
// on the loopback address, which no node or pod reaches, takes pushes
// from the cluster's owner alone: its htpasswd file (EnsureCredentials)
// lists one generated account, kept in the state dir (0600) and handed to
// the owner's tools by `kubernix registry login`. Both serve the same
// storage, as distribution allows behind a load balancer; uploads go to
// LocalName only, and no blob descriptor cache is configured, so neither
// serves stale metadata. In a rootless cluster LocalName listens on the
// loopback of rootlesskit's network namespace, and rootlesskit's port
// forward from the host's 127.0.0.1:<port> reaches it there.
package registry

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/pelletier/go-toml/v2"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

// Names of the components.
const (
	// Name is the read-only registry on the cluster bridge address.
	Name = "registry"
	// LocalName is the registry on the loopback address, the one pushes
	// go to.
	LocalName = "registry-localhost"
)

// PortFlag is the kubernix flag that sets the registry's port.
const PortFlag = "--registry-port"

// DefaultPort is the registry's default TCP port, the one kind's local
// registry guide uses.
const DefaultPort = config.DefaultRegistryPort

// Spec is what the registry is described from.
type Spec struct {
	// Binary is the path of the registry binary.
	Binary string
	// ConfigFile is where Name's config.yml is rendered, LocalConfigFile
	// LocalName's.
	ConfigFile, LocalConfigFile string
	// StorageDir is the filesystem driver's root directory.
	StorageDir string
	// AuthDir holds the account LocalName admits (EnsureCredentials).
	AuthDir string
	// IP is the cluster bridge address: the nodes pull from IP:Port.
	IP netip.Addr
	// LocalIP is the loopback address (127.0.0.1) LocalName serves on: the
	// host's, or in a rootless cluster that of rootlesskit's namespace.
	LocalIP netip.Addr
	// Port is the TCP port of both listeners, 1-65535.
	Port int
	// HostsDir is containerd's registry config_path
	// (config.Paths.Registries): Describe renders
	// <HostsDir>/localhost:<Port>/hosts.toml there.
	HostsDir string
	// Mirrors are registry host names (config.Config.RegistryMirrors,
	// e.g. "registry.k8s.io"): Describe renders <HostsDir>/<mirror>/hosts.toml
	// for each, which makes the nodes pull that registry's images from
	// this one first.
	Mirrors []string
}

// Host is the registry's name for clients: "localhost:<port>", the prefix
// of the images pushed to it.
func (s Spec) Host() string { return "localhost:" + strconv.Itoa(s.Port) }

// URL is the registry's base URL on ip, e.g. "http://10.10.0.1:5001".
func (s Spec) URL(ip netip.Addr) string {
	return "http://" + netip.AddrPortFrom(ip, uint16(s.Port)).String()
}

// HostsFile is the path of the hosts.toml through which containerd
// resolves Host to the bridge address.
func (s Spec) HostsFile() string { return s.HostsDir + "/" + s.Host() + "/hosts.toml" }

// MirrorHostsFile is the path of the hosts.toml through which containerd
// pulls the images of the registry host mirror from this registry first.
func (s Spec) MirrorHostsFile(mirror string) string {
	return s.HostsDir + "/" + mirror + "/hosts.toml"
}

// HostsFiles are the paths of every hosts.toml Describe renders:
// HostsFile, then MirrorHostsFile of each mirror.
func (s Spec) HostsFiles() []string {
	out := []string{s.HostsFile()}
	for _, m := range s.Mirrors {
		out = append(out, s.MirrorHostsFile(m))
	}
	return out
}

// Describe returns the registry as two processes of the Infrastructure
// phase (see the package doc): Name, ready once GET /v2/ answers, renders
// its config.yml and the hosts.toml files (HostsFiles); LocalName, ready
// once GET / answers (the one path its htpasswd auth leaves open), renders
// its own config.yml. Both make the storage dir. The caller ensures
// LocalName's account (EnsureCredentials on AuthDir) before it starts. It
// errors only if the files cannot be rendered.
func Describe(s Spec) ([]components.Description, error) {
	bridgeCfg, err := components.RenderYAML(Config(s), "registry config.yml")
	if err != nil {
		return nil, err
	}
	localCfg, err := components.RenderYAML(LocalConfig(s), "registry-localhost config.yml")
	if err != nil {
		return nil, err
	}
	hosts, err := HostsTOML(s)
	if err != nil {
		return nil, err
	}
	describe := func(name, configFile string, ip netip.Addr, probe string, cfg []byte) components.Description {
		return components.Description{
			Name: name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.Infrastructure,
			// Tracing off: distribution v3 exports OpenTelemetry traces
			// by default (autoexport, to localhost:4318), logging an
			// error every few seconds where nothing listens.
			Binary: Name, Command: process.Command{Path: s.Binary, Args: []string{"serve", configFile}, Env: []string{"OTEL_TRACES_EXPORTER=none"}},
			Ports: []components.Port{{IP: ip, Port: s.Port, Flag: PortFlag}},
			Probe: components.Probe{HTTPGet: s.URL(ip) + probe},
			Files: []components.File{{Path: configFile, Content: cfg}},
			Dirs:  []string{s.StorageDir},
		}
	}
	bridge := describe(Name, s.ConfigFile, s.IP, "/v2/", bridgeCfg)
	bridge.Files = append(bridge.Files, components.File{Path: s.HostsFile(), Content: hosts})
	for _, m := range s.Mirrors {
		b, err := MirrorHostsTOML(s, m)
		if err != nil {
			return nil, err
		}
		bridge.Files = append(bridge.Files, components.File{Path: s.MirrorHostsFile(m), Content: b})
	}
	local := describe(LocalName, s.LocalConfigFile, s.LocalIP, "/", localCfg)
	return []components.Description{bridge, local}, nil
}

// File is the registry's config.yml (distribution's configuration
// version 0.1): the keys kubernix sets, see
// https://distribution.github.io/distribution/about/configuration/.
type File struct {
	Version string  `json:"version"`
	Log     Log     `json:"log"`
	Storage Storage `json:"storage"`
	Auth    *Auth   `json:"auth,omitempty"`
	HTTP    HTTP    `json:"http"`
	Health  Health  `json:"health"`
}

// Log is the log section.
type Log struct {
	Level     string    `json:"level"`
	AccessLog AccessLog `json:"accesslog"`
}

// AccessLog is log.accesslog.
type AccessLog struct {
	Disabled bool `json:"disabled"`
}

// Storage is the storage section: the filesystem driver, deletes and
// maintenance.
type Storage struct {
	Filesystem  Filesystem   `json:"filesystem"`
	Delete      Enabled      `json:"delete"`
	Maintenance *Maintenance `json:"maintenance,omitempty"`
}

// Filesystem is storage.filesystem.
type Filesystem struct {
	RootDirectory string `json:"rootdirectory"`
}

// Enabled is a section with only an enabled switch.
type Enabled struct {
	Enabled bool `json:"enabled"`
}

// Maintenance is storage.maintenance: read-only mode (every push, upload
// and delete answers 405 Method Not Allowed) and the purging of
// abandoned uploads (by default every 24h, those older than a week).
type Maintenance struct {
	ReadOnly      Enabled `json:"readonly"`
	UploadPurging Enabled `json:"uploadpurging"`
}

// Auth is the auth section, with the htpasswd access controller: every
// request but GET / needs HTTP basic auth of an account in its file.
type Auth struct {
	HTPasswd HTPasswd `json:"htpasswd"`
}

// HTPasswd is auth.htpasswd: the realm of the challenge and the file of
// bcrypt hashed accounts (read again when it changes).
type HTPasswd struct {
	Realm string `json:"realm"`
	Path  string `json:"path"`
}

// HTTP is the http section: the listen address and response headers.
type HTTP struct {
	Addr    string              `json:"addr"`
	Headers map[string][]string `json:"headers"`
}

// Health is the health section.
type Health struct {
	StorageDriver StorageDriverHealth `json:"storagedriver"`
}

// StorageDriverHealth is health.storagedriver: the storage check, whose
// failure turns every response into 503.
type StorageDriverHealth struct {
	Enabled   bool   `json:"enabled"`
	Interval  string `json:"interval"`
	Threshold int    `json:"threshold"`
}

// Config returns Name's configuration: filesystem storage in StorageDir,
// read-only (no pushes, no deletes, no upload purging: the storage is
// LocalName's to change), no auth, listening on the bridge address,
// access log on.
func Config(s Spec) File {
	f := base(s, s.IP)
	f.Storage.Maintenance = &Maintenance{ReadOnly: Enabled{Enabled: true}}
	return f
}

// LocalConfig returns LocalName's configuration: the same storage,
// writable, deletes allowed (the registry API's DELETE of a manifest),
// htpasswd auth with AuthDir's file (HTPasswdFile), listening on the
// loopback address.
func LocalConfig(s Spec) File {
	f := base(s, s.LocalIP)
	f.Storage.Delete.Enabled = true
	f.Auth = &Auth{HTPasswd: HTPasswd{Realm: "kubernix " + s.Host(), Path: HTPasswdFile(s.AuthDir)}}
	return f
}

// base is the configuration both processes share, listening on ip.
func base(s Spec, ip netip.Addr) File {
	return File{
		Version: "0.1",
		Log:     Log{Level: "info"},
		Storage: Storage{Filesystem: Filesystem{RootDirectory: s.StorageDir}},
		HTTP: HTTP{
			Addr:    netip.AddrPortFrom(ip, uint16(s.Port)).String(),
			Headers: map[string][]string{"X-Content-Type-Options": {"nosniff"}},
		},
		Health: Health{StorageDriver: StorageDriverHealth{Enabled: true, Interval: "10s", Threshold: 3}},
	}
}

// hostsFile is containerd's hosts.toml
// (https://github.com/containerd/containerd/blob/main/docs/hosts.md).
type hostsFile struct {
	// Server is the registry's URL for the namespace (its directory's
	// name), tried after the Host entries; empty means containerd's
	// default for the namespace (https://<namespace>, and
	// https://registry-1.docker.io for docker.io).
	Server string `toml:"server,omitempty"`
	// Host are the mirrors tried first, by URL.
	Host map[string]hostEntry `toml:"host,omitempty"`
}

// hostEntry is a [host."<url>"] table of hosts.toml.
type hostEntry struct {
	// Capabilities are what the host may be used for: "pull",
	// "resolve" (tag to digest) and "push".
	Capabilities []string `toml:"capabilities"`
}

// generatedHeader is the first line of every file Describe renders; it
// tells PruneHosts which files are kubernix's.
const generatedHeader = "# generated by kubernix, do not edit\n"

// HostsTOML renders the hosts.toml that sends every pull of
// localhost:<port>/… to the registry's bridge address over plain HTTP.
func HostsTOML(s Spec) ([]byte, error) {
	return renderHosts(s.HostsFile(), hostsFile{Server: s.URL(s.IP)})
}

// MirrorHostsTOML renders the hosts.toml of the registry host mirror:
// pulls (manifests by tag and digest, and blobs) go to this registry's
// bridge address over plain HTTP first, and to mirror's own server when
// this registry does not have the image (or does not answer). So an
// image pushed as localhost:<port>/<path>:<tag> is what the nodes get
// for <mirror>/<path>:<tag>, also with imagePullPolicy Always.
func MirrorHostsTOML(s Spec, mirror string) ([]byte, error) {
	return renderHosts(s.MirrorHostsFile(mirror), hostsFile{
		Host: map[string]hostEntry{s.URL(s.IP): {Capabilities: []string{"pull", "resolve"}}},
	})
}

func renderHosts(path string, h hostsFile) ([]byte, error) {
	b, err := toml.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", path, err)
	}
	return append([]byte(generatedHeader), b...), nil
}

// PruneHosts removes each <dir>/<host>/hosts.toml that kubernix rendered
// (its first line is the generated header) and keep does not list, with
// its directory when that is left empty: what a dropped mirror, a changed
// registry port or a registry turned off leaves behind. Files of others
// stay. A missing dir is no error; the errors of removals are joined.
func PruneHosts(dir string, keep []string) error {
	found, err := filepath.Glob(filepath.Join(dir, "*", "hosts.toml"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range found {
		if slices.Contains(keep, f) || !generated(f) {
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(filepath.Dir(f)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// generated reports whether the file at path starts with generatedHeader.
func generated(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(generatedHeader))
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == generatedHeader
}
