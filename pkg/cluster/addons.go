package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/kubernix/kubernix/pkg/addons"
)

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyCRDs server-side applies a's CRDs file (addons.Addon.CRDs), if
// any, and waits until each of its CustomResourceDefinitions is
// Established, so that the manifest after it can hold their resources.
// Errors name the CRD not established.
func (c *Cluster) applyCRDs(ctx context.Context, a addons.Addon) error {
	crds, err := a.CRDManifest()
	if err != nil || crds == nil {
		return err
	}
	var names []string
	if err := c.apply(ctx, crds, func(obj *unstructured.Unstructured) error {
		if obj.GetKind() == "CustomResourceDefinition" {
			names = append(names, obj.GetName())
		}
		return nil
	}); err != nil {
		return fmt.Errorf("addon %s: CRDs: %w", a.Name, err)
	}
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	for _, name := range names {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			obj, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, cond := range conditions {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			last = fmt.Errorf("not Established yet")
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("addon %s: CRD %s: %w", a.Name, name, errors.Join(err, last))
		}
	}
	return nil
}

// waitAvailable waits until the Deployment "namespace/name" is Available
// with all its pods Ready since this up began (an addon's readiness). Its
// pods go when their node's containerd stops.
func (c *Cluster) waitAvailable(ctx context.Context, deployment string) error {
	ns, name, _ := strings.Cut(deployment, "/")
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		last = c.availableSince(ctx, d, c.began)
		return last == nil, nil
	})
	if err != nil {
		return errors.Join(err, last)
	}
	return nil
}

// availableSince returns nil when d is Available and has all its pods
// Ready since since: on a restart etcd still holds the last run's status,
// Available included.
func (c *Cluster) availableSince(ctx context.Context, d *appsv1.Deployment, since time.Time) error {
	available := false
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue && d.Status.ObservedGeneration >= d.Generation {
			available = true
		}
	}
	if !available {
		return fmt.Errorf("deployment %s/%s not Available (%d/%d ready)", d.Namespace, d.Name, d.Status.ReadyReplicas, d.Status.Replicas)
	}
	ready, err := c.readyPodsSince(ctx, d, since)
	if err != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if int32(ready) < want {
		return fmt.Errorf("deployment %s/%s: %d of %d pods Ready since this up began", d.Namespace, d.Name, ready, want)
	}
	return nil
}

// readyPodsSince counts the pods of d whose Ready condition turned True at
// or after since (to the second, the precision the API keeps).
func (c *Cluster) readyPodsSince(ctx context.Context, d *appsv1.Deployment, since time.Time) (int, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, err
	}
	pods, err := c.client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
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

// apply server-side-applies every object of a multi-document YAML manifest
// as field manager "kubernix", each after edit (if not nil) changed it.
func (c *Cluster) apply(ctx context.Context, manifest []byte, edit func(*unstructured.Unstructured) error) error {
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
		if edit != nil {
			if err := edit(&obj); err != nil {
				return fmt.Errorf("edit %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
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
