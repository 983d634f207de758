package up

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
)

func TestCheckRootlessKubeconfig(t *testing.T) {
	tests := []struct {
		path string
		want string // "" means accepted
	}{
		{"", ""},
		{"/home/u/.kube/config", ""},
		{"/tmp/kc", ""},
		{"/etcetera/kc", ""},
		{"/run/user/1000/kc", "--kubeconfig /run/user/1000/kc: a rootless cluster sees /run as a private copy"},
		{"/var/lib/kc", "sees /var/lib as"},
		{"/etc", "sees /etc as"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := checkRootlessKubeconfig(tt.path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}
