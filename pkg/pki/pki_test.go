package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/yaml"
)

func testSpec(dir string) Spec {
	return Spec{
		Dir:          dir,
		ClusterName:  "test",
		APIServerIPs: []net.IP{net.ParseIP("10.10.0.1"), net.ParseIP("10.10.1.1")},
		EtcdIPs:      []net.IP{net.ParseIP("10.10.0.1")},
		Nodes:        []Node{{Name: "node-1", IPs: []net.IP{net.ParseIP("10.10.0.2")}}},
	}
}

func mustEnsure(t *testing.T, spec Spec) *Bundle {
	t.Helper()
	b, err := Ensure(spec)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := cert.CertsFromFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return certs[0]
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

func ips(ss ...string) []net.IP {
	var out []net.IP
	for _, s := range ss {
		out = append(out, net.ParseIP(s))
	}
	return out
}

// leafWant is what a leaf certificate must hold, and which CA (by name:
// "cluster", "etcd", "front-proxy") must have signed it.
type leafWant struct {
	name   string
	ca     string
	pair   Pair
	cn     string
	orgs   []string
	usages []x509.ExtKeyUsage
	ips    []net.IP
	dns    []string
}

// checkCAs verifies the three CAs of b and returns a pool per CA name.
func checkCAs(t *testing.T, spec Spec, b *Bundle) map[string]*x509.CertPool {
	t.Helper()
	pools := map[string]*x509.CertPool{}
	for _, ca := range []struct {
		name string
		pair Pair
		cn   string
	}{
		{"cluster", b.CA, "kubernix-" + spec.ClusterName + " CA"},
		{"etcd", b.EtcdCA, "kubernix-" + spec.ClusterName + " etcd CA"},
		{"front-proxy", b.FrontProxyCA, "kubernix-" + spec.ClusterName + " front-proxy CA"},
	} {
		checkMode(t, ca.pair.Cert, 0o644)
		checkMode(t, ca.pair.Key, 0o600)
		c := readCert(t, ca.pair.Cert)
		if !c.IsCA || c.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("%s CA: IsCA %v, key usage %v", ca.name, c.IsCA, c.KeyUsage)
		}
		if c.Subject.CommonName != ca.cn {
			t.Errorf("%s CA: CN %q, want %q", ca.name, c.Subject.CommonName, ca.cn)
		}
		if _, ok := c.PublicKey.(*ecdsa.PublicKey); !ok {
			t.Errorf("%s CA: key %T, want ECDSA", ca.name, c.PublicKey)
		}
		if _, _, err := loadPair(ca.pair); err != nil {
			t.Errorf("%s CA: %v", ca.name, err)
		}
		pools[ca.name] = x509.NewCertPool()
		pools[ca.name].AddCert(c)
	}
	return pools
}

