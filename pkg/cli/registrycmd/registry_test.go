package registrycmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dockerconfig "github.com/docker/cli/cli/config"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/config"
)

// TestLogin: login stores the cluster's account for localhost:<its
// registry port> in the Docker config of the environment, and
// --password-stdout prints only the password, storing nothing; a cluster
// without an account yet or without a registry is an error saying so.
func TestLogin(t *testing.T) {
	tests := []struct {
		name      string
		record    string // kubernix.toml
		account   bool   // EnsureCredentials ran (the registry started)
		args      []string
		wantOut   string // "PASSWORD" stands for the account's password
		wantErr   string
		wantAuths []string // hosts in the Docker config afterwards
	}{
		{"login", "name = 'dev'\nregistry_port = 5123\n", true, nil,
			"logged in to localhost:5123 as kubernix (DOCKER/config.json)\n", "", []string{"localhost:5123"}},
		{"password only", "name = 'dev'\nregistry_port = 5123\n", true, []string{"--password-stdout"},
			"PASSWORD\n", "", nil},
		{"no account yet", "name = 'dev'\nregistry_port = 5123\n", false, nil,
			"", `cluster "dev" has no registry account yet in STATE/registry-auth: ` + "`kubernix up` makes it", nil},
		{"no registry", "name = 'dev'\nregistry_port = 0\n", true, nil,
			"", `cluster "dev" runs no local registry`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, docker := t.TempDir(), filepath.Join(t.TempDir(), "docker")
			if err := os.WriteFile(filepath.Join(state, "kubernix.toml"), []byte(tt.record), 0o600); err != nil {
				t.Fatal(err)
			}
			var cred registry.Credentials
			if tt.account {
				var err error
				if cred, err = registry.EnsureCredentials(filepath.Join(state, "registry-auth")); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			env := &common.Env{Streams: common.Streams{Out: &out, Err: &out}, Flags: config.NewFlags(),
				Environ: []string{"HOME=" + t.TempDir(), "DOCKER_CONFIG=" + docker}}
			cmd := NewCommand(env)
			cmd.SetArgs(append([]string{"login", "--state-dir", state}, tt.args...))
			err := cmd.ExecuteContext(context.Background())
			wantErr := strings.ReplaceAll(tt.wantErr, "STATE", state)
			if (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("err = %v, want %q", err, wantErr)
			}
			if tt.name == "no registry" && !errors.Is(err, config.ErrInvalid) {
				t.Errorf("err = %v, want it to wrap config.ErrInvalid (exit 2)", err)
			}
			if want := strings.NewReplacer("PASSWORD", cred.Password, "DOCKER", docker).Replace(tt.wantOut); err == nil && out.String() != want {
				t.Errorf("output %q, want %q", out.String(), want)
			}
			cf, err := dockerconfig.Load(docker)
			if err != nil {
				t.Fatal(err)
			}
			var hosts []string
			for host, auth := range cf.GetAuthConfigs() {
				hosts = append(hosts, host)
				if auth.Username != cred.Username || auth.Password != cred.Password {
					t.Errorf("%s: stored %s:%s, want the account %s:%s", host, auth.Username, auth.Password, cred.Username, cred.Password)
				}
			}
			if strings.Join(hosts, ",") != strings.Join(tt.wantAuths, ",") {
				t.Errorf("Docker config logs in to %q, want %q", hosts, tt.wantAuths)
			}
			if fi, err := os.Stat(cf.Filename); err == nil && fi.Mode() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", cf.Filename, fi.Mode())
			}
		})
	}
}

func TestDockerConfigDir(t *testing.T) {
	tests := []struct {
		environ []string
		want    string
	}{
		{[]string{"HOME=/home/u", "DOCKER_CONFIG=/d"}, "/d"},
		{[]string{"DOCKER_CONFIG=/a", "DOCKER_CONFIG=/b"}, "/b"},
		{[]string{"HOME=/home/u", "DOCKER_CONFIG="}, "/home/u/.docker"},
		{[]string{"XHOME=/x"}, ""},
	}
	for _, tt := range tests {
		if got := dockerConfigDir(tt.environ); got != tt.want {
			t.Errorf("dockerConfigDir(%q) = %q, want %q", tt.environ, got, tt.want)
		}
	}
}
