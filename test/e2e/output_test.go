package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// stdout runs kubernix like kubernix does (version without the cluster's
// flags, which it does not take) and returns its standard output alone
// (what a script parses), its standard error and exit code.
func (e *env) stdout(ctx context.Context, verb string, more ...string) (string, string, int) {
	e.t.Helper()
	args := []string{verb}
	if verb != "version" {
		args = append(args, e.argsOf(verb)...)
	}
	args = append(args, more...)
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), args...)
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// TestOutput is issue 14's "hard to script" part on one cluster (1 node,
// CoreDNS) brought up with --kubeconfig: `status`, `status --timings`,
// `image list` and `version` print JSON or YAML that parses back with
// what scripts expect; a bad -o exits 2 naming --output; `kubernix
// kubeconfig` prints a standalone kubeconfig kubectl uses from another
// file; the context goes to the --kubeconfig file only (the user's
// $KUBECONFIG stays byte for byte), `env` points at it, and `down` removes
// it from there. A --kubeconfig that is a directory is refused first,
// leaving nothing.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc")
	e := newEnv(t, "kxo-out", "10.176.0.0/16", "--addons", "coredns", "--kubeconfig", kc)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The user's own kubeconfig ($KUBECONFIG of every kubernix run here).
	const userKubeconfig = "apiVersion: v1\nkind: Config\ncurrent-context: mine\ncontexts:\n- name: mine\n  context:\n    cluster: mine\n    user: mine\nclusters:\n- name: mine\n  cluster:\n    server: https://192.0.2.1:6443\nusers:\n- name: mine\n  user:\n    token: secret\n"
	if err := os.WriteFile(e.kubeconfig, []byte(userKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	userUntouched := func(when string) {
		t.Helper()
		if b, err := os.ReadFile(e.kubeconfig); err != nil || string(b) != userKubeconfig {
			t.Errorf("%s: $KUBECONFIG %s changed (%v):\n%s", when, e.kubeconfig, err, b)
		}
	}

	t.Run("--kubeconfig a directory is refused, nothing made", func(t *testing.T) {
		before := dirList(t, e.stateDir)
		out, code := e.kubernix(ctx, "up", "--detach", "--kubeconfig", dir)
		if code != 2 || !strings.Contains(out, "--kubeconfig "+dir+": is a directory") {
			t.Errorf("up --kubeconfig DIR exited %d, want 2 naming --kubeconfig:\n%s", code, out)
		}
		e.checkRefusedLeftNothing(t, before)
		if _, err := os.Stat(kc); err == nil {
			t.Errorf("refused up wrote %s", kc)
		}
	})

	e.downOnCleanup()
	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	e.mustKubectl(ctx, "--kubeconfig", kc, "wait", "--for=condition=Available", "-n", "kube-system", "deployment/coredns", "--timeout=120s")

	t.Run("bad -o exits 2 naming --output", func(t *testing.T) {
		for _, verb := range [][]string{{"status"}, {"image", "list"}, {"version"}} {
			_, stderr, code := e.stdout(ctx, verb[0], append(verb[1:], "-o", "xml")...)
			if code != 2 || !strings.Contains(stderr, "--output") {
				t.Errorf("%s -o xml exited %d, want 2 naming --output:\n%s", verb, code, stderr)
			}
		}
	})
	t.Run("status -o json", func(t *testing.T) { checkStatusJSON(ctx, t, e) })
	t.Run("status --timings -o json", func(t *testing.T) {
		out, stderr, code := e.stdout(ctx, "status", "--timings", "-o", "json")
		var tm struct {
			TotalSeconds float64 `json:"totalSeconds"`
			Components   []struct {
				Name        string    `json:"name"`
				Started     time.Time `json:"started"`
				TookSeconds float64   `json:"tookSeconds"`
			} `json:"components"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &tm) != nil || tm.TotalSeconds <= 0 || len(tm.Components) == 0 || tm.Components[0].Started.IsZero() {
			t.Errorf("status --timings -o json exited %d:\n%s\n%s", code, out, stderr)
		}
	})
	t.Run("image list -o yaml", func(t *testing.T) {
		out, stderr, code := e.stdout(ctx, "image", "list", "-o", "yaml")
		var l struct {
			Images []struct {
				Node, Image, Digest, Source string
				Pinned                      bool
			} `json:"images"`
		}
		if err := yaml.Unmarshal([]byte(out), &l); code != 0 || err != nil {
			t.Fatalf("image list -o yaml exited %d (%v):\n%s\n%s", code, err, out, stderr)
		}
		found := map[string]bool{}
		for _, img := range l.Images {
			if img.Node != "kxo-out-node-0" || !strings.HasPrefix(img.Digest, "sha256:") {
				t.Errorf("image %+v: want node kxo-out-node-0 and a digest", img)
			}
			if strings.HasPrefix(img.Source, "builtin:") && img.Pinned {
				found[strings.SplitN(img.Image, ":", 2)[0]] = true
			}
		}
		for _, want := range []string{"registry.k8s.io/pause", "registry.k8s.io/coredns/coredns"} {
			if !found[want] {
				t.Errorf("no pinned builtin %s in:\n%s", want, out)
			}
		}
	})
	t.Run("version -o json", func(t *testing.T) {
		out, stderr, code := e.stdout(ctx, "version", "-o", "json")
		var v struct {
			Kubernix, GoVersion, Platform string
			Upstream                      map[string]string
		}
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Kubernix == "" || !strings.HasPrefix(v.GoVersion, "go") ||
			v.Platform == "" || v.Upstream["KUBERNETES_VERSION"] == "" {
			t.Errorf("version -o json exited %d:\n%s\n%s", code, out, stderr)
		}
	})
	t.Run("kubeconfig", func(t *testing.T) { checkKubeconfigVerb(ctx, t, e, dir) })
	t.Run("the context is in --kubeconfig only, env points at it", func(t *testing.T) {
		cfg, err := clientcmd.LoadFromFile(kc)
		if err != nil || cfg.Contexts["kubernix-kxo-out"] == nil || cfg.CurrentContext != "kubernix-kxo-out" {
			t.Errorf("%s lacks the current context kubernix-kxo-out (%v): %+v", kc, err, cfg)
		}
		userUntouched("after up")
		if out := e.mustKubernix(ctx, "env"); !strings.Contains(out, "export KUBECONFIG='"+kc+"'") {
			t.Errorf("env does not export KUBECONFIG=%s:\n%s", kc, out)
		}
	})

	e.mustKubernix(ctx, "down")
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Contexts["kubernix-kxo-out"] != nil || cfg.Clusters["kubernix-kxo-out"] != nil || cfg.AuthInfos["kubernix-kxo-out"] != nil {
		t.Errorf("down left the cluster's entries in %s: %+v", kc, cfg)
	}
	userUntouched("after down")
}

// checkStatusJSON checks `status -o json` of a healthy cluster: exit 0,
// healthy, the supervisor, every component running with a PID, the node
// Ready, CoreDNS healthy.
func checkStatusJSON(ctx context.Context, t *testing.T, e *env) {
	out, stderr, code := e.stdout(ctx, "status", "-o", "json")
	var st struct {
		Cluster    string `json:"cluster"`
		StateDir   string `json:"stateDir"`
		Healthy    bool   `json:"healthy"`
		NetPol     string `json:"networkPolicies"`
		Supervisor struct {
			PID     int  `json:"pid"`
			Running bool `json:"running"`
		} `json:"supervisor"`
		Components []struct {
			Name, Node, State string
			PID               int
		} `json:"components"`
		Nodes []struct {
			Name, Ready string
		} `json:"nodes"`
		Addons []struct {
			Name    string
			Healthy bool
		} `json:"addons"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status -o json exited %d (%v):\n%s\n%s", code, err, out, stderr)
	}
	if !st.Healthy || st.Cluster != "kxo-out" || st.StateDir != e.stateDir || !st.Supervisor.Running || st.Supervisor.PID <= 0 {
		t.Errorf("status: %+v", st)
	}
	seen := map[string]bool{}
	for _, c := range st.Components {
		seen[c.Name+"/"+c.Node] = true
		if c.State != "running" || c.PID <= 0 {
			t.Errorf("component %+v: want running with a PID", c)
		}
	}
	for _, want := range []string{"etcd/control-plane", "kube-apiserver/control-plane", "kube-controller-manager/control-plane",
		"kube-scheduler/control-plane", "containerd/kxo-out-node-0", "kubelet/kxo-out-node-0", "kube-proxy/kxo-out-node-0",
		"netpol-agent/kxo-out-node-0"} {
		if !seen[want] {
			t.Errorf("status -o json lacks component %s: %v", want, seen)
		}
	}
	if st.NetPol != "enforced" {
		t.Errorf("status networkPolicies = %q, want enforced (the default)", st.NetPol)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].Name != "kxo-out-node-0" || st.Nodes[0].Ready != "True" {
		t.Errorf("nodes %+v, want kxo-out-node-0 Ready", st.Nodes)
	}
	if len(st.Addons) != 1 || st.Addons[0].Name != "coredns" || !st.Addons[0].Healthy {
		t.Errorf("addons %+v, want coredns healthy", st.Addons)
	}
	// The table is the same status.
	table, _, code := e.stdout(ctx, "status")
	if code != 0 || !strings.Contains(table, "kxo-out-node-0  True") || !strings.Contains(table, "addon coredns: 1/1 ready") ||
		!strings.Contains(table, "network policies: enforced") {
		t.Errorf("status (table) exited %d:\n%s", code, table)
	}
}

// checkKubeconfigVerb checks `kubernix kubeconfig` (and --internal): a
// standalone kubeconfig, context kubernix-<name> current, certificates
// embedded, that kubectl uses from a file of its own, with the bridge
// address as the server (the host reaches it for a root cluster).
func checkKubeconfigVerb(ctx context.Context, t *testing.T, e *env, dir string) {
	for _, internal := range []bool{false, true} {
		var more []string
		if internal {
			more = []string{"--internal"}
		}
		out, stderr, code := e.stdout(ctx, "kubeconfig", more...)
		if code != 0 {
			t.Fatalf("kubeconfig %v exited %d:\n%s", more, code, stderr)
		}
		cfg, err := clientcmd.Load([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		const name = "kubernix-kxo-out"
		c, u := cfg.Clusters[name], cfg.AuthInfos[name]
		if cfg.CurrentContext != name || len(cfg.Contexts) != 1 || c == nil || u == nil ||
			len(c.CertificateAuthorityData) == 0 || len(u.ClientCertificateData) == 0 || len(u.ClientKeyData) == 0 {
			t.Fatalf("kubeconfig %v is not standalone with context %s:\n%s", more, name, out)
		}
		if want := "https://10.176.0.1:6443"; c.Server != want {
			t.Errorf("kubeconfig %v: server %s, want %s", more, c.Server, want)
		}
		f := filepath.Join(dir, "copied", "f")
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubectl"), "--kubeconfig", f, "get", "nodes", "-o", "name")
		if got, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(got)) != "node/kxo-out-node-0" {
			t.Errorf("kubectl --kubeconfig <kubernix kubeconfig %v> get nodes: %v\n%s", more, err, got)
		}
	}
}

// TestOutputRootless: as an ordinary user, `up --kubeconfig` of a file
// in the user's directory under /run (as /run/user/<uid> is on a desktop;
// rootlesskit copies /run up, so the supervisor inside reaches it through
// a link) writes the context to that file on the host, owned by the user,
// and not ~/.kube/config; `kubernix kubeconfig` gives the host's address
// (rootlesskit's forward on 127.0.0.1), which the user's kubectl uses,
// and --internal the bridge's; `down` removes the context from the file.
func TestOutputRootless(t *testing.T) {
	rootlessParallel(t)
	rc := newRootlessCluster(t, "kxorl", "kxo-rl")
	u, name := rc.u, rc.name
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	runDir := filepath.Join("/run", "kxo-"+u.name)
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	if err := os.Chown(runDir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}

	kc := filepath.Join(runDir, "kc")
	if out, code := u.kubernix(ctx, "up", "--detach", "--name", name, "--cidr", "10.177.0.0/16", "--kubeconfig", kc, leanAddons); code != 0 {
		t.Fatalf("up --kubeconfig %s exited %d:\n%s", kc, code, out)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil || cfg.CurrentContext != rc.kctx {
		t.Fatalf("%s lacks the current context %s (%v): %+v", kc, rc.kctx, err, cfg)
	}
	if st, err := os.Stat(kc); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != u.uid {
		t.Errorf("%s is not the user's: %v", kc, err)
	}
	if _, err := os.Stat(filepath.Join(u.home, ".kube", "config")); err == nil {
		t.Errorf("up wrote ~/.kube/config too")
	}
	// The apiserver's port is the first free one from 6443 on the host's
	// 127.0.0.1 (another rootless cluster may hold 6443); rootlesskit
	// forwards it to the same port on the bridge address.
	var port string
	for _, flags := range [][]string{nil, {"--internal"}} {
		cmd := u.command(ctx, append([]string{filepath.Join(u.binDir, "kubernix"), "kubeconfig", "--name", name}, flags...)...)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubeconfig %v: %v", flags, err)
		}
		got, err := clientcmd.Load(b)
		if err != nil || got.Clusters[rc.kctx] == nil {
			t.Fatalf("kubeconfig %v: no cluster %s (%v):\n%s", flags, rc.kctx, err, b)
		}
		server := got.Clusters[rc.kctx].Server
		if flags != nil {
			if want := "https://10.177.0.1:" + port; server != want {
				t.Fatalf("kubeconfig %v: server %s, want %s (the bridge address, the cluster's port):\n%s", flags, server, want, b)
			}
			continue
		}
		var ok bool
		if port, ok = strings.CutPrefix(server, "https://127.0.0.1:"); !ok || port == "" {
			t.Fatalf("kubeconfig: server %s, want https://127.0.0.1:<port> (rootlesskit's forward on the host):\n%s", server, b)
		}
		f := filepath.Join(u.home, "copied")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := u.command(ctx, filepath.Join(u.binDir, "kubectl"), "--kubeconfig", f, "get", "nodes", "-o", "name").CombinedOutput(); err != nil ||
			strings.TrimSpace(string(out)) != "node/"+name+"-node-0" {
			t.Errorf("kubectl --kubeconfig <kubernix kubeconfig> get nodes as the user: %v\n%s", err, out)
		}
	}
	if out, code := u.kubernix(ctx, "down", "--name", name); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	if cfg, err = clientcmd.LoadFromFile(kc); err != nil || cfg.Contexts[rc.kctx] != nil {
		t.Errorf("down left the context in %s (%v)", kc, err)
	}
}