// checkBundle verifies every file of b against what spec asks for. With
// fresh, SANs must match exactly and the encryption configuration must be
// the one kubernix writes; otherwise reused certificates may carry more
// SANs than asked for and the encryption configuration may be the user's.
func checkBundle(t *testing.T, spec Spec, b *Bundle, fresh bool) {
	t.Helper()
	checkMode(t, spec.Dir, 0o700)
	pools := checkCAs(t, spec, b)

	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	etcdIPs := append(slices.Clone(spec.EtcdIPs), ips("127.0.0.1")...)
	controlPlaneIPs := append(slices.Clone(spec.APIServerIPs), ips("127.0.0.1")...)
	tests := []leafWant{
		{"apiserver", "cluster", b.APIServer, "kube-apiserver", nil, server,
			append(slices.Clone(spec.APIServerIPs), ips("127.0.0.1")...),
			append([]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local", "localhost"}, spec.APIServerDNSNames...)},
		{"apiserver-kubelet-client", "cluster", b.APIServerKubeletClient, "kube-apiserver-kubelet-client", nil, client, nil, nil},
		{"apiserver-etcd-client", "etcd", b.APIServerEtcdClient, "kube-apiserver-etcd-client", nil, client, nil, nil},
		{"front-proxy-client", "front-proxy", b.FrontProxyClient, "front-proxy-client", nil, client, nil, nil},
		{"etcd-server", "etcd", b.EtcdServer, "etcd", nil, both, etcdIPs, []string{"localhost"}},
		{"etcd-peer", "etcd", b.EtcdPeer, "etcd-peer", nil, both, etcdIPs, []string{"localhost"}},
		{"controller-manager", "cluster", b.ControllerManager, "system:kube-controller-manager", nil, client, nil, nil},
		{"scheduler", "cluster", b.Scheduler, "system:kube-scheduler", nil, client, nil, nil},
		{"kube-proxy", "cluster", b.KubeProxy, "system:kube-proxy", nil, client, nil, nil},
		{"cloud-controller", "cluster", b.CloudController, "kubernix:cloud-controller", nil, client, nil, nil},
		{"netpol-agent", "cluster", b.NetpolAgent, "kubernix:netpol-agent", nil, client, nil, nil},
		{"admin", "cluster", b.Admin, "kubernix-admin", []string{"kubernix:cluster-admins"}, client, nil, nil},
		{"super-admin", "cluster", b.SuperAdmin, "kubernix-super-admin", []string{"system:masters"}, client, nil, nil},
		{"controller-manager-serving", "cluster", b.ControllerManagerServing, "kube-controller-manager", nil, server,
			controlPlaneIPs, []string{"localhost", "kube-controller-manager"}},
		{"scheduler-serving", "cluster", b.SchedulerServing, "kube-scheduler", nil, server,
			controlPlaneIPs, []string{"localhost", "kube-scheduler"}},
	}
	if len(b.Kubelets) != len(spec.Nodes) {
		t.Errorf("bundle has %d kubelets, want %d", len(b.Kubelets), len(spec.Nodes))
	}
	for _, n := range spec.Nodes {
		k, ok := b.Kubelets[n.Name]
		if !ok {
			t.Errorf("bundle lacks kubelet %s", n.Name)
			continue
		}
		tests = append(tests,
			leafWant{"kubelet-serving-" + n.Name, "cluster", k.Serving, n.Name, nil, server, n.IPs, []string{n.Name}},
			leafWant{"kubelet-client-" + n.Name, "cluster", k.Client, "system:node:" + n.Name, []string{"system:nodes"}, client, nil, nil},
		)
	}
	if len(b.Services) != len(spec.Services) {
		t.Errorf("bundle has %d services, want %d", len(b.Services), len(spec.Services))
	}
	for _, svc := range spec.Services {
		pair, ok := b.Services[svc.Key()]
		if !ok {
			t.Errorf("bundle lacks service %s", svc.Key())
			continue
		}
		fqdn := svc.Name + "." + svc.Namespace + ".svc"
		dns := []string{svc.Name, svc.Name + "." + svc.Namespace, fqdn}
		if svc.ClusterDomain != "" {
			dns = append(dns, fqdn+"."+svc.ClusterDomain)
		}
		tests = append(tests, leafWant{"service-" + svc.Key(), "cluster", pair, fqdn, nil, server, nil, dns})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkMode(t, tt.pair.Cert, 0o644)
			checkMode(t, tt.pair.Key, 0o600)
			if _, _, err := loadPair(tt.pair); err != nil {
				t.Fatal(err)
			}
			c := readCert(t, tt.pair.Cert)
			for _, u := range tt.usages {
				if _, err := c.Verify(x509.VerifyOptions{Roots: pools[tt.ca], KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
					t.Errorf("verify with the %s CA for usage %v: %v", tt.ca, u, err)
				}
			}
			// Only its own CA vouches for it: etcd trusts the etcd CA
			// alone, the apiserver's request-header check the
			// front-proxy CA alone.
			for name, pool := range pools {
				if name == tt.ca {
					continue
				}
				if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
					t.Errorf("verifies with the %s CA too; want only the %s CA", name, tt.ca)
				}
			}
			if !slices.Equal(c.ExtKeyUsage, tt.usages) {
				t.Errorf("ExtKeyUsage %v, want %v", c.ExtKeyUsage, tt.usages)
			}
			if c.IsCA {
				t.Error("leaf is a CA")
			}
			if c.Subject.CommonName != tt.cn {
				t.Errorf("CN %q, want %q", c.Subject.CommonName, tt.cn)
			}
			if !slices.Equal(c.Subject.Organization, tt.orgs) {
				t.Errorf("O %q, want %q", c.Subject.Organization, tt.orgs)
			}
			if fresh && len(c.IPAddresses) != len(tt.ips) {
				t.Errorf("IP SANs %v, want %v", c.IPAddresses, tt.ips)
			}
			for _, ip := range tt.ips {
				if !containsIP(c.IPAddresses, ip) {
					t.Errorf("IP SAN %s missing from %v", ip, c.IPAddresses)
				}
			}
			if fresh && !slices.Equal(c.DNSNames, tt.dns) {
				t.Errorf("DNS SANs %q, want %q", c.DNSNames, tt.dns)
			}
			for _, name := range tt.dns {
				if !slices.Contains(c.DNSNames, name) {
					t.Errorf("DNS SAN %s missing from %q", name, c.DNSNames)
				}
			}
		})
	}

	t.Run("service-account", func(t *testing.T) {
		checkMode(t, b.ServiceAccountKey, 0o600)
		checkMode(t, b.ServiceAccountPub, 0o644)
		key, err := loadServiceAccountKey(b.ServiceAccountKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := key.(*ecdsa.PrivateKey); fresh && !ok {
			t.Errorf("new service-account key is %T, want ECDSA", key)
		}
		pubs, err := keyutil.PublicKeysFromFile(b.ServiceAccountPub)
		if err != nil {
			t.Fatal(err)
		}
		if pub, ok := pubs[0].(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(key.Public()) {
			t.Errorf("public key %T does not match the private key", pubs[0])
		}
	})

	t.Run("encryption-config", func(t *testing.T) {
		checkMode(t, b.EncryptionConfig, 0o600)
		if !fresh {
			return
		}
		data, err := os.ReadFile(b.EncryptionConfig)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(generatedHeader)) {
			t.Errorf("missing header line:\n%s", data)
		}
		var cfg encryptionConfiguration
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Kind != "EncryptionConfiguration" || cfg.APIVersion != "apiserver.config.k8s.io/v1" {
			t.Errorf("kind %s/%s", cfg.APIVersion, cfg.Kind)
		}
		if len(cfg.Resources) != 1 || !slices.Equal(cfg.Resources[0].Resources, []string{"secrets"}) {
			t.Fatalf("resources %+v", cfg.Resources)
		}
		p := cfg.Resources[0].Providers
		if len(p) != 2 || p[0].Secretbox == nil || p[1].Identity == nil {
			t.Fatalf("providers %+v, want secretbox then identity", p)
		}
		raw, err := base64.StdEncoding.DecodeString(p[0].Secretbox.Keys[0].Secret)
		if err != nil || len(raw) != 32 {
			t.Errorf("secretbox key: %d bytes, %v", len(raw), err)
		}
		if !strings.Contains(string(data), "identity: {}") {
			t.Errorf("identity provider not rendered as {}:\n%s", data)
		}
	})
}

func TestEnsureCreates(t *testing.T) {
	tests := []struct {
		name string
		spec func(dir string) Spec
	}{
		{"one node", testSpec},
		{"three nodes, extra SANs", func(dir string) Spec {
			s := testSpec(dir)
			s.APIServerIPs = append(s.APIServerIPs, net.ParseIP("fd00::1"))
			s.APIServerDNSNames = []string{"api.example.test"}
			s.EtcdIPs = nil
			s.Nodes = append(s.Nodes,
				Node{Name: "node-2", IPs: ips("10.10.0.3")},
				Node{Name: "node-3.example", IPs: ips("10.10.0.4", "fd00::4")})
			s.Services = []Service{
				{Name: "metrics-server", Namespace: "kube-system", ClusterDomain: "cluster.local"},
				{Name: "api", Namespace: "default"},
			}
			return s
		}},
		{"no nodes, dir exists with wrong mode", func(dir string) Spec {
			if err := os.Chmod(dir, 0o755); err != nil {
				panic(err)
			}
			s := testSpec(dir)
			s.Nodes = nil
			return s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec(t.TempDir())
			b := mustEnsure(t, spec)
			checkBundle(t, spec, b, true)

			files := listFiles(t, spec.Dir)
			var gen []string
			for _, p := range b.Generated {
				gen = append(gen, rel(t, spec.Dir, p))
			}
			slices.Sort(gen)
			if !slices.Equal(gen, files) {
				t.Errorf("Generated %q, files on disk %q", gen, files)
			}
			// 3 CAs and 14 leaves, 2 per node, 1 per service; each a
			// certificate and a key; and the service-account key pair and
			// encryption config.
			if want := 2*(18+2*len(spec.Nodes)+len(spec.Services)) + 3; len(files) != want {
				t.Errorf("%d files, want %d: %q", len(files), want, files)
			}
		})
	}
}

func TestEnsureValidity(t *testing.T) {
	tests := []struct {
		name     string
		validity time.Duration
		want     time.Duration
	}{
		{"default", 0, DefaultValidity},
		{"48h", 48 * time.Hour, 48 * time.Hour},
		{"capped at CA", 20 * CAValidity, CAValidity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec(t.TempDir())
			spec.Validity = tt.validity
			b := mustEnsure(t, spec)
			ca := readCert(t, b.CA.Cert)
			if got := ca.NotAfter.Sub(ca.NotBefore) - clockSkew; got != CAValidity {
				t.Errorf("CA validity %s, want %s", got, CAValidity)
			}
			leaf := readCert(t, b.Admin.Cert)
			if got := leaf.NotAfter.Sub(leaf.NotBefore) - clockSkew; got < tt.want-time.Minute || got > tt.want+time.Minute {
				t.Errorf("leaf validity %s, want %s", got, tt.want)
			}
		})
	}
}

