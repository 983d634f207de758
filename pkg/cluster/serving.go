package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/plan"
)

// applyAddon is an addon's manifest task (d): for an addon with a
// serving certificate it first writes the certificate's Secret, then
// applies the manifest with the APIService's caBundle set to the
// cluster CA.
func (c *Cluster) applyAddon(ctx context.Context, d components.Description) error {
	a, ok := addons.Lookup(strings.TrimSuffix(d.Name, plan.ManifestSuffix))
	if ok {
		if err := c.applyCRDs(ctx, a); err != nil {
			return err
		}
	}
	if !ok || a.Serving == nil {
		return c.apply(ctx, d.Manifest, nil)
	}
	ca, err := os.ReadFile(c.PKI.CA.Cert)
	if err != nil {
		return fmt.Errorf("addon %s: %w", a.Name, err)
	}
	if err := c.applyServingSecret(ctx, *a.Serving, ca); err != nil {
		return fmt.Errorf("addon %s: %w", a.Name, err)
	}
	return c.apply(ctx, d.Manifest, withCABundle(a.Serving.APIService, ca))
}

// applyServingSecret server-side-applies the kubernetes.io/tls Secret of
// s: the Service's serving certificate and key from the PKI (Ensure made
// them, see Plan.addonServices) and ca, the cluster CA.
func (c *Cluster) applyServingSecret(ctx context.Context, s addons.Serving, ca []byte) error {
	pair, ok := c.PKI.Services[s.Service]
	if !ok {
		return fmt.Errorf("no serving certificate for Service %s in the PKI", s.Service)
	}
	data := map[string][]byte{"ca.crt": ca}
	for key, path := range map[string]string{corev1.TLSCertKey: pair.Cert, corev1.TLSPrivateKeyKey: pair.Key} {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data[key] = b
	}
	ns, _ := s.ServiceName()
	secret := corev1ac.Secret(s.Secret, ns).WithType(corev1.SecretTypeTLS).WithData(data)
	if _, err := c.client.CoreV1().Secrets(ns).Apply(ctx, secret, metav1.ApplyOptions{FieldManager: "kubernix", Force: true}); err != nil {
		return fmt.Errorf("apply Secret %s/%s: %w", ns, s.Secret, err)
	}
	return nil
}

// withCABundle returns an edit for apply that sets spec.caBundle of the
// APIService named apiService to the PEM bundle ca, and leaves every
// other object alone; nil if apiService is "".
func withCABundle(apiService string, ca []byte) func(*unstructured.Unstructured) error {
	if apiService == "" {
		return nil
	}
	return func(obj *unstructured.Unstructured) error {
		if obj.GetKind() != "APIService" || obj.GetName() != apiService {
			return nil
		}
		return unstructured.SetNestedField(obj.Object, base64.StdEncoding.EncodeToString(ca), "spec", "caBundle")
	}
}
