package kubeconfig

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/pkg/pki"
)

const (
	testContext = "kubernix-test"
	testServer  = "https://10.10.0.1:6443"
)

// newPKI creates a CA and client certificates in a temporary directory.
func newPKI(t *testing.T) *pki.Bundle {
	t.Helper()
	b, err := pki.Ensure(pki.Spec{
		Dir:          filepath.Join(t.TempDir(), "pki"),
		ClusterName:  "test",
		APIServerIPs: []net.IP{net.ParseIP("10.10.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeSrc writes a cluster kubeconfig for contextName and returns its path.
func writeSrc(t *testing.T, b *pki.Bundle, contextName, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src", "kubeconfig")
	if err := Write(path, contextName, server, b.CA.Cert, b.Admin); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeOther writes a kubeconfig holding an unrelated context "other" whose
// CA is a relative file reference, and returns the config written.
func writeOther(t *testing.T, path string, current string) *clientcmdapi.Config {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example:443", CertificateAuthority: "other-ca.crt"}
	cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "other", Namespace: "apps"}
	cfg.Preferences.Colors = true
	cfg.CurrentContext = current
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

func checkNoLock(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file %s.lock left behind (%v)", path, err)
	}
}

// checkContext checks that the kubeconfig at path has contextName pointing
// at server with b's credentials, and that client-go builds a rest.Config
// from it.
func checkContext(t *testing.T, path, contextName, server string, b *pki.Bundle) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("LoadFromFile: %v", err)
	}
	kctx := cfg.Contexts[contextName]
	if kctx == nil || kctx.Cluster != contextName || kctx.AuthInfo != contextName {
		t.Fatalf("context %q: %+v", contextName, kctx)
	}
	rest, err := clientcmd.NewNonInteractiveClientConfig(*cfg, contextName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("rest config: %v", err)
	}
	if rest.Host != server {
		t.Errorf("host %q, want %q", rest.Host, server)
	}
	for _, f := range []struct {
		name string
		got  []byte
		file string
	}{
		{"CA", rest.CAData, b.CA.Cert},
		{"client certificate", rest.CertData, b.Admin.Cert},
		{"client key", rest.KeyData, b.Admin.Key},
	} {
		want, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.got, want) {
			t.Errorf("%s data differs from %s", f.name, f.file)
		}
	}
}

func TestWrite(t *testing.T) {
	b := newPKI(t)
	path := filepath.Join(t.TempDir(), "new-dir", "kubeconfig")
	if err := Write(path, testContext, testServer, b.CA.Cert, b.Admin); err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Dir(path), 0o700)
	checkContext(t, path, testContext, testServer, b)

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != testContext || len(cfg.Contexts) != 1 || len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 {
		t.Errorf("current %q, %d contexts, %d clusters, %d users; want one of each",
			cfg.CurrentContext, len(cfg.Contexts), len(cfg.Clusters), len(cfg.AuthInfos))
	}
	// The default loading path uses current-context.
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil || rest.Host != testServer {
		t.Errorf("default client config: host %v, err %v", rest, err)
	}
}

func TestWriteErrors(t *testing.T) {
	b := newPKI(t)
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name        string
		contextName string
		server      string
		ca          string
		client      pki.Pair
		want        string
	}{
		{"no context", "", testServer, b.CA.Cert, b.Admin, "context name is empty"},
		{"no server", testContext, "", b.CA.Cert, b.Admin, "server is empty"},
		{"missing CA", testContext, testServer, missing, b.Admin, "kubeconfig: read CA: "},
		{"missing cert", testContext, testServer, b.CA.Cert, pki.Pair{Cert: missing, Key: b.Admin.Key}, "read client certificate"},
		{"missing key", testContext, testServer, b.CA.Cert, pki.Pair{Cert: b.Admin.Cert, Key: missing}, "read client key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			err := Write(path, tt.contextName, tt.server, tt.ca, tt.client)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("file written despite the error (%v)", err)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	b := newPKI(t)
	tests := []struct {
		name      string
		setup     func(t *testing.T, dst string) *clientcmdapi.Config // returns the "other" entries, if any
		wantOther bool
		wantMode  fs.FileMode // 0: 0600
	}{
		{
			name:  "into missing file and directory",
			setup: func(t *testing.T, dst string) *clientcmdapi.Config { return nil },
		},
		{
			name: "into empty file",
			setup: func(t *testing.T, dst string) *clientcmdapi.Config {
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			wantMode: 0o644, // the user's choice, as kubectl keeps it
		},
		{
			name: "other contexts preserved",
			setup: func(t *testing.T, dst string) *clientcmdapi.Config {
				return writeOther(t, dst, "other")
			},
			wantOther: true,
		},
		{
			name: "replaces an older entry of the same name",
			setup: func(t *testing.T, dst string) *clientcmdapi.Config {
				other := writeOther(t, dst, "other")
				old := writeSrc(t, newPKI(t), testContext, "https://10.99.0.1:6443")
				if err := Merge(Target{Path: dst}, old, testContext, nil); err != nil {
					t.Fatal(err)
				}
				return other
			},
			wantOther: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "home", ".kube", "config")
			other := tt.setup(t, dst)
			src := writeSrc(t, b, testContext, testServer)
			if err := Merge(Target{Path: dst}, src, testContext, nil); err != nil {
				t.Fatal(err)
			}
			if tt.wantMode == 0 {
				tt.wantMode = 0o600
			}
			checkMode(t, dst, tt.wantMode)
			checkNoLock(t, dst)
			checkContext(t, dst, testContext, testServer, b)

			cfg, err := clientcmd.LoadFromFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CurrentContext != testContext {
				t.Errorf("current-context %q, want %q", cfg.CurrentContext, testContext)
			}
			wantNames := []string{testContext}
			if tt.wantOther {
				wantNames = append(wantNames, "other")
			}
			slices.Sort(wantNames)
			for kind, names := range map[string][]string{
				"contexts": slices.Sorted(maps.Keys(cfg.Contexts)),
				"clusters": slices.Sorted(maps.Keys(cfg.Clusters)),
				"users":    slices.Sorted(maps.Keys(cfg.AuthInfos)),
			} {
				if !slices.Equal(names, wantNames) {
					t.Errorf("%s %q, want %q", kind, names, wantNames)
				}
			}
			if other != nil {
				// Entries of others keep their content, relative paths included.
				if got, want := cfg.Clusters["other"], other.Clusters["other"]; got.Server != want.Server || got.CertificateAuthority != want.CertificateAuthority {
					t.Errorf("cluster other: %+v, want %+v", got, want)
				}
				if got := cfg.AuthInfos["other"]; got.Token != "secret-token" {
					t.Errorf("user other: %+v", got)
				}
				if got := cfg.Contexts["other"]; got.Namespace != "apps" || got.Cluster != "other" {
					t.Errorf("context other: %+v", got)
				}
				if !cfg.Preferences.Colors {
					t.Error("preferences lost")
				}
				if _, err := clientcmd.NewNonInteractiveClientConfig(*cfg, "other", &clientcmd.ConfigOverrides{}, nil).RawConfig(); err != nil {
					t.Errorf("other context: %v", err)
				}
			}
			rest, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil || rest.Host != testServer {
				t.Errorf("default client config: %v, %v", rest, err)
			}
		})
	}
}

func TestMergeErrors(t *testing.T) {
	b := newPKI(t)
	dir := t.TempDir()
	noUser := filepath.Join(dir, "no-user")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: testServer}
	cfg.Contexts[testContext] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "missing"}
	if err := clientcmd.WriteToFile(*cfg, noUser); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"missing src", filepath.Join(dir, "missing"), "kubeconfig: load "},
		{"context not in src", writeSrc(t, b, "kubernix-other", testServer), `context "kubernix-test" not in`},
		{"user not in src", noUser, `user "missing" of context "kubernix-test" not in`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "config")
			err := Merge(Target{Path: dst}, tt.src, testContext, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("dst written despite the error (%v)", err)
			}
			checkNoLock(t, dst)
		})
	}
}

