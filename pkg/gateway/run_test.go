package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// provisioner returns a Provisioner over a fake clientset holding the
// template Deployment, whose listers hold classes and gateways, and the
// indexer of its Gateways.
func provisioner(t *testing.T, classes []*gatewayv1.GatewayClass, gws ...*gatewayv1.Gateway) (*Provisioner, *fake.Clientset, cache.Indexer) {
	t.Helper()
	kube := fake.NewClientset(template())
	gwIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	classIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, gw := range gws {
		if err := gwIdx.Add(gw); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range classes {
		if err := classIdx.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return &Provisioner{
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), kube: kube,
		gateways: gatewaylisters.NewGatewayLister(gwIdx), classes: gatewaylisters.NewGatewayClassLister(classIdx),
		template: types.NamespacedName{Namespace: "kube-system", Name: "traefik"},
	}, kube, gwIdx
}

func class(name string, controller gatewayv1.GatewayController) *gatewayv1.GatewayClass {
	return &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}
}

// made says whether the Deployment and the Service of the Gateway key
// exist; it fails t when only one does.
func made(t *testing.T, kube *fake.Clientset, key types.NamespacedName) bool {
	t.Helper()
	ctx := context.Background()
	_, derr := kube.AppsV1().Deployments("kube-system").Get(ctx, ObjectName(key), metav1.GetOptions{})
	_, serr := kube.CoreV1().Services("kube-system").Get(ctx, ObjectName(key), metav1.GetOptions{})
	for _, err := range []error{derr, serr} {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if (derr == nil) != (serr == nil) {
		t.Fatalf("deployment error %v, service error %v: one without the other", derr, serr)
	}
	return derr == nil
}

// TestReconcile checks that a Gateway of a traefik GatewayClass gets
// its objects, updated when its listeners change and removed when it is
// deleted, and that the addon's own Gateway and another controller's get
// none.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	web := gatewayWith("apps", "web", 80)
	own := gatewayWith("kube-system", "traefik", 80)
	other := gatewayWith("apps", "envoy", 80)
	other.Spec.GatewayClassName = "envoy"
	p, kube, gws := provisioner(t, []*gatewayv1.GatewayClass{class("traefik", ControllerName), class("envoy", "example.com/envoy")}, web, own, other)
	keyOf := func(gw *gatewayv1.Gateway) types.NamespacedName {
		return types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	}
	for _, gw := range []*gatewayv1.Gateway{web, own, other} {
		if err := p.reconcile(ctx, keyOf(gw)); err != nil {
			t.Fatalf("reconcile %s: %v", keyOf(gw), err)
		}
	}
	if !made(t, kube, keyOf(web)) {
		t.Error("Gateway apps/web has no Deployment and Service")
	}
	if made(t, kube, keyOf(own)) || made(t, kube, keyOf(other)) {
		t.Error("the addon's Gateway or another controller's got objects")
	}

	changed := web.DeepCopy()
	changed.Spec.Listeners = append(changed.Spec.Listeners, gatewayv1.Listener{Name: "alt", Port: 8080, Protocol: gatewayv1.HTTPProtocolType})
	if err := gws.Update(changed); err != nil {
		t.Fatal(err)
	}
	if err := p.reconcile(ctx, keyOf(web)); err != nil {
		t.Fatal(err)
	}
	svc, err := kube.CoreV1().Services("kube-system").Get(ctx, ObjectName(keyOf(web)), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 2 {
		t.Errorf("after a listener on 8080 was added, the Service's ports are %v", svc.Spec.Ports)
	}

	if err := gws.Delete(changed); err != nil {
		t.Fatal(err)
	}
	if err := p.reconcile(ctx, keyOf(web)); err != nil {
		t.Fatal(err)
	}
	if made(t, kube, keyOf(web)) {
		t.Error("the deleted Gateway's Deployment or Service is left")
	}
	if err := p.reconcile(ctx, keyOf(web)); err != nil {
		t.Errorf("reconciling a Gateway already removed: %v", err)
	}
}

// TestEnqueueMade checks that the objects of a Gateway deleted while the
// provisioner did not run are found at start and removed, and that those
// of a Gateway that still exists are kept.
func TestEnqueueMade(t *testing.T) {
	ctx := context.Background()
	kept := gatewayWith("apps", "kept", 80)
	p, kube, _ := provisioner(t, []*gatewayv1.GatewayClass{class("traefik", ControllerName)}, kept)
	gone := gatewayWith("apps", "gone", 80)
	for _, gw := range []*gatewayv1.Gateway{kept, gone} {
		deploy, svc, err := Objects(gw, template())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.AppsV1().Deployments(deploy.Namespace).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer p.queue.ShutDown()
	if err := p.enqueueMade(ctx); err != nil {
		t.Fatal(err)
	}
	if n := p.queue.Len(); n != 2 {
		t.Fatalf("%d Gateways queued, want 2", n)
	}
	for range 2 {
		key, _ := p.queue.Get()
		if err := p.reconcile(ctx, key); err != nil {
			t.Fatal(err)
		}
		p.queue.Done(key)
	}
	if made(t, kube, types.NamespacedName{Namespace: "apps", Name: "gone"}) {
		t.Error("the objects of a Gateway deleted meanwhile are left")
	}
	if !made(t, kube, types.NamespacedName{Namespace: "apps", Name: "kept"}) {
		t.Error("the objects of an existing Gateway were removed")
	}
}
