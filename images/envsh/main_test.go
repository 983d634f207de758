package main

import "testing"

func TestShellFor(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{name: "none", env: nil, want: ash},
		{name: "shell names", env: []string{"PATH=/bin", "_x=1", "KUBERNETES_SERVICE_HOST=10.0.0.1", "a9=", "EMPTY="}, want: ash},
		{name: "value with dashes and equals", env: []string{"CONFIG_DATA_1=value-1=x"}, want: ash},
		{name: "dash", env: []string{"PATH=/bin", "data-1=value-1"}, want: zsh},
		{name: "leading digit", env: []string{"1-data-1=value-1"}, want: zsh},
		{name: "symbols", env: []string{"#@!data-1=value-1"}, want: zsh},
		{name: "dollar", env: []string{"$_-data-1=value-1"}, want: zsh},
		{name: "no equals sign", env: []string{"data-1"}, want: zsh},
		{name: "empty name", env: []string{"=x"}, want: zsh},
	}
	for _, tt := range tests {
		if got := shellFor(tt.env); got != tt.want {
			t.Errorf("%s: shellFor(%q) = %s, want %s", tt.name, tt.env, got, tt.want)
		}
	}
}
