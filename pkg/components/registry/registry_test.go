package registry

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"
)

func TestDescribe(t *testing.T) {
	bridge := netip.MustParseAddr("10.10.0.1")
	tests := []struct {
		name    string
		local   netip.Addr
		port    int
		want    []string // "name probe env" of each process
		hostDir string
	}{
		{"root: bridge and loopback", netip.MustParseAddr("127.0.0.1"), 5001, []string{
			"registry GET http://10.10.0.1:5001/v2/ []",
			"registry-localhost GET http://127.0.0.1:5001/v2/ [REGISTRY_HTTP_ADDR=127.0.0.1:5001]",
		}, "/S/registries/localhost:5001"},
		{"rootless: bridge only", netip.Addr{}, 5002, []string{
			"registry GET http://10.10.0.1:5002/v2/ []",
		}, "/S/registries/localhost:5002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Spec{Binary: "/B/registry", ConfigFile: "/S/registry.yml", StorageDir: "/S/registry",
				IP: bridge, LocalIP: tt.local, Port: tt.port, HostsDir: "/S/registries"}
			ds, err := Describe(s)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s %s %v", d.Name, d.Probe, d.Command.Env))
				if !slices.Equal(d.Command.Argv(), []string{"/B/registry", "serve", "/S/registry.yml"}) {
					t.Errorf("%s argv = %q", d.Name, d.Command.Argv())
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("processes = %q, want %q", got, tt.want)
			}
			files := ds[0].Files
			if len(files) != 2 || files[0].Path != "/S/registry.yml" || files[1].Path != tt.hostDir+"/hosts.toml" {
				t.Fatalf("files of %s = %+v, want config.yml and %s/hosts.toml", ds[0].Name, files, tt.hostDir)
			}
			var cfg File
			if err := yaml.UnmarshalStrict(files[0].Content, &cfg); err != nil {
				t.Fatalf("config.yml does not parse back: %v\n%s", err, files[0].Content)
			}
			if cfg.HTTP.Addr != netip.AddrPortFrom(bridge, uint16(tt.port)).String() || cfg.Storage.Filesystem.RootDirectory != "/S/registry" {
				t.Errorf("config.yml listens on %s with storage %s", cfg.HTTP.Addr, cfg.Storage.Filesystem.RootDirectory)
			}
			var hosts map[string]any
			if err := toml.Unmarshal(files[1].Content, &hosts); err != nil {
				t.Fatalf("hosts.toml does not parse back: %v", err)
			}
			if want := "http://10.10.0.1:" + strconv.Itoa(tt.port); hosts["server"] != want {
				t.Errorf("hosts.toml server = %v, want %s", hosts["server"], want)
			}
			if len(ds) == 2 && (!slices.Equal(ds[1].Needs, []string{Name}) || len(ds[1].Files) != 0) {
				t.Errorf("%s needs %q with %d files, want it after %s, which renders the files", ds[1].Name, ds[1].Needs, len(ds[1].Files), Name)
			}
		})
	}
}

// TestMirrors: each mirror gets a hosts.toml in its own directory that
// sends pulls and resolves to the registry's bridge address over plain
// HTTP, with no server (containerd's default for the namespace is the
// fallback).
func TestMirrors(t *testing.T) {
	tests := []struct {
		name    string
		port    int
		mirrors []string
		want    []string // paths of the hosts.toml files after config.yml
	}{
		{"none", 5001, nil, []string{"/S/registries/localhost:5001/hosts.toml"}},
		{"two", 5002, []string{"registry.k8s.io", "docker.io"}, []string{
			"/S/registries/localhost:5002/hosts.toml",
			"/S/registries/registry.k8s.io/hosts.toml", "/S/registries/docker.io/hosts.toml"}},
		{"with a port", 5001, []string{"myhost:5000"}, []string{
			"/S/registries/localhost:5001/hosts.toml", "/S/registries/myhost:5000/hosts.toml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Spec{Binary: "/B/registry", ConfigFile: "/S/registry.yml", StorageDir: "/S/registry",
				IP: netip.MustParseAddr("10.10.0.1"), Port: tt.port, HostsDir: "/S/registries", Mirrors: tt.mirrors}
			ds, err := Describe(s)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, f := range ds[0].Files[1:] {
				paths = append(paths, f.Path)
			}
			if !slices.Equal(paths, tt.want) || !slices.Equal(s.HostsFiles(), tt.want) {
				t.Fatalf("hosts files = %q, HostsFiles = %q, want %q", paths, s.HostsFiles(), tt.want)
			}
			url := "http://10.10.0.1:" + strconv.Itoa(tt.port)
			for _, f := range ds[0].Files[2:] {
				var got struct {
					Server string
					Host   map[string]map[string]any
				}
				if err := toml.Unmarshal(f.Content, &got); err != nil {
					t.Fatalf("%s does not parse back: %v\n%s", f.Path, err, f.Content)
				}
				caps := fmt.Sprint(got.Host[url]["capabilities"])
				if got.Server != "" || len(got.Host) != 1 || caps != "[pull resolve]" {
					t.Errorf("%s: server %q, hosts %v; want no server and only %s with [pull resolve]\n%s", f.Path, got.Server, got.Host, url, f.Content)
				}
				if !strings.HasPrefix(string(f.Content), generatedHeader) {
					t.Errorf("%s does not start with %q", f.Path, generatedHeader)
				}
			}
		})
	}
}

// TestPruneHosts: the hosts.toml files kubernix rendered and no longer
// renders go, with their emptied directories; kept ones, others' files
// and a directory holding more stay.
func TestPruneHosts(t *testing.T) {
	const mine, theirs = generatedHeader + "server = 'x'\n", "server = 'https://mine'\n"
	tests := []struct {
		name  string
		files map[string]string // host dir -> hosts.toml content
		extra []string          // host dirs holding another file too
		keep  []string          // host dirs kept
		want  []string          // host dirs left, sorted
	}{
		{"nothing", nil, nil, nil, nil},
		{"dropped mirror", map[string]string{"localhost:5001": mine, "docker.io": mine}, nil, []string{"localhost:5001"}, []string{"localhost:5001"}},
		{"registry off", map[string]string{"localhost:5001": mine, "registry.k8s.io": mine}, nil, nil, nil},
		{"not ours", map[string]string{"quay.io": theirs, "docker.io": mine}, nil, nil, []string{"quay.io"}},
		{"dir with more", map[string]string{"docker.io": mine}, []string{"docker.io"}, nil, []string{"docker.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "registries")
			for host, content := range tt.files {
				if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, host := range tt.extra {
				if err := os.WriteFile(filepath.Join(dir, host, "ca.crt"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var keep []string
			for _, host := range tt.keep {
				keep = append(keep, filepath.Join(dir, host, "hosts.toml"))
			}
			if err := PruneHosts(dir, keep); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(dir)
			var left []string
			for _, e := range entries {
				left = append(left, e.Name())
			}
			if !slices.Equal(left, tt.want) {
				t.Errorf("left %q, want %q", left, tt.want)
			}
			for _, host := range tt.want {
				if _, err := os.Stat(filepath.Join(dir, host, "hosts.toml")); err != nil && tt.files[host] != mine {
					t.Errorf("%s/hosts.toml (not ours) is gone: %v", host, err)
				}
			}
		})
	}
}
