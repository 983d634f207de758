package host

import (
	"net/netip"
	"testing"
)

func TestParseProcAddr(t *testing.T) {
	tests := []struct {
		in       string
		addr     string
		port     int
		wantFail bool
	}{
		{"0100007F:1A0B", "127.0.0.1", 6667, false},
		{"00000000:192B", "0.0.0.0", 6443, false},
		{"01000A0A:192B", "10.10.0.1", 6443, false},
		{"00000000000000000000000000000000:0050", "::", 80, false},
		{"0000000000000000FFFF00000100007F:0050", "127.0.0.1", 80, false}, // v4-mapped
		{"nonsense", "", 0, true},
		{"0100007F:ZZZZ", "", 0, true},
		{"01007F:0050", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			addr, port, err := parseProcAddr(tt.in)
			if (err != nil) != tt.wantFail {
				t.Fatalf("err = %v, wantFail %v", err, tt.wantFail)
			}
			if err == nil && (addr != netip.MustParseAddr(tt.addr) || port != tt.port) {
				t.Errorf("= %s:%d, want %s:%d", addr, port, tt.addr, tt.port)
			}
		})
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/sys/fs/cgroup/cpu`:      "/sys/fs/cgroup/cpu",
		`/tmp/with\040space`:      "/tmp/with space",
		`/tmp/tab\011and\134back`: "/tmp/tab\tand\\back",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
