package components

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/process"
)

// TestEnviron checks the whole environment a component's process gets:
// the supervisor's PATH (with /usr/sbin and /sbin appended where it lacks
// them: an ordinary Debian user's PATH has neither), HOME, TZ and proxies,
// what Command.Env sets on top (a PATH as it is), and nothing else of the
// supervisor's: not NOTIFY_SOCKET, not the variables components read
// their settings from (ETCD_NAME, REGISTRY_HTTP_ADDR, CONTAINERD_ADDRESS,
// KUBECONFIG).
func TestEnviron(t *testing.T) {
	tests := []struct {
		name, supervisor string
		env              []string
		want             []string
	}{
		{"user PATH without sbin", "/usr/local/bin:/usr/bin:/bin", nil,
			[]string{"HOME=/home/u", "HTTPS_PROXY=http://proxy:3128", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "TZ=UTC"}},
		{"root PATH kept", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", nil,
			[]string{"HOME=/home/u", "HTTPS_PROXY=http://proxy:3128", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TZ=UTC"}},
		{"one of them missing", "/usr/sbin:/usr/bin:/bin", []string{"A=1"},
			[]string{"A=1", "HOME=/home/u", "HTTPS_PROXY=http://proxy:3128", "PATH=/usr/sbin:/usr/bin:/bin:/sbin", "TZ=UTC"}},
		{"Command.Env's PATH as it is, and its own", "/usr/bin:/bin", []string{"PATH=/tools", "REGISTRY_HTTP_ADDR=127.0.0.1:5001"},
			[]string{"HOME=/home/u", "HTTPS_PROXY=http://proxy:3128", "PATH=/tools", "REGISTRY_HTTP_ADDR=127.0.0.1:5001", "TZ=UTC"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range map[string]string{
				"PATH": tt.supervisor, "HOME": "/home/u", "TZ": "UTC", "HTTPS_PROXY": "http://proxy:3128",
				"NOTIFY_SOCKET": "/run/notify", "ETCD_NAME": "x", "REGISTRY_HTTP_ADDR": "0.0.0.0:1",
				"CONTAINERD_ADDRESS": "/x.sock", "KUBECONFIG": "/k", "LANG": "de_DE.UTF-8",
			} {
				t.Setenv(k, v)
			}
			d := Description{Command: process.Command{Env: tt.env}}
			if got := d.Environ(); !slices.Equal(got, tt.want) {
				t.Errorf("Environ() = %q, want %q", got, tt.want)
			}
		})
	}
}

// clearEnv empties the test's environment, restored when it ends.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
		os.Unsetenv(k)
	}
}
