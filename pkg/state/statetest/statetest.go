// Package statetest makes state dirs for tests as up leaves them: a
// cluster's marker and record, its admin kubeconfig, short temp dirs for
// node sockets.
package statetest

import (
	"os"
	"path/filepath"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/config"
	"k8s.io/client-go/tools/clientcmd"
)

// Garbage is one line of garbage, as appended to a record in issue #23.
const Garbage = "this is not TOML\n"

// ShortDir is a temp dir whose path is short enough for the sockets of a
// node in it (t.TempDir's, named after the test, may not be).
func ShortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Mkdirs makes each dir.
func Mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// MustWrite writes content to path as up writes its records
// (state.WriteFile: atomically, owner-only, making its directory).
func MustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte(content), config.StateFileMode); err != nil {
		t.Fatal(err)
	}
}

// AppendTo appends text to the file at path.
func AppendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// WriteAdminKubeconfig writes the admin kubeconfig of the state dir p with
// the current context ctx, as every up writes it.
func WriteAdminKubeconfig(t *testing.T, p config.Paths, ctx string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p.Kubeconfig("admin")), 0o700); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.CurrentContext = ctx
	if err := clientcmd.WriteToFile(*kc, p.Kubeconfig("admin")); err != nil {
		t.Fatal(err)
	}
}

// MakeCluster writes a state dir at dir as up leaves it: the marker and
// kubernix.toml of a cluster of name with nodes nodes.
func MakeCluster(t *testing.T, dir, name string, nodes int) config.Paths {
	t.Helper()
	cfg := config.Default()
	cfg.Name, cfg.Nodes, cfg.StateDir = name, nodes, dir
	p := cfg.Paths()
	if err := p.MakeState(); err != nil {
		t.Fatal(err)
	}
	b, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	MustWrite(t, p.ConfigFile(), string(b))
	return p
}
