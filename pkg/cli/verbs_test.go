package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/internal/golden"
	"github.com/kubernix/kubernix/pkg/cli/common"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// walk calls fn for cmd and every command below it, depth first.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// TestVerbFlags: each verb takes the flags it uses and no other (the
// golden file testdata/flags.txt lists them per verb; -update rewrites
// it), and the verbs that act on a cluster all take the same selector.
func TestVerbFlags(t *testing.T) {
	root := NewRootCommand(common.Streams{}, nil)
	var b strings.Builder
	walk(root, func(c *cobra.Command) {
		var names []string
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden {
				names = append(names, "--"+f.Name)
			}
		})
		fmt.Fprintf(&b, "%s: %s\n", c.CommandPath(), strings.Join(names, " "))
	})
	golden.Check(t, filepath.Join("testdata", "flags.txt"), []byte(b.String()), *update)
	selector := []string{"config", "name", "state-dir"}
	for _, path := range []string{"down", "delete", "kubeconfig", "status", "logs", "env", "shell", "image list", "image load"} {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range selector {
			if c.LocalFlags().Lookup(name) == nil {
				t.Errorf("kubernix %s has no --%s", path, name)
			}
		}
		if c.LocalFlags().Lookup("nodes") != nil {
			t.Errorf("kubernix %s takes --nodes, a setting of up", path)
		}
	}
}

// TestAliasEveryVerb: --root, the Rust kubernix's name of --state-dir,
// works on every verb that takes --state-dir (pflag normalizes names per
// flag set: an alias on the root command's set alone did not reach them).
func TestAliasEveryVerb(t *testing.T) {
	var paths [][]string
	walk(NewRootCommand(common.Streams{}, nil), func(c *cobra.Command) {
		if c.LocalFlags().Lookup("state-dir") != nil {
			paths = append(paths, strings.Fields(strings.TrimPrefix(c.CommandPath(), "kubernix")))
		}
	})
	if len(paths) < 8 {
		t.Fatalf("only %d verbs take --state-dir: %q", len(paths), paths)
	}
	for _, path := range paths {
		t.Run(strings.Join(path, "_"), func(t *testing.T) {
			root := NewRootCommand(common.Streams{}, nil)
			c, rest, err := root.Find(append(path, "--root", "/tmp/kx-alias"))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ParseFlags(rest); err != nil {
				t.Fatalf("kubernix %s --root: %v", strings.Join(path, " "), err)
			}
			if got := c.Flags().Lookup("state-dir").Value.String(); got != "/tmp/kx-alias" {
				t.Errorf("kubernix %s --root /tmp/kx-alias: --state-dir is %q", strings.Join(path, " "), got)
			}
		})
	}
}

