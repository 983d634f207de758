package cluster

import (
	"bytes"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/kubeconfig"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestStandaloneKubeconfig checks `kubernix kubeconfig`'s builder: the
// server for the host (rootlesskit's forward for a rootless cluster) or
// the bridge (internal), the CA and admin certificate and key embedded,
// one context named kubernix-<name>, current, and that the encoded file
// loads back the same without the cluster's files.
func TestStandaloneKubeconfig(t *testing.T) {
	tests := []struct {
		name     string
		rootless bool
		internal bool
		want     string
	}{
		{"root, host", false, false, "https://10.10.0.1:6443"},
		{"root, internal", false, true, "https://10.10.0.1:6443"},
		{"rootless, host", true, false, "https://127.0.0.1:7443"},
		{"rootless, internal", true, true, "https://10.10.0.1:6443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := plantest.Plan(t, 1)
			pl.Paths = config.Paths{State: t.TempDir()}
			b, err := pki.Ensure(pl.PKISpec())
			if err != nil {
				t.Fatal(err)
			}
			if tt.rootless {
				if err := state.WriteRootless(pl.Paths, state.RootlessState{HostAPIServer: netip.MustParseAddrPort("127.0.0.1:7443")}); err != nil {
					t.Fatal(err)
				}
			}
			kc, err := StandaloneKubeconfig(pl, tt.internal)
			if err != nil {
				t.Fatal(err)
			}
			data, err := clientcmd.Write(*kc)
			if err != nil {
				t.Fatal(err)
			}
			// What a copy elsewhere sees: the bytes alone.
			got, err := clientcmd.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			const name = "kubernix-golden"
			if got.CurrentContext != name || len(got.Contexts) != 1 || len(got.Clusters) != 1 || len(got.AuthInfos) != 1 {
				t.Fatalf("want one context, cluster, user %q, current: %+v", name, got)
			}
			c, u := got.Clusters[name], got.AuthInfos[name]
			if ctx := got.Contexts[name]; ctx == nil || ctx.Cluster != name || ctx.AuthInfo != name || c == nil || u == nil {
				t.Fatalf("context %q does not refer to cluster and user %q: %+v", name, name, got)
			}
			if c.Server != tt.want {
				t.Errorf("server %q, want %q", c.Server, tt.want)
			}
			for what, pair := range map[string]struct {
				got  []byte
				file string
			}{"CA": {c.CertificateAuthorityData, b.CA.Cert}, "cert": {u.ClientCertificateData, b.Admin.Cert}, "key": {u.ClientKeyData, b.Admin.Key}} {
				want, err := os.ReadFile(pair.file)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(pair.got, want) {
					t.Errorf("%s not embedded from %s", what, pair.file)
				}
			}
			if c.CertificateAuthority != "" || u.ClientCertificate != "" || u.ClientKey != "" {
				t.Errorf("file references in a standalone kubeconfig: %q %q %q", c.CertificateAuthority, u.ClientCertificate, u.ClientKey)
			}
		})
	}
	t.Run("no PKI", func(t *testing.T) {
		pl := plantest.Plan(t, 1)
		pl.Paths = config.Paths{State: t.TempDir()}
		if _, err := StandaloneKubeconfig(pl, false); err == nil {
			t.Error("want an error without the cluster's PKI")
		}
	})
}

// TestConfigKubeconfig checks --kubeconfig (Config.Kubeconfig): up merges
// the context into that file, not into $KUBECONFIG, created owned by the
// user who ran sudo (as root: root), and down removes it from that file.
func TestConfigKubeconfig(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	tests := []struct {
		name    string
		sudo    []string // SUDO_USER, SUDO_UID, SUDO_GID
		wantUID string
	}{
		{"no sudo: the process's", []string{"", "", ""}, strconv.Itoa(os.Geteuid())},
		{"sudo: the invoking user's", []string{nobody.Username, nobody.Uid, nobody.Gid}, nobody.Uid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sudo[0] != "" && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			pl := plantest.Plan(t, 1)
			pl.Paths = config.Paths{State: filepath.Join(dir, "state")}
			pl.Cfg.Kubeconfig = filepath.Join(dir, "chosen", "kc")
			b, err := pki.Ensure(pl.PKISpec())
			if err != nil {
				t.Fatal(err)
			}
			if err := kubeconfig.Write(pl.Paths.Kubeconfig("admin"), pl.Cfg.ContextName(), pl.APIServerURL(), b.CA.Cert, b.Admin); err != nil {
				t.Fatal(err)
			}
			userDefault := filepath.Join(dir, "default")
			t.Setenv("SUDO_USER", tt.sudo[0])
			t.Setenv("SUDO_UID", tt.sudo[1])
			t.Setenv("SUDO_GID", tt.sudo[2])
			t.Setenv("KUBECONFIG", userDefault)
			c := &Cluster{Plan: pl, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if warning := c.mergeUserKubeconfig(); warning != "" {
				t.Fatal(warning)
			}
			got, err := clientcmd.LoadFromFile(pl.Cfg.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if got.CurrentContext != pl.Cfg.ContextName() || got.Contexts[pl.Cfg.ContextName()] == nil {
				t.Errorf("%s lacks the context: %+v", pl.Cfg.Kubeconfig, got)
			}
			if st, err := os.Stat(pl.Cfg.Kubeconfig); err != nil || strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Uid)) != tt.wantUID {
				t.Errorf("%s: owner %v (%v), want uid %s", pl.Cfg.Kubeconfig, st.Sys(), err, tt.wantUID)
			}
			if _, err := os.Stat(userDefault); err == nil {
				t.Errorf("up wrote $KUBECONFIG %s too", userDefault)
			}
			if err := removeUserKubeconfig(pl, c.Log); err != nil {
				t.Fatal(err)
			}
			if got, err = clientcmd.LoadFromFile(pl.Cfg.Kubeconfig); err != nil {
				t.Fatal(err)
			}
			if len(got.Contexts) != 0 || got.CurrentContext != "" {
				t.Errorf("down left the context in %s: %+v", pl.Cfg.Kubeconfig, got)
			}
		})
	}
}
