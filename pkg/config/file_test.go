package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadFileVersion: a file with the current version keys, or none
// (older files, and the kubernix.toml of clusters started before them),
// loads; another version or kind is refused naming the key and the
// versions known, and every unknown key is reported at once with its
// line and the key it is near.
func TestLoadFileVersion(t *testing.T) {
	tests := []struct {
		name string
		file string
		// want are substrings of the error ("{file}" is the path); none
		// means the file loads, with 3 nodes.
		want []string
	}{
		{name: "unversioned", file: "nodes = 3\n"},
		{name: "current", file: "apiVersion = 'kubernix.dev/v1alpha1'\nkind = 'Cluster'\nnodes = 3\n"},
		{name: "kind omitted", file: "apiVersion = 'kubernix.dev/v1alpha1'\nnodes = 3\n"},
		{name: "unknown version", file: "apiVersion = 'kubernix.dev/v2'\nkind = 'Cluster'\nnodes = 3\n",
			want: []string{"config file {file}: apiVersion 'kubernix.dev/v2': unknown version (known: kubernix.dev/v1alpha1)"}},
		{name: "kind's version", file: "apiVersion = 'kind.x-k8s.io/v1alpha4'\nkind = 'Cluster'\n",
			want: []string{"apiVersion 'kind.x-k8s.io/v1alpha4': unknown version (known: kubernix.dev/v1alpha1)"}},
		{name: "unknown kind", file: "apiVersion = 'kubernix.dev/v1alpha1'\nkind = 'Pod'\n",
			want: []string{"config file {file}: kind 'Pod': unknown kind (known: Cluster)"}},
		{name: "version not a string", file: "apiVersion = 1\n",
			want: []string{"apiVersion 1: unknown version"}},
		{name: "unknown keys", file: "nodes = 3\nnodez = 2\nnode-cidr = '10.10.0.0/24'\nkinds = 'x'\nfrobnicate = 1\n[nodes_extra]\nx = 1\n",
			want: []string{
				`config file {file}:2: unknown key "nodez"; did you mean nodes?`,
				`config file {file}:3: unknown key "node-cidr"; did you mean node_cidr?`,
				`config file {file}:4: unknown key "kinds"; did you mean kind?`,
				`config file {file}:5: unknown key "frobnicate"` + "\n",
				`config file {file}:6: unknown key "nodes_extra"` + "\n",
			}},
		{name: "syntax", file: "nodes = 3\nnodes 4\n", want: []string{"config file {file}:2:"}},
		{name: "missing", file: "", want: []string{"config file: open {file}: no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.toml")
			if tt.file != "" {
				if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load(nil, []string{"KUBERNIX_CONFIG=" + file})
			if len(tt.want) == 0 {
				if err != nil || cfg.Nodes != 3 {
					t.Fatalf("Load = %d nodes, %v; want 3 nodes, nil", cfg.Nodes, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load error %v does not wrap ErrInvalid", err)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "{file}", file); !strings.Contains(err.Error()+"\n", w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestNearest(t *testing.T) {
	tests := []struct{ key, want string }{
		{"nodez", "nodes"},
		{"node-cidr", "node_cidr"},
		{"NODE_CIDR", "node_cidr"},
		{"apiserver-port", "apiserver_port"},
		{"apiversion", "apiVersion"},
		{"log_levle", "log_level"},
		{"registry", "registry_port"},
		{"cluster", "cluster_cidr"},
		{"frobnicate", ""},
		{"x", ""},
		{"log", ""},
	}
	known := append([]string{APIVersionKey, KindKey}, Keys()...)
	for _, tt := range tests {
		if got := Nearest(tt.key, known); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestMarshalVersioned: Marshal (the kubernix.toml up records) starts
// with the version keys and reads back as the config it was made from.
func TestMarshalVersioned(t *testing.T) {
	cfg := Default()
	cfg.Nodes, cfg.StateDir = 2, t.TempDir()
	cfg.Resolve()
	b, err := Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := "apiVersion = 'kubernix.dev/v1alpha1'\nkind = 'Cluster'\n"; !strings.HasPrefix(string(b), want) {
		t.Fatalf("Marshal does not start with %q:\n%s", want, b)
	}
	file := filepath.Join(t.TempDir(), "kubernix.toml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(nil, []string{"KUBERNIX_CONFIG=" + file})
	if err != nil || got.String() != cfg.String() {
		t.Fatalf("read back (%v):\n%s\nwant:\n%s", err, got, cfg)
	}
}

// TestTypeErrors: a value of the wrong TOML type is named by its key and
// the type it takes, not by the Go struct field it decodes into.
func TestTypeErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"cidr = 5\n", ":1:8: cidr: a TOML integer, where a string belongs"},
		{"nodes = 'two'\n", ":1:9: nodes: a TOML string, where an integer (or [[nodes]] tables) belongs"},
		{"feature_gates = { A = 'yes' }\n", ":1:23: feature_gates: a TOML string, where a table of booleans belongs"},
		{"[[nodes]]\nports = [{ host_port = '80', node_port = 1 }]\n", ":2:24: host_port: a TOML string, where an integer belongs"},
		{"[components.kubelet]\nargs = '--x'\n", ":2:8: args: a TOML string, where an array of strings belongs"},
	}
	for _, tt := range tests {
		file := filepath.Join(t.TempDir(), "k.toml")
		if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(nil, []string{"KUBERNIX_CONFIG=" + file})
		if err == nil || !strings.Contains(err.Error(), file+tt.want) {
			t.Errorf("%q: %v\nwant %q", tt.file, err, file+tt.want)
		}
	}
}
