package process

import (
	"slices"
	"testing"
)

func TestEnviron(t *testing.T) {
	tests := []struct {
		name       string
		supervisor []string
		set        []string
		want       []string
	}{
		{"nothing", nil, nil, []string{}},
		{
			"what components read stays behind",
			[]string{"ETCD_NAME=x", "ETCD_DATA_DIR=/x", "REGISTRY_HTTP_ADDR=0.0.0.0:1", "CONTAINERD_ADDRESS=/x.sock",
				"KUBECONFIG=/k", "KUBERNIX_NODES=3", "GODEBUG=x=1", "GOMAXPROCS=1", "LANG=de_DE.UTF-8", "LC_ALL=C",
				"NOTIFY_SOCKET=/run/n", "XDG_RUNTIME_DIR=/run/user/1", "TMPDIR=/t", "SHELL=/bin/zsh", "USER=u"},
			nil, []string{},
		},
		{
			"PATH, HOME, TZ and proxies pass, sorted",
			[]string{"TZ=Europe/Berlin", "PATH=/usr/bin", "SHELL=/bin/sh", "HOME=/home/u", "https_proxy=http://p:1",
				"HTTPS_PROXY=http://p:1", "HTTP_PROXY=http://p:2", "http_proxy=http://p:2", "NO_PROXY=10.0.0.0/8", "no_proxy=localhost"},
			nil,
			[]string{"HOME=/home/u", "HTTPS_PROXY=http://p:1", "HTTP_PROXY=http://p:2", "NO_PROXY=10.0.0.0/8", "PATH=/usr/bin",
				"TZ=Europe/Berlin", "http_proxy=http://p:2", "https_proxy=http://p:1", "no_proxy=localhost"},
		},
		{
			"set replaces and adds",
			[]string{"PATH=/usr/bin", "HOME=/home/u", "ETCD_NAME=x"},
			[]string{"PATH=/tools", "REGISTRY_HTTP_ADDR=127.0.0.1:5001"},
			[]string{"HOME=/home/u", "PATH=/tools", "REGISTRY_HTTP_ADDR=127.0.0.1:5001"},
		},
		{"the last of a key wins", []string{"HOME=/a", "HOME=/b"}, []string{"A=1", "A=2"}, []string{"A=2", "HOME=/b"}},
		{"malformed entries are dropped", []string{"HOME", "=x"}, []string{"PATH", "=y"}, []string{}},
		{"an empty value passes", []string{"NO_PROXY="}, nil, []string{"NO_PROXY="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Environ(tt.supervisor, tt.set...); !slices.Equal(got, tt.want) {
				t.Errorf("Environ(%q, %q) = %q, want %q", tt.supervisor, tt.set, got, tt.want)
			}
		})
	}
}

func TestRedactEnv(t *testing.T) {
	in := []string{"HTTPS_PROXY=http://user:secret@proxy:3128", "http_proxy=http://user@proxy:3128",
		"NO_PROXY=localhost,10.0.0.0/8", "PATH=/usr/bin", "X=%zz", "Y"}
	want := []string{"HTTPS_PROXY=http://user:xxxxx@proxy:3128", "http_proxy=http://user@proxy:3128",
		"NO_PROXY=localhost,10.0.0.0/8", "PATH=/usr/bin", "X=%zz", "Y"}
	if got := RedactEnv(in); !slices.Equal(got, want) {
		t.Errorf("RedactEnv = %q, want %q", got, want)
	}
	if in[0] != "HTTPS_PROXY=http://user:secret@proxy:3128" {
		t.Errorf("RedactEnv changed its argument: %q", in)
	}
}
