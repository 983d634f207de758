package config

import (
	"maps"
	"net/netip"
	"strings"
	"testing"
)

func TestIsPrivate(t *testing.T) {
	for in, want := range map[string]bool{
		"10.10.0.0/16": true, "10.0.0.0/8": true, "172.16.0.0/12": true, "172.31.255.0/24": true,
		"192.168.0.0/16": true, "100.64.0.0/10": true, "100.127.0.0/16": true,
		"9.0.0.0/8": false, "10.0.0.0/7": false, "172.0.0.0/11": false, "172.32.0.0/16": false,
		"8.8.0.0/16": false, "169.254.0.0/16": false, "0.0.0.0/4": false, "0.0.0.0/0": false,
		"224.0.0.0/4": false, "100.128.0.0/16": false, "192.0.2.0/24": false, "127.0.0.0/8": false,
	} {
		if got := IsPrivate(netip.MustParsePrefix(in)); got != want {
			t.Errorf("IsPrivate(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestFreeRange(t *testing.T) {
	pp := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	tests := []struct {
		name  string
		bits  int
		taken []netip.Prefix
		want  string // "" means none
	}{
		{"nothing taken", 16, nil, "10.10.0.0/16"},
		{"default taken", 16, pp("10.10.0.0/24"), "10.11.0.0/16"},
		{"several taken", 16, pp("10.10.5.0/24", "10.11.0.0/16", "10.12.0.1/32"), "10.13.0.0/16"},
		{"wraps around", 16, pp("10.10.0.0/15", "10.12.0.0/14", "10.16.0.0/12", "10.32.0.0/11", "10.64.0.0/10", "10.128.0.0/9"), "10.0.0.0/16"},
		{"10/8 full", 16, pp("10.0.0.0/8"), "172.16.0.0/16"},
		{"all full", 16, pp("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"), ""},
		{"small", 24, pp("10.10.0.0/24"), "10.10.1.0/24"},
		{"a whole /8", 8, nil, "10.0.0.0/8"},
		{"a whole /8 taken", 8, pp("10.1.0.0/16"), ""},
		{"bad size", 4, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FreeRange(tt.bits, tt.taken)
			if tt.want == "" {
				if ok {
					t.Fatalf("FreeRange = %s, want none", got)
				}
				return
			}
			if !ok || got.String() != tt.want {
				t.Fatalf("FreeRange = %s, %v; want %s", got, ok, tt.want)
			}
		})
	}
}

// TestPrivateReportedOnce: the ranges carved from a public --cidr are
// reported with it, not each on its own.
func TestPrivateReportedOnce(t *testing.T) {
	c, err := load(t, []string{"--state-dir", t.TempDir(), "--cidr", "8.8.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "(1 problem)") || strings.Contains(err.Error(), "--node-cidr") {
		t.Fatalf("Validate() = %v, want one problem, about --cidr", err)
	}
}

// TestWithCIDR: the ranges derived from --cidr follow a new one, whatever
// was set before; WithRangesOf copies every range and nothing else.
func TestWithCIDR(t *testing.T) {
	c := Default()
	c.NodeCIDR = "192.168.5.0/24" // set, and not inside the new range
	c.Resolve()
	got := c.WithCIDR(netip.MustParsePrefix("10.11.0.0/16")).Ranges()
	want := map[string]string{"cidr": "10.11.0.0/16", "node_cidr": "10.11.0.0/24", "service_cidr": "10.11.16.0/20",
		"cluster_cidr": "10.11.128.0/17", "loadbalancer_cidr": "10.11.32.0/20"}
	if !maps.Equal(got, want) {
		t.Errorf("WithCIDR(10.11.0.0/16).Ranges() = %v, want %v", got, want)
	}
	other := Default()
	other.Name, other.CIDR = "other", "172.20.0.0/16"
	other.Resolve()
	copied := c.WithRangesOf(other)
	if !maps.Equal(copied.Ranges(), other.Ranges()) || copied.Name != c.Name {
		t.Errorf("WithRangesOf: ranges %v name %q, want %v and %q", copied.Ranges(), copied.Name, other.Ranges(), c.Name)
	}
	if len(want) != len(RangeKeys) {
		t.Errorf("RangeKeys = %v: a range setting is missing from the test", RangeKeys)
	}
}