// fileState is what must not change when a file is reused.
type fileState struct {
	data  []byte
	mtime time.Time
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		out = append(out, rel(t, dir, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func rel(t *testing.T, dir, p string) string {
	t.Helper()
	r, err := filepath.Rel(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	for _, r := range listFiles(t, dir) {
		p := filepath.Join(dir, r)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = fileState{data: data, mtime: fi.ModTime()}
	}
	return out
}

// changedFiles lists files new in after, or whose content or mtime differ.
func changedFiles(before, after map[string]fileState) []string {
	var out []string
	for name, a := range after {
		b, ok := before[name]
		if !ok || !bytes.Equal(a.data, b.data) || !a.mtime.Equal(b.mtime) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestEnsureReuses(t *testing.T) {
	spec := testSpec(t.TempDir())
	mustEnsure(t, spec)
	before := snapshot(t, spec.Dir)
	// Let a rewrite show in the mtime even on coarse-grained filesystems.
	time.Sleep(20 * time.Millisecond)
	b := mustEnsure(t, spec)
	if len(b.Generated) != 0 {
		t.Errorf("second Ensure generated %q", b.Generated)
	}
	if changed := changedFiles(before, snapshot(t, spec.Dir)); len(changed) != 0 {
		t.Errorf("second Ensure changed %q", changed)
	}
	checkBundle(t, spec, b, true)
}

func pairFiles(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+".crt", n+".key")
	}
	return out
}

// clusterCerts are the cluster CA's files and those of what it signs.
func clusterCerts() []string {
	return pairFiles("ca", "apiserver", "apiserver-kubelet-client",
		"controller-manager", "scheduler", "kube-proxy", "cloud-controller", "netpol-agent", "admin", "super-admin",
		"controller-manager-serving", "scheduler-serving",
		"kubelet/node-1/serving", "kubelet/node-1/client")
}

// etcdCerts are the etcd CA's files and those of what it signs.
func etcdCerts() []string {
	return pairFiles("etcd-ca", "apiserver-etcd-client", "etcd-server", "etcd-peer")
}

// frontProxyCerts are the front-proxy CA's files and those of what it signs.
func frontProxyCerts() []string { return pairFiles("front-proxy-ca", "front-proxy-client") }

func allCerts() []string { return slices.Concat(clusterCerts(), etcdCerts(), frontProxyCerts()) }

func leafCerts() []string {
	return slices.DeleteFunc(allCerts(), func(s string) bool {
		return strings.HasPrefix(s, "ca.") || strings.Contains(s, "-ca.")
	})
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureRegenerates(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Spec)
		tamper func(t *testing.T, dir string)
		later  time.Duration // how far the clock moved since the first Ensure
		want   []string      // files rewritten, relative to dir
	}{
		{
			name:   "node added",
			change: func(s *Spec) { s.Nodes = append(s.Nodes, Node{Name: "node-2", IPs: ips("10.10.0.3")}) },
			want:   pairFiles("kubelet/node-2/client", "kubelet/node-2/serving"),
		},
		{
			name:   "node removed keeps its files",
			change: func(s *Spec) { s.Nodes = nil },
		},
		{
			name:   "node IP changed",
			change: func(s *Spec) { s.Nodes[0].IPs = ips("10.10.0.9") },
			want:   pairFiles("kubelet/node-1/serving"),
		},
		{
			name:   "apiserver IP added",
			change: func(s *Spec) { s.APIServerIPs = append(s.APIServerIPs, net.ParseIP("10.10.0.9")) },
			want:   pairFiles("apiserver", "controller-manager-serving", "scheduler-serving"),
		},
		{
			name:   "apiserver IP removed is still covered",
			change: func(s *Spec) { s.APIServerIPs = s.APIServerIPs[:1] },
		},
		{
			name:   "apiserver DNS name added",
			change: func(s *Spec) { s.APIServerDNSNames = []string{"api.example.test"} },
			want:   pairFiles("apiserver"),
		},
		{
			name:   "etcd IP changed",
			change: func(s *Spec) { s.EtcdIPs = ips("10.10.0.7") },
			want:   pairFiles("etcd-peer", "etcd-server"),
		},
		{
			name:   "cluster renamed",
			change: func(s *Spec) { s.ClusterName = "other" },
			want:   allCerts(),
		},
		{
			name:   "CA certificate corrupt",
			tamper: func(t *testing.T, dir string) { writeTestFile(t, filepath.Join(dir, "ca.crt"), "garbage") },
			want:   clusterCerts(),
		},
		{
			name:   "CA key missing",
			tamper: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "ca.key")) },
			want:   clusterCerts(),
		},
		{
			name:   "etcd CA missing",
			tamper: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "etcd-ca.crt")) },
			want:   etcdCerts(),
		},
		{
			name:   "front-proxy CA key corrupt",
			tamper: func(t *testing.T, dir string) { writeTestFile(t, filepath.Join(dir, "front-proxy-ca.key"), "garbage") },
			want:   frontProxyCerts(),
		},
		{
			name: "etcd leaf signed by the cluster CA",
			tamper: func(t *testing.T, dir string) {
				reissue(t, testSpec(dir), fileEtcdServer, clusterCA, nil)
			},
			want: pairFiles("etcd-server"),
		},
		{
			name: "CA key from another CA",
			tamper: func(t *testing.T, dir string) {
				other := mustEnsure(t, testSpec(t.TempDir()))
				data, _ := os.ReadFile(other.CA.Key)
				writeTestFile(t, filepath.Join(dir, "ca.key"), string(data))
			},
			want: clusterCerts(),
		},
		{
			name: "leaf signed by another CA",
			tamper: func(t *testing.T, dir string) {
				other := mustEnsure(t, testSpec(t.TempDir()))
				for _, f := range []string{other.Admin.Cert, other.Admin.Key} {
					data, _ := os.ReadFile(f)
					writeTestFile(t, filepath.Join(dir, filepath.Base(f)), string(data))
				}
			},
			want: pairFiles("admin"),
		},
		{
			name:   "leaf key missing",
			tamper: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "scheduler.key")) },
			want:   pairFiles("scheduler"),
		},
		{
			name: "leaf certificate corrupt",
			tamper: func(t *testing.T, dir string) {
				writeTestFile(t, filepath.Join(dir, "kube-proxy.crt"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
			},
			want: pairFiles("kube-proxy"),
		},
		{
			name: "leaf key and certificate mismatched",
			tamper: func(t *testing.T, dir string) {
				data, _ := os.ReadFile(filepath.Join(dir, "admin.key"))
				writeTestFile(t, filepath.Join(dir, "scheduler.key"), string(data))
			},
			want: pairFiles("scheduler"),
		},
		{
			name:  "leaves expire within 30 days",
			later: DefaultValidity - 29*24*time.Hour,
			want:  leafCerts(),
		},
		{
			name:  "leaves expire in 31 days",
			later: DefaultValidity - 31*24*time.Hour,
		},
		{
			name:  "CAs expire within 30 days",
			later: CAValidity - 29*24*time.Hour,
			want:  allCerts(),
		},
		{
			name:   "service-account public key missing",
			tamper: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "sa.pub")) },
			want:   []string{"sa.pub"},
		},
		{
			name:   "service-account key corrupt",
			tamper: func(t *testing.T, dir string) { writeTestFile(t, filepath.Join(dir, "sa.key"), "garbage") },
			want:   []string{"sa.key", "sa.pub"},
		},
		{
			name:   "encryption config corrupt",
			tamper: func(t *testing.T, dir string) { writeTestFile(t, filepath.Join(dir, "encryption-config.yaml"), "{") },
			want:   []string{"encryption-config.yaml"},
		},
		{
			name: "encryption config with a key of the wrong size",
			tamper: func(t *testing.T, dir string) {
				writeTestFile(t, filepath.Join(dir, "encryption-config.yaml"), `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - secretbox: {keys: [{name: k, secret: c2hvcnQ=}]}
`)
			},
			want: []string{"encryption-config.yaml"},
		},
		{
			name: "encryption config with a provider kubernix does not write is kept",
			tamper: func(t *testing.T, dir string) {
				writeTestFile(t, filepath.Join(dir, "encryption-config.yaml"), `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, configmaps]
  providers:
  - aesgcm: {keys: [{name: k, secret: c2VjcmV0IGlzIHNlY3VyZQ==}]}
  - identity: {}
`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec(t.TempDir())
			start := time.Now()
			if _, err := ensure(spec, start); err != nil {
				t.Fatal(err)
			}
			if tt.tamper != nil {
				tt.tamper(t, spec.Dir)
			}
			before := snapshot(t, spec.Dir)
			time.Sleep(20 * time.Millisecond)

			if tt.change != nil {
				tt.change(&spec)
			}
			b, err := ensure(spec, start.Add(tt.later))
			if err != nil {
				t.Fatal(err)
			}
			got := changedFiles(before, snapshot(t, spec.Dir))
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("rewritten files:\n got %q\nwant %q", got, want)
			}
			var gen []string
			for _, p := range b.Generated {
				gen = append(gen, rel(t, spec.Dir, p))
			}
			slices.Sort(gen)
			if !slices.Equal(gen, want) {
				t.Errorf("Generated %q, want %q", gen, want)
			}
			if tt.later == 0 {
				checkBundle(t, spec, b, false)
			}
			// Whatever was rewritten, a third run reuses everything.
			if b, err := ensure(spec, start.Add(tt.later)); err != nil || len(b.Generated) != 0 {
				t.Errorf("third Ensure: generated %q, err %v", b.Generated, err)
			}
		})
	}
}

