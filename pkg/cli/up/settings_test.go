package up

import (
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// TestChosenRanges: the ranges Prepare chose that the sources did not give
// are what the supervisor is told and the record sets: a moved --cidr
// alone when the others follow it, a recorded range that does not, and
// nothing when the sources gave the range.
func TestChosenRanges(t *testing.T) {
	moved := func() config.Config {
		c := config.Default()
		c.Resolve()
		return c.WithCIDR(netip.MustParsePrefix("10.11.0.0/16"))
	}
	custom := moved()
	custom.NodeCIDR = "10.11.5.0/24"
	tests := []struct {
		name    string
		environ []string
		cfg     config.Config
		want    map[string]string
	}{
		{"the default, as given", nil, func() config.Config { c := config.Default(); c.Resolve(); return c }(), map[string]string{}},
		{"moved: cidr alone", nil, moved(), map[string]string{"cidr": "10.11.0.0/16"}},
		{"a recorded node network of its own", nil, custom, map[string]string{"cidr": "10.11.0.0/16", "node_cidr": "10.11.5.0/24"}},
		{"given by the environment", []string{"KUBERNIX_CIDR=10.11.0.0/16"}, moved(), map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &common.Env{Flags: config.NewFlags(), Environ: tt.environ}
			if got := chosenRanges(env, tt.cfg); !maps.Equal(got, tt.want) {
				t.Errorf("chosenRanges = %v, want %v", got, tt.want)
			}
		})
	}
	// The record sets the chosen --cidr and derives the rest from it.
	b := string(asked(&common.Env{Flags: config.NewFlags()}, moved()))
	for _, want := range []string{"\ncidr = '10.11.0.0/16'", "\n# node_cidr = '10.11.0.0/24'"} {
		if !strings.Contains(b, want) {
			t.Errorf("asked lacks %q:\n%s", want, b)
		}
	}
}
