package containerd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderCNI(t *testing.T) {
	tests := []struct {
		name string
		cfg  CNIConfig
	}{
		{"node-0", CNIConfig{
			Name: "kubernix", Bridge: "kbx-node-0", PodCIDR: "10.244.0.0/24",
			Gateway: true, IPMasq: true, DataDir: "/var/lib/kubernix/nodes/node-0/cni/networks",
		}},
		{"node-2-multinode", CNIConfig{
			Name: "kubernix", Bridge: "kbx-node-2", PodCIDR: "10.244.2.0/24",
			Gateway: true, IPMasq: false, DataDir: "/var/lib/kubernix/nodes/node-2/cni/networks", MTU: 1450,
		}},
		{"ipv6", CNIConfig{
			Name: "kubernix6", Bridge: "kbx6", PodCIDR: "fd00:10:244::/64",
			Gateway: true, IPMasq: true, DataDir: "/var/lib/kubernix/cni6",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderCNI(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "cni-"+tt.name+".conflist"), got)

			// Read back the way libcni and the plugins read it.
			var list struct {
				CNIVersion string `json:"cniVersion"`
				Name       string `json:"name"`
				Plugins    []struct {
					Type         string          `json:"type"`
					Bridge       string          `json:"bridge"`
					IsGateway    bool            `json:"isGateway"`
					IPMasq       bool            `json:"ipMasq"`
					HairpinMode  bool            `json:"hairpinMode"`
					MTU          int             `json:"mtu"`
					Capabilities map[string]bool `json:"capabilities"`
					SNAT         *bool           `json:"snat"`
					IPAM         struct {
						Type    string `json:"type"`
						Ranges  [][]struct{ Subnet string }
						Routes  []struct{ Dst string }
						DataDir string `json:"dataDir"`
					} `json:"ipam"`
				} `json:"plugins"`
			}
			if err := json.Unmarshal(got, &list); err != nil {
				t.Fatal(err)
			}
			c := tt.cfg
			if list.CNIVersion != "1.0.0" || list.Name != c.Name || len(list.Plugins) != 2 {
				t.Fatalf("conflist %+v", list)
			}
			br, pm := list.Plugins[0], list.Plugins[1]
			if br.Type != "bridge" || br.Bridge != c.Bridge || br.IsGateway != c.Gateway ||
				br.IPMasq != c.IPMasq || !br.HairpinMode || br.MTU != c.MTU {
				t.Errorf("bridge %+v, config %+v", br, c)
			}
			ipam := br.IPAM
			if ipam.Type != "host-local" || ipam.DataDir != c.DataDir ||
				len(ipam.Ranges) != 1 || len(ipam.Ranges[0]) != 1 || ipam.Ranges[0][0].Subnet != c.PodCIDR ||
				len(ipam.Routes) != 1 || !strings.HasSuffix(ipam.Routes[0].Dst, "/0") {
				t.Errorf("ipam %+v, config %+v", ipam, c)
			}
			if pm.Type != "portmap" || !pm.Capabilities["portMappings"] || pm.SNAT == nil || !*pm.SNAT {
				t.Errorf("portmap %+v", pm)
			}
		})
	}
}

func TestRenderCNIInvalid(t *testing.T) {
	_, err := RenderCNI(CNIConfig{
		Name:    "bad name",
		Bridge:  "a-bridge-name-too-long",
		PodCIDR: "10.244.0.1/24",
		DataDir: "cni",
		MTU:     20,
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`name "bad name"`,
		"longer than 15 bytes",
		"host bits set, want 10.244.0.0/24",
		`data dir "cni"`,
		"MTU 20",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := RenderCNI(CNIConfig{Name: "n", Bridge: "b", PodCIDR: "nonsense", DataDir: "/d"}); err == nil || !strings.Contains(err.Error(), "pod CIDR") {
		t.Errorf("bad CIDR: %v", err)
	}
}