func TestEnsureRestoresModes(t *testing.T) {
	spec := testSpec(t.TempDir())
	b := mustEnsure(t, spec)
	for _, f := range []string{b.Admin.Key, b.CA.Key, b.ServiceAccountKey, b.EncryptionConfig} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, spec.Dir)
	b = mustEnsure(t, spec)
	if changed := changedFiles(before, snapshot(t, spec.Dir)); len(changed) != 0 {
		t.Errorf("rewrote %q, want only modes fixed", changed)
	}
	for _, f := range []string{b.Admin.Key, b.CA.Key, b.ServiceAccountKey, b.EncryptionConfig} {
		checkMode(t, f, 0o600)
	}
}

func TestEnsureInvalidSpec(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string // substrings of the error, all of them
	}{
		{"empty", Spec{}, []string{"dir is empty", "cluster name is empty"}},
		{"negative validity", Spec{Dir: "d", ClusterName: "c", Validity: -time.Hour}, []string{"validity -1h0m0s is negative"}},
		{"bad IPs", Spec{Dir: "d", ClusterName: "c", APIServerIPs: []net.IP{{1, 2}}, EtcdIPs: []net.IP{nil}},
			[]string{"apiserver IP 0 is not an IP address", "etcd IP 0 is not an IP address"}},
		{"bad DNS name", Spec{Dir: "d", ClusterName: "c", APIServerDNSNames: []string{"Not_A_Name"}},
			[]string{`apiserver DNS name "Not_A_Name"`}},
		{"bad nodes", Spec{Dir: "d", ClusterName: "c", Nodes: []Node{
			{Name: "../etc"}, {Name: "a"}, {Name: "a"}, {Name: ""}, {Name: "b", IPs: []net.IP{{1}}}}},
			[]string{`node 0 name "../etc"`, `node 2 name "a": duplicate`, `node 3 name ""`, `node "b" IP 0`}},
		{"bad services", Spec{Dir: "d", ClusterName: "c", Services: []Service{
			{Name: "a.b", Namespace: "ns"}, {Name: "s", Namespace: ""}, {Name: "s", Namespace: "ns", ClusterDomain: "Bad_Domain"},
			{Name: "s", Namespace: "ns"}}},
			[]string{`service 0 name "a.b"`, `service 1 namespace ""`, `service 2 cluster domain "Bad_Domain"`,
				`service 3 "ns/s": duplicate`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Ensure(tt.spec)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "pki: invalid spec: ") {
				t.Errorf("error %q lacks the pki prefix", err)
			}
		})
	}
}

func TestEnsureWriteErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) Spec
		want  string
	}{
		{"dir below a file", func(t *testing.T, dir string) Spec {
			writeTestFile(t, filepath.Join(dir, "file"), "")
			return testSpec(filepath.Join(dir, "file", "pki"))
		}, "pki: create "},
		{"certificate path is a directory", func(t *testing.T, dir string) Spec {
			if err := os.MkdirAll(filepath.Join(dir, "admin.crt", "x"), 0o700); err != nil {
				t.Fatal(err)
			}
			return testSpec(dir)
		}, "pki: write " + "DIR/admin.crt: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Ensure(tt.setup(t, dir))
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %v, want prefix %q", err, want)
			}
		})
	}
}

// reissue replaces the certificate and key of the identity stored as file
// with one signed by the CA of kind and, if orgs is not nil, carrying orgs:
// what an older kubernix wrote.
func reissue(t *testing.T, spec Spec, file string, kind authorityKind, orgs []string) {
	t.Helper()
	caPair := spec.authorities()[kind].pair
	caCert, caKey, err := loadPair(caPair)
	if err != nil {
		t.Fatal(err)
	}
	ca := &authority{cn: caCert.Subject.CommonName, cert: caCert, key: caKey}
	i := slices.IndexFunc(spec.identities(), func(id identity) bool { return id.pair == spec.pair(file) })
	if i < 0 {
		t.Fatalf("no identity %s", file)
	}
	id := spec.identities()[i]
	if orgs != nil {
		id.orgs = orgs
	}
	c, key, err := issue(ca, id, time.Now(), DefaultValidity)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&writer{}).writePair(id.pair, c, key); err != nil {
		t.Fatal(err)
	}
}

