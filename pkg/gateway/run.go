package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// FieldManager is the server-side apply field manager of the objects
// the provisioner makes.
const FieldManager = "kubernix-gateway-provisioner"

// resync is how often every Gateway is reconciled again, which also puts
// back a Gateway's objects that somebody deleted.
const resync = 5 * time.Minute

// Provisioner makes and removes the objects of the Gateways traefik
// serves (Objects), one Gateway at a time per worker.
type Provisioner struct {
	log      *slog.Logger
	kube     kubernetes.Interface
	gateways gatewaylisters.GatewayLister
	classes  gatewaylisters.GatewayClassLister
	// template is the addon's traefik Deployment; its namespace and name
	// are also those of the addon's own Gateway, which is not ours.
	template types.NamespacedName
	queue    workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// Run runs a Provisioner of the Deployment template (namespace/name,
// e.g. kube-system/traefik) until ctx is done, with two workers. Until
// the Gateway API's CRDs exist its informers retry with backoff. It
// returns nil when ctx ends it.
func Run(ctx context.Context, log *slog.Logger, kube kubernetes.Interface, gw gatewayclient.Interface, template types.NamespacedName) error {
	gwInf := gatewayinformers.NewGatewayInformer(gw, metav1.NamespaceAll, resync, cache.Indexers{})
	classInf := gatewayinformers.NewGatewayClassInformer(gw, resync, cache.Indexers{})
	p := &Provisioner{
		log: log, kube: kube, template: template,
		gateways: gatewaylisters.NewGatewayLister(gwInf.GetIndexer()),
		classes:  gatewaylisters.NewGatewayClassLister(classInf.GetIndexer()),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "gateways"}),
	}
	defer p.queue.ShutDown()
	if _, err := gwInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: p.enqueue, UpdateFunc: func(_, obj any) { p.enqueue(obj) }, DeleteFunc: p.enqueue,
	}); err != nil {
		return err
	}
	if _, err := classInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: p.enqueueClass, UpdateFunc: func(_, obj any) { p.enqueueClass(obj) }, DeleteFunc: p.enqueueClass,
	}); err != nil {
		return err
	}
	go gwInf.RunWithContext(ctx)
	go classInf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), gwInf.HasSynced, classInf.HasSynced) {
		return nil
	}
	if err := p.enqueueMade(ctx); err != nil {
		return err
	}
	log.Info("gateway provisioner running", "template", template)
	for range 2 {
		go wait.UntilWithContext(ctx, p.work, time.Second)
	}
	<-ctx.Done()
	return nil
}

// enqueue queues the Gateway obj (or its tombstone).
func (p *Provisioner) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
		p.queue.Add(types.NamespacedName{Namespace: ns, Name: name})
	}
}

// enqueueClass queues the Gateways of the GatewayClass obj.
func (p *Provisioner) enqueueClass(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	gws, err := p.gateways.List(labels.Everything())
	if err != nil {
		return
	}
	for _, gw := range gws {
		if string(gw.Spec.GatewayClassName) == key {
			p.enqueue(gw)
		}
	}
}

// enqueueMade queues the Gateways that objects were made for, so that
// those of Gateways deleted while the provisioner did not run go too.
func (p *Provisioner) enqueueMade(ctx context.Context) error {
	list, err := p.kube.AppsV1().Deployments(p.template.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelGateway})
	if err != nil {
		return fmt.Errorf("list the Gateways' deployments: %w", err)
	}
	for _, d := range list.Items {
		if ns, name, err := cache.SplitMetaNamespaceKey(d.Annotations[AnnotationGateway]); err == nil && name != "" {
			p.queue.Add(types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	return nil
}

// work reconciles queued Gateways until the queue shuts down.
func (p *Provisioner) work(ctx context.Context) {
	for {
		key, quit := p.queue.Get()
		if quit {
			return
		}
		if err := p.reconcile(ctx, key); err != nil {
			p.log.Warn("gateway: retrying", "gateway", key, "err", err)
			p.queue.AddRateLimited(key)
		} else {
			p.queue.Forget(key)
		}
		p.queue.Done(key)
	}
}

// reconcile makes or updates the objects of the Gateway key when traefik
// serves it, and removes them when it is gone or another controller's.
func (p *Provisioner) reconcile(ctx context.Context, key types.NamespacedName) error {
	if key == p.template {
		return nil
	}
	gw, err := p.gateways.Gateways(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) || (err == nil && (gw.DeletionTimestamp != nil || !p.ours(gw))) {
		return p.remove(ctx, key)
	}
	if err != nil {
		return err
	}
	tmpl, err := p.kube.AppsV1().Deployments(p.template.Namespace).Get(ctx, p.template.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("template %s: %w", p.template, err)
	}
	deploy, svc, err := Objects(gw, tmpl)
	if err != nil {
		p.log.Warn("gateway: not served", "gateway", key, "err", err)
		return nil
	}
	if err := apply(ctx, svc, svc.Name, p.kube.CoreV1().Services(svc.Namespace).Patch); err != nil {
		return err
	}
	return apply(ctx, deploy, deploy.Name, p.kube.AppsV1().Deployments(deploy.Namespace).Patch)
}

// ours says whether traefik serves gw's GatewayClass.
func (p *Provisioner) ours(gw *gatewayv1.Gateway) bool {
	class, err := p.classes.Get(string(gw.Spec.GatewayClassName))
	return err == nil && class.Spec.ControllerName == ControllerName
}

// remove deletes the Deployment and Service of the Gateway key; the
// LoadBalancer controller then frees the Service's addresses.
func (p *Provisioner) remove(ctx context.Context, key types.NamespacedName) error {
	name, ns := ObjectName(key), p.template.Namespace
	err := p.kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = p.kube.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// patchFunc is a typed client's Patch.
type patchFunc[T any] func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)

// apply server-side applies obj (with its TypeMeta) named name through
// patch, taking the fields over from other managers.
func apply[T any](ctx context.Context, obj any, name string, patch patchFunc[T]) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	force := true
	_, err = patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	return err
}
