package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/cli/common"
)

// TestBadInput runs the CLI with invalid input: each must exit 2 with one
// message listing every problem, and write nothing.
func TestBadInput(t *testing.T) {
	root := t.TempDir()
	long := filepath.Join(root, strings.Repeat("d", 100))
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"nodes 0", []string{"up", "--nodes", "0"}, []string{"--nodes 0"}},
		{"bad prefix", []string{"up", "--cluster-cidr", "10.0.0.0/33"}, []string{"10.0.0.0/33"}},
		{"overlap", []string{"up", "--service-cidr", "10.10.128.0/20"}, []string{"overlap"}},
		{"long socket path", []string{"up", "--state-dir", long}, []string{"socket path", "over the kernel's limit"}},
		{"all at once", []string{"up", "--nodes", "0", "--cluster-cidr", "10.0.0.0/33", "--state-dir", long},
			[]string{"3 problems", "--nodes 0", "10.0.0.0/33", "socket path"}},
		{"unknown flag value", []string{"up", "--executor", "vm"}, []string{`--executor "vm"`}},
		{"unknown flag", []string{"up", "--bogus"}, []string{"unknown flag"}},
		{"bad int", []string{"config", "view", "--nodes", "three"}, []string{"--nodes"}},
		{"bad env", []string{"config", "view"}, []string{"KUBERNIX_NODES"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(root, "state-"+strings.ReplaceAll(tt.name, " ", "-"))
			args := append([]string{}, tt.args...)
			if !strings.Contains(strings.Join(args, " "), "--state-dir") {
				args = append(args, "--state-dir", state)
			}
			env := []string{"HOME=" + root}
			if tt.name == "bad env" {
				env = append(env, "KUBERNIX_NODES=three")
			}
			var out, errOut bytes.Buffer
			code := Run(context.Background(), common.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args, env)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, errOut.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errOut.String())
				}
			}
			for _, p := range []string{state, long} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s was created (stat: %v)", p, err)
				}
			}
		})
	}
}

// TestConfigView prints the effective config, flags over environment.
func TestConfigView(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), common.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut},
		[]string{"config", "view", "--nodes", "3", "--state-dir", t.TempDir()}, []string{"KUBERNIX_NODES=2", "KUBERNIX_NAME=envname"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, w := range []string{"nodes = 3", "name = 'envname'", "cluster_cidr = '10.10.128.0/17'"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("config view lacks %q:\n%s", w, out.String())
		}
	}
}