// legacyPKI makes dir look like the PKI of a kubernix before the split:
// one CA signing everything (etcd's certificates included), the admin and
// the apiserver's kubelet client in system:masters, and no etcd or
// front-proxy CA, front-proxy client or super-admin.
func legacyPKI(t *testing.T, spec Spec) {
	t.Helper()
	mustEnsure(t, spec)
	for _, f := range []string{fileEtcdServer, fileEtcdPeer, fileAPIServerEtcdClient} {
		reissue(t, spec, f, clusterCA, nil)
	}
	for _, f := range []string{fileAdmin, fileAPIServerKubeletClient} {
		reissue(t, spec, f, clusterCA, []string{"system:masters"})
	}
	for _, f := range pairFiles(fileEtcdCA, fileFrontProxyCA, fileFrontProxyClient, fileSuperAdmin) {
		if err := os.Remove(filepath.Join(spec.Dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEnsureMigratesLegacyPKI checks that the first Ensure on an older
// state dir moves etcd to its own CA and the admin out of system:masters,
// and keeps everything else, the cluster CA above all (every kubeconfig
// and kubelet trusts it).
func TestEnsureMigratesLegacyPKI(t *testing.T) {
	spec := testSpec(t.TempDir())
	legacyPKI(t, spec)
	etcdServer := readCert(t, spec.pair(fileEtcdServer).Cert)
	clusterPool := x509.NewCertPool()
	clusterPool.AddCert(readCert(t, spec.pair(fileCA).Cert))
	if _, err := etcdServer.Verify(x509.VerifyOptions{Roots: clusterPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Fatalf("legacy etcd certificate not signed by the cluster CA: %v", err)
	}
	before := snapshot(t, spec.Dir)
	time.Sleep(20 * time.Millisecond)

	b := mustEnsure(t, spec)
	want := slices.Sorted(slices.Values(slices.Concat(etcdCerts(), frontProxyCerts(),
		pairFiles("admin", "super-admin", "apiserver-kubelet-client"))))
	if got := changedFiles(before, snapshot(t, spec.Dir)); !slices.Equal(got, want) {
		t.Errorf("migration rewrote:\n got %q\nwant %q", got, want)
	}
	checkBundle(t, spec, b, true)
	if b, err := Ensure(spec); err != nil || len(b.Generated) != 0 {
		t.Errorf("Ensure after the migration: generated %q, err %v", b.Generated, err)
	}
}

// TestRenewalThreshold checks at which remaining lifetime Ensure renews a
// leaf: 30 days or less.
func TestRenewalThreshold(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		remaining time.Duration
		renewed   bool
	}{
		{remaining: 364 * day},
		{remaining: 31 * day},
		{remaining: 30*day + time.Minute},
		{remaining: 30 * day, renewed: true},
		{remaining: 29 * day, renewed: true},
		{remaining: 2 * day, renewed: true},
		{remaining: time.Hour, renewed: true},
		{remaining: -day, renewed: true},
	}
	for _, tt := range tests {
		t.Run(tt.remaining.String(), func(t *testing.T) {
			spec := testSpec(t.TempDir())
			start := time.Now()
			if _, err := ensure(spec, start); err != nil {
				t.Fatal(err)
			}
			b, err := ensure(spec, start.Add(DefaultValidity-tt.remaining))
			if err != nil {
				t.Fatal(err)
			}
			renewed := slices.Contains(b.Generated, b.Admin.Cert)
			if renewed != tt.renewed {
				t.Errorf("%s before expiry: renewed %v, want %v (generated %q)", tt.remaining, renewed, tt.renewed, b.Generated)
			}
			if slices.Contains(b.Generated, b.CA.Cert) {
				t.Error("the CA was renewed too")
			}
		})
	}
}

func TestExpiring(t *testing.T) {
	const day = 24 * time.Hour
	dir := t.TempDir()
	spec := testSpec(dir)
	start := time.Now()
	b, err := ensure(spec, start)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "garbage.crt"), "garbage")
	certs := b.Certificates()
	if want := 18 + 2*len(spec.Nodes); len(certs) != want {
		t.Errorf("Certificates lists %d files, want %d: %q", len(certs), want, certs)
	}
	leaves := func() []string {
		var out []string
		for _, p := range certs {
			if !strings.HasSuffix(p, "ca.crt") {
				out = append(out, p)
			}
		}
		return out
	}()
	tests := []struct {
		name    string
		paths   []string
		later   time.Duration
		want    []string // paths reported
		wantErr string
	}{
		{name: "fresh", paths: certs},
		{name: "31 days left", paths: certs, later: DefaultValidity - 31*day},
		{name: "30 days left", paths: certs, later: DefaultValidity - 30*day, want: leaves},
		{name: "expired", paths: certs, later: DefaultValidity + day, want: leaves},
		{name: "CAs within 30 days", paths: certs, later: CAValidity - 29*day, want: certs},
		{name: "missing file skipped", paths: []string{filepath.Join(dir, "nope.crt"), b.Admin.Cert},
			later: DefaultValidity, want: []string{b.Admin.Cert}},
		{name: "garbage reported, others checked", paths: []string{filepath.Join(dir, "garbage.crt"), b.Admin.Cert},
			later: DefaultValidity, want: []string{b.Admin.Cert}, wantErr: "pki: parse " + filepath.Join(dir, "garbage.crt")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expiring(tt.paths, start.Add(tt.later), RenewBefore)
			if tt.wantErr == "" && err != nil {
				t.Errorf("error %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			var paths []string
			for _, e := range got {
				paths = append(paths, e.Path)
				if e.CommonName != readCert(t, e.Path).Subject.CommonName || !e.NotAfter.Equal(readCert(t, e.Path).NotAfter) {
					t.Errorf("%s: %+v does not match the file", e.Path, e)
				}
			}
			if !slices.Equal(paths, tt.want) {
				t.Errorf("reported\n %q\nwant\n %q", paths, tt.want)
			}
		})
	}
}
