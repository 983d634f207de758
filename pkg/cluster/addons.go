package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
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

// An addon is two components of the Addons phase. The first applies its
// manifest as soon as the apiserver is ready, so that the controllers
// create its pods while the nodes boot and the scheduler binds them the
// moment a node is Ready. The second needs everything else that starts
// before the addons and waits for the addon's Deployment to be Available:
// its time is what the addon adds to the boot.
type addon struct {
	name       string
	c          *Cluster
	render     func(*Plan) ([]byte, error)
	deployment string // namespace/name waited for
}

// manifestSuffix names an addon's manifest component: "<addon>-manifest".
const manifestSuffix = "-manifest"

// components returns the addon's two components; before names every
// component that starts before the addons.
func (a *addon) components(before []string) []component.Component {
	apply := component.WithNeeds(&addonManifest{a}, APIServerReady)
	return []component.Component{apply, component.WithNeeds(a, append(slices.Clone(before), apply.Name())...)}
}

func (c *Cluster) coreDNS() *addon {
	return &addon{name: "coredns", c: c, render: RenderCoreDNS, deployment: "kube-system/coredns"}
}

func (a *addon) Name() string           { return a.name }
func (a *addon) Phase() component.Phase { return component.Addons }

// Start waits for the addon's Deployment to be Available. Its pods go when
// their node's containerd stops.
func (a *addon) Start(ctx context.Context) (component.Stoppable, error) {
	ns, name, _ := strings.Cut(a.deployment, "/")
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := a.c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		available := false
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue && d.Status.ObservedGeneration >= d.Generation {
				available = true
			}
		}
		if !available {
			last = fmt.Errorf("deployment %s not Available (%d/%d ready)", a.deployment, d.Status.ReadyReplicas, d.Status.Replicas)
			return false, nil
		}
		// On a restart etcd still holds the last run's status, Available
		// included: count only pods that became Ready in this run.
		ready, err := a.readyPodsSince(ctx, d, a.c.began)
		if err != nil {
			last = err
			return false, nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if int32(ready) < want {
			last = fmt.Errorf("deployment %s: %d of %d pods Ready since this up began", a.deployment, ready, want)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, errors.Join(err, last)
	}
	return component.StopFunc(func(context.Context) error { return nil }), nil
}

// readyPodsSince counts the pods of d whose Ready condition turned True at
// or after since (to the second, the precision the API keeps).
func (a *addon) readyPodsSince(ctx context.Context, d *appsv1.Deployment, since time.Time) (int, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, err
	}
	pods, err := a.c.client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && !cond.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
				n++
			}
		}
	}
	return n, nil
}

// addonManifest applies an addon's manifest.
type addonManifest struct{ a *addon }

func (m *addonManifest) Name() string           { return m.a.name + manifestSuffix }
func (m *addonManifest) Phase() component.Phase { return component.Addons }

func (m *addonManifest) Start(ctx context.Context) (component.Stoppable, error) {
	manifest, err := m.a.render(m.a.c.Plan)
	if err != nil {
		return nil, err
	}
	if err := m.a.c.apply(ctx, manifest); err != nil {
		return nil, fmt.Errorf("apply %s: %w", m.a.name, err)
	}
	return component.StopFunc(func(context.Context) error { return nil }), nil
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
