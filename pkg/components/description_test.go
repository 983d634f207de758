package components

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/process"
)

// TestEnvironPath checks the PATH and NOTIFY_SOCKET a component's process
// gets: the supervisor's PATH with /usr/sbin and /sbin appended where it
// lacks them (an ordinary Debian user's PATH has neither), a PATH of
// Command.Env as it is, and never NOTIFY_SOCKET.
func TestEnvironPath(t *testing.T) {
	tests := []struct {
		name, supervisor string
		env              []string
		want             []string
	}{
		{"user PATH without sbin", "/usr/local/bin:/usr/bin:/bin", nil, []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}},
		{"root PATH kept", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", nil, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
		{"one of them missing", "/usr/sbin:/usr/bin:/bin", []string{"A=1"}, []string{"PATH=/usr/sbin:/usr/bin:/bin:/sbin"}},
		{"Command.Env's PATH as it is", "/usr/bin:/bin", []string{"PATH=/tools"}, []string{"PATH=/tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.supervisor)
			t.Setenv("NOTIFY_SOCKET", "/run/notify")
			d := Description{Command: process.Command{Env: tt.env}}
			var got []string
			for _, kv := range d.Environ() {
				if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
					got = append(got, kv)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("PATH and NOTIFY_SOCKET = %q, want %q", got, tt.want)
			}
		})
	}
}
