package rootless

import (
	"strings"
	"testing"

	"github.com/moby/sys/user"
)

func TestIsIdentityMap(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"         0          0 4294967295\n", true},
		{"         0       1000          1\n         1     100000      65536\n", false},
		{"         0          0      65536\n", false},
		{"", false},
	}
	for _, tt := range tests {
		maps, err := user.ParseIDMap(strings.NewReader(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := isIdentityMap(maps); got != tt.want {
			t.Errorf("isIdentityMap(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
