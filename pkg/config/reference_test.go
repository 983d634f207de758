package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/kubernix/kubernix/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files (docs/config.md)")

// TestReference keeps docs/config.md, the reference of every key, in
// sync with the Config struct: -update rewrites it.
func TestReference(t *testing.T) {
	goldenFile := filepath.Join("..", "..", "docs", "config.md")
	got := Reference()
	golden.Check(t, goldenFile, got, *update)
	for _, key := range append([]string{APIVersionKey, KindKey}, Keys()...) {
		if !bytes.Contains(got, []byte("| `"+key+"` |")) {
			t.Errorf("the reference has no row for %s", key)
		}
	}
}

// TestExampleFile: examples/cluster.toml loads and validates (its state
// dir redirected to a temporary one), is of the current version, and
// mentions every key, set or commented out, so it cannot fall behind.
func TestExampleFile(t *testing.T) {
	file := filepath.Join("..", "..", "examples", "cluster.toml")
	cfg, explicit, err := LoadExplicit(nil, []string{"KUBERNIX_CONFIG=" + file, "KUBERNIX_STATE_DIR=" + filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Nodes != 2 || !slices.Contains(explicit, "cidr") {
		t.Errorf("example sets nodes %d and %q, want 2 nodes and a cidr", cfg.Nodes, explicit)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range append([]string{APIVersionKey, KindKey}, Keys()...) {
		if !regexp.MustCompile(`(?m)^((# )?` + key + ` = |\[\[?` + key + `[.\]])`).Match(text) {
			t.Errorf("%s does not mention %s (as %q, %q or a table [%s...])", file, key, key+" = ", "# "+key+" = ", key)
		}
	}
	// The values shown commented out are what kubernix uses when unset.
	var shown nodesDocument
	if err := toml.Unmarshal(regexp.MustCompile(`(?m)^# (\w+ = )`).ReplaceAll(text, []byte("$1")), &shown); err != nil {
		t.Fatal(err)
	}
	got, want := reflect.ValueOf(shown.Config), reflect.ValueOf(cfg)
	for _, field := range settings() {
		switch tomlKey(field) {
		case "state_dir", "bin_dir", "bundle_dir", "cni_dir", "kubeconfig", "cgroup_parent", "shell", "executor", "audit_policy", "kubernetes_version":
			continue // host-dependent, or examples of a value
		case "nodes":
			continue // the [[nodes]] tables
		}
		g, w := got.FieldByIndex(field.Index), want.FieldByIndex(field.Index)
		if g.Kind() == reflect.Slice && g.Len() == 0 && w.Len() == 0 {
			continue // [] shown for an unset (nil) list
		}
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			t.Errorf("%s shows %s = %v, but it reads as %v", file, tomlKey(field), got.FieldByIndex(field.Index), want.FieldByIndex(field.Index))
		}
	}
	if !regexp.MustCompile(`(?m)^apiVersion = '` + regexp.QuoteMeta(APIVersion) + `'$`).Match(text) {
		t.Errorf("%s does not set apiVersion = '%s'", file, APIVersion)
	}
}
