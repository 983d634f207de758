package registry

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"
)

// TestDescribe: two processes over one storage, each with its own
// config.yml: the read-only one on the bridge, which renders the
// hosts.toml, and the writable one behind htpasswd auth on the loopback.
func TestDescribe(t *testing.T) {
	bridge := netip.MustParseAddr("10.10.0.1")
	for _, port := range []int{5001, 5002} {
		t.Run(strconv.Itoa(port), func(t *testing.T) {
			s := Spec{Binary: "/B/registry", ConfigFile: "/S/registry.yml", LocalConfigFile: "/S/registry-localhost.yml",
				StorageDir: "/S/registry", AuthDir: "/S/registry-auth",
				IP: bridge, LocalIP: netip.MustParseAddr("127.0.0.1"), Port: port, HostsDir: "/S/registries"}
			ds, err := Describe(s)
			if err != nil {
				t.Fatal(err)
			}
			p := strconv.Itoa(port)
			want := []string{
				"registry GET http://10.10.0.1:" + p + "/v2/ [/B/registry serve /S/registry.yml] [] [/S/registry]",
				"registry-localhost GET http://127.0.0.1:" + p + "/ [/B/registry serve /S/registry-localhost.yml] [] [/S/registry]",
			}
			var got []string
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s %s %v %v %v", d.Name, d.Probe, d.Command.Argv(), d.Needs, d.Dirs))
			}
			if !slices.Equal(got, want) {
				t.Errorf("processes =\n%q\nwant\n%q", got, want)
			}
			if files := ds[0].Files; len(files) != 2 || files[0].Path != "/S/registry.yml" || files[1].Path != "/S/registries/localhost:"+p+"/hosts.toml" {
				t.Fatalf("files of %s = %+v, want its config.yml and hosts.toml", ds[0].Name, files)
			}
			if files := ds[1].Files; len(files) != 1 || files[0].Path != "/S/registry-localhost.yml" {
				t.Fatalf("files of %s = %+v, want its config.yml", ds[1].Name, files)
			}
			var hosts map[string]any
			if err := toml.Unmarshal(ds[0].Files[1].Content, &hosts); err != nil {
				t.Fatalf("hosts.toml does not parse back: %v", err)
			}
			if want := "http://10.10.0.1:" + p; hosts["server"] != want {
				t.Errorf("hosts.toml server = %v, want %s", hosts["server"], want)
			}
			wantCfg := map[string]File{
				Name: {Version: "0.1", Log: Log{Level: "info"},
					Storage: Storage{Filesystem: Filesystem{RootDirectory: "/S/registry"},
						Maintenance: &Maintenance{ReadOnly: Enabled{Enabled: true}}},
					HTTP:   HTTP{Addr: "10.10.0.1:" + p, Headers: map[string][]string{"X-Content-Type-Options": {"nosniff"}}},
					Health: Health{StorageDriver: StorageDriverHealth{Enabled: true, Interval: "10s", Threshold: 3}}},
				LocalName: {Version: "0.1", Log: Log{Level: "info"},
					Storage: Storage{Filesystem: Filesystem{RootDirectory: "/S/registry"}, Delete: Enabled{Enabled: true}},
					Auth:    &Auth{HTPasswd: HTPasswd{Realm: "kubernix localhost:" + p, Path: "/S/registry-auth/htpasswd"}},
					HTTP:    HTTP{Addr: "127.0.0.1:" + p, Headers: map[string][]string{"X-Content-Type-Options": {"nosniff"}}},
					Health:  Health{StorageDriver: StorageDriverHealth{Enabled: true, Interval: "10s", Threshold: 3}}},
			}
			for _, d := range ds {
				var cfg File
				if err := yaml.UnmarshalStrict(d.Files[0].Content, &cfg); err != nil {
					t.Fatalf("%s config.yml does not parse back: %v\n%s", d.Name, err, d.Files[0].Content)
				}
				if !reflect.DeepEqual(cfg, wantCfg[d.Name]) {
					t.Errorf("%s config.yml:\n%s\nparses to %+v, want %+v", d.Name, d.Files[0].Content, cfg, wantCfg[d.Name])
				}
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
			s := Spec{Binary: "/B/registry", ConfigFile: "/S/registry.yml", LocalConfigFile: "/S/registry-localhost.yml",
				StorageDir: "/S/registry", AuthDir: "/S/registry-auth", IP: netip.MustParseAddr("10.10.0.1"),
				LocalIP: netip.MustParseAddr("127.0.0.1"), Port: tt.port, HostsDir: "/S/registries", Mirrors: tt.mirrors}
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
