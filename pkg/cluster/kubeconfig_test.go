package cluster

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/kubeconfig"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestUserKubeconfigRecord checks that down removes the context from the
// file up merged it into, whatever down's environment, and that a
// kubeconfig that cannot be merged or changed is a warning, never an
// error.
func TestUserKubeconfigRecord(t *testing.T) {
	const malformed = "apiVersion: v1\nclusters: [\n"
	tests := []struct {
		name string
		// before is the user's kubeconfig before up ("": none).
		before string
		// breakAfterUp replaces the file's content after up.
		breakAfterUp string
		wantWarning  bool
	}{
		{name: "merged, then removed from the recorded file"},
		{name: "malformed before up: warning, nothing recorded", before: malformed, wantWarning: true},
		{name: "malformed after up: down goes on", breakAfterUp: malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pl := plantest.Plan(t, 1)
			pl.Paths = config.Paths{State: filepath.Join(dir, "state")}
			b, err := pki.Ensure(pki.Spec{Dir: pl.Paths.PKI(), ClusterName: pl.Cfg.Name, APIServerIPs: []net.IP{net.ParseIP("10.10.0.1")}})
			if err != nil {
				t.Fatal(err)
			}
			if err := kubeconfig.Write(pl.Paths.Kubeconfig("admin"), pl.Cfg.ContextName(), "https://10.10.0.1:6443", b.CA.Cert, b.Admin); err != nil {
				t.Fatal(err)
			}
			user := filepath.Join(dir, "user", "config")
			if tt.before != "" {
				if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(user, []byte(tt.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("SUDO_USER", "")
			t.Setenv("KUBECONFIG", user)
			c := &Cluster{Plan: pl, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			warning := c.mergeUserKubeconfig()
			if got := warning != ""; got != tt.wantWarning {
				t.Fatalf("warning %q, want one: %v", warning, tt.wantWarning)
			}
			if tt.wantWarning {
				admin := pl.Paths.Kubeconfig("admin")
				for _, want := range []string{user, "KUBECONFIG=" + admin + " kubectl", "kubernix env --name golden --state-dir " + pl.Paths.State} {
					if !strings.Contains(warning, want) {
						t.Errorf("warning %q does not say %q", warning, want)
					}
				}
				if got, _ := os.ReadFile(user); string(got) != tt.before {
					t.Errorf("the user's kubeconfig changed: %q", got)
				}
			}
			if tt.breakAfterUp != "" {
				if err := os.WriteFile(user, []byte(tt.breakAfterUp), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(user)

			// down runs elsewhere: another KUBECONFIG, another HOME.
			t.Setenv("KUBECONFIG", filepath.Join(dir, "elsewhere"))
			t.Setenv("HOME", filepath.Join(dir, "home"))
			if err := removeUserKubeconfig(pl, c.Log); err != nil {
				t.Fatalf("removeUserKubeconfig: %v", err)
			}
			_, recErr := os.Stat(state.UserKubeconfigFile(pl.Paths))
			switch {
			case tt.wantWarning || tt.breakAfterUp != "":
				if after, _ := os.ReadFile(user); !bytes.Equal(before, after) {
					t.Errorf("down changed a kubeconfig it could not parse: %q", after)
				}
				if kept := recErr == nil; kept != (tt.breakAfterUp != "") {
					t.Errorf("record kept: %v, want %v (a context down could not remove stays recorded)", kept, !kept)
				}
			default:
				cfg, err := clientcmd.LoadFromFile(user)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Contexts[pl.Cfg.ContextName()] != nil || cfg.Clusters[pl.Cfg.ContextName()] != nil {
					t.Error("context left in the recorded kubeconfig")
				}
				if recErr == nil {
					t.Error("record kept after the context was removed")
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "elsewhere")); err == nil {
				t.Error("down wrote down's own $KUBECONFIG")
			}
		})
	}
}
