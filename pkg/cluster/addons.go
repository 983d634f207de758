package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/kubernix/kubernix/assets"
	"github.com/kubernix/kubernix/pkg/component"
)

// CoreDNSImage is the built-in CoreDNS image, under kubeadm's name for it.
func CoreDNSImage() string {
	return "registry.k8s.io/coredns/coredns:" + assets.Version("COREDNS_VERSION")
}

// RenderCoreDNS returns the CoreDNS addon manifest for the plan.
func RenderCoreDNS(p *Plan) ([]byte, error) {
	t, err := template.New("coredns").Option("missingkey=error").Parse(assets.CoreDNSManifest)
	if err != nil {
		return nil, fmt.Errorf("parse CoreDNS manifest: %w", err)
	}
	var buf bytes.Buffer
	err = t.Execute(&buf, map[string]any{
		"ClusterDomain": p.Cfg.ClusterDomain,
		"DNSIP":         p.Net.DNSServiceIP().String(),
		"Image":         CoreDNSImage(),
		"Replicas":      1,
	})
	if err != nil {
		return nil, fmt.Errorf("render CoreDNS manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// addon is a component that applies a manifest and waits for a Deployment
// to be Available. Its pods go when their node's containerd stops.
type addon struct {
	name       string
	c          *Cluster
	render     func(*Plan) ([]byte, error)
	deployment string // namespace/name waited for
}

func (c *Cluster) coreDNS() component.Component {
	return &addon{name: "coredns", c: c, render: RenderCoreDNS, deployment: "kube-system/coredns"}
}

func (a *addon) Name() string           { return a.name }
func (a *addon) Phase() component.Phase { return component.Addons }

func (a *addon) Start(ctx context.Context) (component.Stoppable, error) {
	manifest, err := a.render(a.c.Plan)
	if err != nil {
		return nil, err
	}
	if err := a.c.apply(ctx, manifest); err != nil {
		return nil, fmt.Errorf("apply %s: %w", a.name, err)
	}
	ns, name, _ := cutNamespace(a.deployment)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := a.c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue && d.Status.ObservedGeneration >= d.Generation {
				return true, nil
			}
		}
		last = fmt.Errorf("deployment %s not Available (%d/%d ready)", a.deployment, d.Status.ReadyReplicas, d.Status.Replicas)
		return false, nil
	})
	if err != nil {
		return nil, errors.Join(err, last)
	}
	return component.StopFunc(func(context.Context) error { return nil }), nil
}

func cutNamespace(s string) (ns, name string, ok bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// apply server-side-applies every object of a multi-document YAML manifest
// as field manager "kubernix".
func (c *Cluster) apply(ctx context.Context, manifest []byte) error {
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.client.Discovery()))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decode manifest: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("map %s: %w", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: "kubernix", Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
}