// TestExitCodes: a usage error (unknown verb, flag or argument, a flag
// of another verb) exits 2 naming the verb's --help, as a configuration
// error does; a failure while running exits 1; help and success exit 0.
func TestExitCodes(t *testing.T) {
	home := t.TempDir()
	empty := t.TempDir()
	named := t.TempDir() // the state dir of a cluster named "other"
	if err := os.WriteFile(filepath.Join(named, "kubernix.toml"), []byte("name = 'other'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// config validate: a valid file (whose state dir must stay unmade),
	// one with an unknown key, one with a bad value; a missing file is a
	// problem of the configuration like any other (exit 2, as up --config).
	files := t.TempDir()
	valid, unknown, bad := filepath.Join(files, "valid.toml"), filepath.Join(files, "unknown.toml"), filepath.Join(files, "bad.toml")
	badPolicy, notPolicy := filepath.Join(files, "bad-policy.toml"), filepath.Join(files, "policy.yaml")
	for file, text := range map[string]string{
		notPolicy: "apiVersion: v1\nkind: ConfigMap\n",
		badPolicy: "audit_policy = 'policy.yaml'\nstate_dir = '" + filepath.Join(empty, "state") + "'\n",
		valid:     "apiVersion = 'kubernix.dev/v1alpha1'\nkind = 'Cluster'\nnodes = 2\nstate_dir = '" + filepath.Join(empty, "state") + "'\n",
		unknown:   "nodez = 2\nstate_dir = '" + filepath.Join(empty, "state") + "'\n",
		bad:       "apiVersion = 'kubernix.dev/v1alpha1'\nnodes = 0\nstate_dir = '" + filepath.Join(empty, "state") + "'\n",
	} {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "validate", valid}, 0, valid + ": valid"},
		{[]string{"config", "validate", unknown}, 2, unknown + `:1: unknown key "nodez"; did you mean nodes?`},
		{[]string{"config", "validate", bad}, 2, bad + ": invalid configuration (1 problem):\n--nodes 0"},
		{[]string{"config", "validate", filepath.Join(files, "missing.toml")}, 2, "missing.toml: no such file"},
		{[]string{"config", "validate", badPolicy}, 2, badPolicy + ": invalid configuration: --audit-policy " + notPolicy + ": not an audit policy"},
		{[]string{"config", "validate"}, 2, "accepts 1 arg(s), received 0"},
		{[]string{"config", "reference"}, 0, "| `nodes` | integer | `1` | `--nodes` | `KUBERNIX_NODES` |"},
		{[]string{"foo"}, 2, `unknown command "foo" for "kubernix"`},
		{[]string{"up", "foo"}, 2, "Run 'kubernix up --help' for usage."},
		{[]string{"up", "--name", "up", "extra"}, 2, `unknown command "extra"`},
		{[]string{"status", "--nodes", "7"}, 2, "unknown flag: --nodes"},
		{[]string{"down", "--cidr", "10.9.0.0/16"}, 2, "unknown flag: --cidr"},
		{[]string{"logs", "a", "b"}, 2, "Run 'kubernix logs --help'"},
		{[]string{"image", "foo"}, 2, `unknown command "foo" for "kubernix image"`},
		{[]string{"config", "foo"}, 2, `unknown command "foo" for "kubernix config"`},
		{[]string{"version", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"up", "--nodes", "three"}, 2, `invalid argument "three" for "--nodes"`},
		{[]string{"config", "view", "--nodes", "0"}, 2, "--nodes 0"},
		{[]string{"up", "--timeout", "0s", "--state-dir", empty}, 2, "--timeout 0s: must be positive"},
		{[]string{"down", "--timeout", "-5s", "--state-dir", empty}, 2, "--timeout -5s: must be positive"},
		{[]string{"delete", "--timeout", "0s", "--state-dir", empty}, 2, "--timeout 0s"},
		{[]string{"status", "--name", "mine", "--state-dir", named}, 2, `the cluster in ` + named + ` is named "other"`},
		{[]string{"status", "--root", empty}, 1, "no cluster"},
		{[]string{"logs", "--state-dir", empty}, 1, "no cluster"},
		{[]string{"config"}, 0, "kubernix config [command]"},
		{[]string{"version"}, 0, "kubernix"},
		{[]string{"status", "--help"}, 0, "--state-dir"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(context.Background(), common.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut},
				tt.args, []string{"HOME=" + home})
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errOut.String())
			}
			if all := out.String() + errOut.String(); !strings.Contains(all, tt.want) {
				t.Errorf("output does not mention %q:\n%s", tt.want, all)
			}
		})
	}
	if entries, _ := os.ReadDir(empty); len(entries) > 0 {
		t.Errorf("%s was written to", empty)
	}
}

// TestNoPersistentConfigFlags: only -v is global; a setting's flag on the
// root command would show (and be ignored) on every verb.
func TestNoPersistentConfigFlags(t *testing.T) {
	var names []string
	NewRootCommand(common.Streams{}, nil).PersistentFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if !slices.Equal(names, []string{"verbose"}) {
		t.Fatalf("persistent flags %q, want only verbose", names)
	}
}

// TestOutputParsed: -o json and -o yaml print what encoding/json and
// sigs.k8s.io/yaml read back to the same fields.
func TestOutputParsed(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), common.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut},
			[]string{"version", "-o", format}, nil)
		if code != 0 {
			t.Fatalf("version -o %s exited %d: %s", format, code, errOut.String())
		}
		var v struct {
			Kubernix string            `json:"kubernix"`
			Upstream map[string]string `json:"upstream"`
		}
		if err := yaml.Unmarshal(out.Bytes(), &v); err != nil { // JSON is YAML
			t.Fatalf("version -o %s: %v\n%s", format, err, out.String())
		}
		if v.Kubernix == "" || !strings.HasPrefix(v.Upstream["KUBERNETES_VERSION"], "v1.") {
			t.Errorf("version -o %s read back as %+v:\n%s", format, v, out.String())
		}
	}
}
