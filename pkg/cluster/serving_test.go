package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/pki"
)

// TestServingSecret checks the Secret of each default addon with a
// serving certificate: a kubernetes.io/tls Secret whose certificate
// verifies against its ca.crt for the name the aggregation layer dials
// (<service>.<namespace>.svc) and matches its key, and whose ca.crt
// verifies every kubelet's serving certificate by the node IP, the
// address metrics-server dials (--kubelet-preferred-address-types=InternalIP).
func TestServingSecret(t *testing.T) {
	c := testCluster(t, 2)
	c.client = fake.NewClientset()
	ca, err := os.ReadFile(c.PKI.CA.Cert)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, name := range c.Plan.Cfg.Addons {
		a, ok := addons.Lookup(name)
		if !ok || a.Serving == nil {
			continue
		}
		served = append(served, name)
		t.Run(name, func(t *testing.T) {
			if err := c.applyServingSecret(context.Background(), *a.Serving, ca); err != nil {
				t.Fatal(err)
			}
			ns, svc := a.Serving.ServiceName()
			s, err := c.client.CoreV1().Secrets(ns).Get(context.Background(), a.Serving.Secret, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Type != corev1.SecretTypeTLS {
				t.Errorf("type %q, want %q", s.Type, corev1.SecretTypeTLS)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
				t.Fatalf("ca.crt holds no certificate: %q", s.Data["ca.crt"])
			}
			pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
			if err != nil {
				t.Fatalf("tls.crt and tls.key: %v", err)
			}
			verify(t, pair.Certificate[0], roots, svc+"."+ns+".svc")
			for _, nd := range c.Plan.Nodes {
				kubelet, err := tls.LoadX509KeyPair(c.PKI.Kubelets[nd.Name].Serving.Cert, c.PKI.Kubelets[nd.Name].Serving.Key)
				if err != nil {
					t.Fatal(err)
				}
				verify(t, kubelet.Certificate[0], roots, nd.IP.String())
			}
		})
	}
	if len(served) == 0 {
		t.Fatalf("no default addon (%v) has a serving certificate", c.Plan.Cfg.Addons)
	}
}

// verify fails t unless the DER certificate verifies against roots as a
// server certificate for host (a DNS name or an IP).
func verify(t *testing.T, der []byte, roots *x509.CertPool, host string) {
	t.Helper()
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("certificate %s for %s: %v", cert.Subject.CommonName, host, err)
	}
}

// TestServingSecretMissing checks that an addon whose Service has no
// certificate in the PKI fails, naming the Service.
func TestServingSecretMissing(t *testing.T) {
	c := &Cluster{PKI: &pki.Bundle{}, client: fake.NewClientset()}
	err := c.applyServingSecret(context.Background(), addons.Serving{Service: "ns/svc", Secret: "s"}, nil)
	if err == nil || !strings.Contains(err.Error(), "Service ns/svc") {
		t.Errorf("error %v, want one naming Service ns/svc", err)
	}
}

// TestWithCABundle checks that the edit sets the caBundle of the named
// APIService only.
func TestWithCABundle(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
	object := func(kind, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name},
			"spec": map[string]any{"group": "g"},
		}}
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string // caBundle after the edit; "" for none
	}{
		{"the APIService", object("APIService", "v1beta1.metrics.k8s.io"), base64.StdEncoding.EncodeToString(ca)},
		{"another APIService", object("APIService", "v1.other.io"), ""},
		{"same name, another kind", object("Service", "v1beta1.metrics.k8s.io"), ""},
	}
	edit := withCABundle("v1beta1.metrics.k8s.io", ca)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := edit(tt.obj); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedString(tt.obj.Object, "spec", "caBundle")
			if got != tt.want {
				t.Errorf("caBundle %q, want %q", got, tt.want)
			}
			if g, _, _ := unstructured.NestedString(tt.obj.Object, "spec", "group"); g != "g" {
				t.Errorf("spec.group %q lost", g)
			}
		})
	}
	if withCABundle("", ca) != nil {
		t.Error("withCABundle(\"\") is not nil")
	}
}
