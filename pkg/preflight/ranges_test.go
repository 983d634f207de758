package preflight

import (
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestMovedRange: a --cidr that another cluster or the host holds moves to
// the first free range of its size, the derived ranges with it, and the
// notice names what held it; a free one, or one with no free range left,
// stays.
func TestMovedRange(t *testing.T) {
	use := func(p, desc string) network.HostUse {
		return network.HostUse{Prefix: netip.MustParsePrefix(p), Desc: desc}
	}
	clusterA := use("10.10.0.0/24", `cluster "a" (/var/lib/kubernix/a)`)
	tests := []struct {
		name       string
		cidr       string
		uses       []network.HostUse
		want       string // the --cidr after
		wantNotice string // "" for none
	}{
		{"free", "10.10.0.0/16", []network.HostUse{use("192.168.1.0/24", "address 192.168.1.5/24 on link eth0")}, "10.10.0.0/16", ""},
		{"another cluster's", "10.10.0.0/16", []network.HostUse{clusterA}, "10.11.0.0/16",
			`--cidr 10.10.0.0/16 is in use by cluster "a" (/var/lib/kubernix/a); using --cidr 10.11.0.0/16`},
		{"a route of the host, and the next range too", "10.10.0.0/16",
			[]network.HostUse{use("10.10.64.0/24", `route "10.10.64.0/24 via 192.168.1.1"`), use("10.11.0.0/16", `cluster "b" (/x)`)},
			"10.12.0.0/16", `--cidr 10.10.0.0/16 is in use by route "10.10.64.0/24 via 192.168.1.1"; using --cidr 10.12.0.0/16`},
		{"one holder named once", "10.10.0.0/16", []network.HostUse{clusterA, clusterA}, "10.11.0.0/16", `in use by cluster "a" (/var/lib/kubernix/a);`},
		{"a /20 moves as a /20", "10.10.0.0/20", []network.HostUse{clusterA}, "10.10.16.0/20", "using --cidr 10.10.16.0/20"},
		{"no free range", "10.10.0.0/16", []network.HostUse{use("0.0.0.0/1", "route low"), use("128.0.0.0/1", "route high")}, "10.10.0.0/16", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.CIDR = tt.cidr
			cfg.Resolve()
			got, notice := movedRange(cfg, tt.uses)
			if got.CIDR != tt.want {
				t.Errorf("CIDR = %s, want %s", got.CIDR, tt.want)
			}
			if (notice == "") != (tt.wantNotice == "") || !strings.Contains(notice, tt.wantNotice) {
				t.Errorf("notice = %q, want one containing %q", notice, tt.wantNotice)
			}
			if strings.Count(notice, tt.uses[0].Desc) > 1 {
				t.Errorf("notice names %q twice: %q", tt.uses[0].Desc, notice)
			}
			want := config.Default()
			want.CIDR = tt.want
			want.Resolve()
			if g, w := got.Ranges(), want.Ranges(); !maps.Equal(g, w) {
				t.Errorf("ranges = %v, want those derived from %s: %v", g, tt.want, w)
			}
		})
	}
}

// TestClusterRanges: every range another cluster of the inventory
// recorded is taken, named by its cluster; the cluster's own and a
// state dir without a record are not.
func TestClusterRanges(t *testing.T) {
	root := t.TempDir()
	write := func(name, cidr string) string {
		dir := filepath.Join(root, name)
		cfg := config.Default()
		cfg.Name, cfg.StateDir, cfg.CIDR = name, dir, cidr
		cfg.Resolve()
		b, err := config.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg.Paths().ConfigFile(), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	own := write("own", "10.10.0.0/16")
	write("other", "10.20.0.0/16")
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	uses := clusterRanges(state.Inventory{Root: root}, own)
	other := netip.MustParsePrefix("10.20.0.0/16")
	if len(uses) != len(config.RangeKeys) {
		t.Fatalf("uses = %v, want the %d ranges of cluster other", uses, len(config.RangeKeys))
	}
	for _, u := range uses {
		if !other.Contains(u.Prefix.Addr()) || !strings.Contains(u.Desc, `cluster "other"`) {
			t.Errorf("use %s (%s): want a range of 10.20.0.0/16 named by cluster \"other\"", u.Prefix, u.Desc)
		}
	}
}
