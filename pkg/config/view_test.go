package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// view is `kubernix config view`: the config of args and env, and its
// MarshalExplicit text.
func view(t *testing.T, args, env []string) (Config, string) {
	t.Helper()
	fs := pflag.NewFlagSet("view", pflag.ContinueOnError)
	flags := NewFlags()
	flags.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, explicit, err := LoadExplicit(flags, env)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MarshalExplicit(cfg, explicit)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, string(b)
}

// TestViewRoundTrip: what config view prints, saved and read back with
// --config, is the config it printed; and a setting edited in the saved
// file moves the values derived from it (a view that wrote the derived
// values as settings kept the old ones). It starts with the version keys,
// set.
func TestViewRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.toml")
	if err := os.WriteFile(file, []byte("nodes = 2\ncidr = '10.40.0.0/16'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	versioned := filepath.Join(dir, "versioned.toml")
	if err := os.WriteFile(versioned, []byte("apiVersion = 'kubernix.dev/v1alpha1'\nkind = 'Cluster'\nnodes = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  []string
		// edit replaces a line of the saved view; want* check the result.
		edit, with string
		want       func(Config) bool
	}{
		{name: "defaults", args: nil},
		{name: "flags", args: []string{"--nodes", "3", "--cidr", "10.30.0.0/16", "--addons", "coredns", "--root", "/tmp/kx-state"}},
		{name: "env and file", args: []string{"--config", file}, env: []string{"KUBERNIX_NAME=envname", "KUBERNIX_NO_SHELL=true"}},
		{name: "versioned file", args: []string{"--config", versioned}},
		{name: "the example file's tables", args: []string{"--config", filepath.Join("..", "..", "examples", "cluster.toml"), "--feature-gates", "A=true"}},
		{name: "explicit derived value", args: []string{"--service-cidr", "10.10.48.0/20"}},
		{name: "cidr edited", args: []string{"--cidr", "10.30.0.0/16"},
			edit: "cidr = '10.30.0.0/16'", with: "cidr = '10.50.0.0/16'",
			want: func(c Config) bool {
				return c.NodeCIDR == "10.50.0.0/24" && c.ServiceCIDR == "10.50.16.0/20" && c.ClusterCIDR == "10.50.128.0/17"
			}},
		{name: "name edited", args: []string{"--name", "one"},
			edit: "name = 'one'", with: "name = 'two'",
			want: func(c Config) bool { return strings.HasSuffix(c.StateDir, "/two") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, text := view(t, tt.args, tt.env)
			// The version keys come first, set.
			if head := viewHeader + "apiVersion = 'kubernix.dev/v1alpha1'\nkind = 'Cluster'\n"; !strings.HasPrefix(text, head) {
				t.Fatalf("view does not start with %q:\n%s", head, text)
			}
			if tt.edit != "" {
				if !strings.Contains(text, tt.edit+"\n") {
					t.Fatalf("view has no line %q:\n%s", tt.edit, text)
				}
				text = strings.Replace(text, tt.edit+"\n", tt.with+"\n", 1)
			}
			saved := filepath.Join(t.TempDir(), "view.toml")
			if err := os.WriteFile(saved, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			got, again := view(t, []string{"--config", saved}, nil)
			if tt.want != nil {
				if !tt.want(got) {
					t.Fatalf("after editing %q to %q, read back:\n%s", tt.edit, tt.with, again)
				}
				return
			}
			if !reflect.DeepEqual(got, cfg) {
				t.Fatalf("read back:\n%s\nwant:\n%s", got, cfg)
			}
			if again != text {
				t.Errorf("the view of the saved view differs:\n%s\nwant:\n%s", again, text)
			}
		})
	}
}

// TestLoadExplicit names the settings each source set, and no other.
func TestLoadExplicit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "k.toml")
	if err := os.WriteFile(file, []byte("nodes = 2\nlog_level = 'warn'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	flags := NewFlags()
	flags.Bind(fs, "name", "state_dir", "cidr")
	if err := fs.Parse([]string{"--config", file, "--root", "/tmp/x", "--cidr", "10.20.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	_, explicit, err := LoadExplicit(flags, []string{"KUBERNIX_REGISTRY_PORT=0"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"state_dir", "nodes", "cidr", "registry_port", "log_level"}
	if !slices.Equal(explicit, want) {
		t.Fatalf("explicit = %q, want %q", explicit, want)
	}
}
