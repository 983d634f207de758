package registry

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
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
