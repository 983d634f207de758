package host

import "testing"

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
		if got := isIdentityMap(tt.in); got != tt.want {
			t.Errorf("isIdentityMap(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