func TestMergeThroughSymlink(t *testing.T) {
	b := newPKI(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	writeOther(t, target, "other")
	dst := filepath.Join(dir, "config")
	if err := os.Symlink(target, dst); err != nil {
		t.Fatal(err)
	}
	if err := Merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dst); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("dst is no longer a symlink (%v)", err)
	}
	checkContext(t, target, testContext, testServer, b)
	checkNoLock(t, dst)
}

func TestMergeConcurrent(t *testing.T) {
	b := newPKI(t)
	dst := filepath.Join(t.TempDir(), "config")
	const n = 8
	if err := mergeConcurrently(t, b, dst, n); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != n || len(cfg.Clusters) != n || len(cfg.AuthInfos) != n {
		t.Errorf("%d contexts, %d clusters, %d users; want %d each (lost updates)",
			len(cfg.Contexts), len(cfg.Clusters), len(cfg.AuthInfos), n)
	}
	checkNoLock(t, dst)
}

func contextName(i int) string { return "kubernix-" + string(rune('a'+i)) }

// mergeConcurrently merges n contexts (contextName 0 to n-1, each in a
// source file of its own signed by b) into dst at once, one goroutine
// each, and returns their errors joined.
func mergeConcurrently(t *testing.T, b *pki.Bundle, dst string, n int) error {
	t.Helper()
	var srcs []string
	for i := range n {
		srcs = append(srcs, writeSrc(t, b, contextName(i), testServer))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = Merge(Target{Path: dst}, srcs[i], contextName(i), nil) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func TestMergeWaitsForKubectlLock(t *testing.T) {
	b := newPKI(t)
	dst := filepath.Join(t.TempDir(), "config")
	src := writeSrc(t, b, testContext, testServer)
	// kubectl holds the lock like this while it edits the file.
	if err := os.WriteFile(dst+".lock", nil, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Merge(Target{Path: dst}, src, testContext, nil) }()
	select {
	case err := <-done:
		t.Fatalf("Merge returned while the file was locked: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := os.Remove(dst + ".lock"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(LockTimeout):
		t.Fatal("Merge still waiting after the lock was released")
	}
	checkContext(t, dst, testContext, testServer, b)
	checkNoLock(t, dst)
}

func TestLockTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	unlock, err := lockFile(path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = lockFile(path, 100*time.Millisecond, nil)
	if !errors.Is(err, ErrLocked) {
		t.Errorf("second lock: %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("gave up after %s, want at least 100ms", waited)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock, err = lockFile(path, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	checkNoLock(t, path)
}

func TestRemove(t *testing.T) {
	b := newPKI(t)
	tests := []struct {
		name        string
		setup       func(t *testing.T, dst string) // nil: dst does not exist
		wantNames   []string                       // contexts, clusters and users left
		wantCurrent string
		untouched   bool // dst must keep its bytes and mtime
	}{
		{
			name:      "missing file",
			untouched: true,
		},
		{
			name: "removes entries, keeps others, clears current-context",
			setup: func(t *testing.T, dst string) {
				writeOther(t, dst, "other")
				if err := Merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, nil); err != nil {
					t.Fatal(err)
				}
			},
			wantNames: []string{"other"},
		},
		{
			name: "keeps current-context of another cluster",
			setup: func(t *testing.T, dst string) {
				if err := Merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, nil); err != nil {
					t.Fatal(err)
				}
				writeOtherInto(t, dst)
			},
			wantNames:   []string{"other"},
			wantCurrent: "other",
		},
		{
			name: "only entry",
			setup: func(t *testing.T, dst string) {
				if err := Merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, nil); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:        "entries missing",
			setup:       func(t *testing.T, dst string) { writeOther(t, dst, "other") },
			wantNames:   []string{"other"},
			wantCurrent: "other",
			untouched:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "kube", "config")
			if tt.setup != nil {
				tt.setup(t, dst)
			}
			before, _ := os.ReadFile(dst)
			beforeInfo, _ := os.Stat(dst)
			time.Sleep(20 * time.Millisecond)

			if err := Remove(dst, testContext, nil); err != nil {
				t.Fatal(err)
			}
			checkNoLock(t, dst)
			if tt.setup == nil {
				if _, err := os.Stat(filepath.Dir(dst)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Remove of a missing file created its directory (%v)", err)
				}
				return
			}
			if tt.untouched {
				after, _ := os.ReadFile(dst)
				afterInfo, _ := os.Stat(dst)
				if !bytes.Equal(before, after) || !afterInfo.ModTime().Equal(beforeInfo.ModTime()) {
					t.Error("file rewritten although nothing was removed")
				}
			} else {
				checkMode(t, dst, 0o600)
			}
			cfg, err := clientcmd.LoadFromFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CurrentContext != tt.wantCurrent {
				t.Errorf("current-context %q, want %q", cfg.CurrentContext, tt.wantCurrent)
			}
			for kind, names := range map[string][]string{
				"contexts": slices.Sorted(maps.Keys(cfg.Contexts)),
				"clusters": slices.Sorted(maps.Keys(cfg.Clusters)),
				"users":    slices.Sorted(maps.Keys(cfg.AuthInfos)),
			} {
				if !slices.Equal(names, tt.wantNames) {
					t.Errorf("%s %q, want %q", kind, names, tt.wantNames)
				}
			}
			if slices.Contains(tt.wantNames, "other") {
				if got := cfg.Clusters["other"]; got.CertificateAuthority != "other-ca.crt" {
					t.Errorf("cluster other changed: %+v", got)
				}
			}
		})
	}
}

// writeOtherInto adds the "other" entries to an existing kubeconfig and
// makes "other" current, the way `kubectl config use-context` would.
func writeOtherInto(t *testing.T, dst string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	o := writeOther(t, other, "other")
	cfg.Clusters["other"] = o.Clusters["other"]
	cfg.AuthInfos["other"] = o.AuthInfos["other"]
	cfg.Contexts["other"] = o.Contexts["other"]
	cfg.CurrentContext = "other"
	if err := clientcmd.WriteToFile(*cfg, dst); err != nil {
		t.Fatal(err)
	}
}
