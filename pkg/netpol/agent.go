package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/healthz"
	coreinformers "k8s.io/client-go/informers/core/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/knftables"

	"github.com/kubernix/kubernix/internal/healthserve"
	"github.com/kubernix/kubernix/pkg/kubeconfig"
)

// Options configure Run.
type Options struct {
	// Kubeconfig is the agent's kubeconfig file: its identity may get,
	// list and watch pods, namespaces and networkpolicies.
	Kubeconfig string
	// Node is the name of the node whose pods the table filters.
	Node string
	// Table is the name of the inet table the agent owns in its network
	// namespace.
	Table string
	// Healthz is the address /healthz is served on over plain HTTP; it
	// answers 200 once the first table is applied.
	Healthz netip.AddrPort
}

// MinSyncInterval is the least time between two applies of the table:
// changes that arrive meanwhile are applied together. A change is thus
// enforced within MinSyncInterval plus one apply (a few ms).
const MinSyncInterval = 200 * time.Millisecond

// ResyncPeriod is how often the table is applied without a change, which
// restores it if something else in the namespace changed it. Between
// resyncs, a table that compiles to what was last applied is not applied
// again: most pod updates (status, conditions) change nothing in it, and
// each apply runs nft.
const ResyncPeriod = time.Minute

// Run follows the cluster's NetworkPolicies, pods and namespaces and
// keeps opts.Table compiled from them (Compile) until ctx is done,
// serving /healthz at opts.Healthz. It returns nil when ctx ends it, and
// errors when the kubeconfig cannot be read, nft is missing or the health
// address cannot be bound. The table stays when Run returns: the
// policies stay enforced while a restarted agent catches up; the node's
// network namespace, or kubernix's cleanup, removes it.
func Run(ctx context.Context, log *slog.Logger, opts Options) error {
	client, err := kubeconfig.Clientset(opts.Kubeconfig, "kubernix-netpol-agent")
	if err != nil {
		return err
	}
	nft, err := knftables.New(knftables.InetFamily, opts.Table)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	return run(ctx, log, client, nft, opts)
}

// run is Run with its API client and nftables made.
func run(ctx context.Context, log *slog.Logger, client kubernetes.Interface, nft knftables.Interface, opts Options) error {
	a := &agent{
		log: log, node: opts.Node, nft: nft,
		pods:       coreinformers.NewPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}),
		namespaces: coreinformers.NewNamespaceInformer(client, 0, cache.Indexers{}),
		policies:   networkinginformers.NewNetworkPolicyInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "netpol"}),
	}
	defer a.queue.ShutDown()
	if err := a.pods.SetTransform(slimPod); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{a.pods, a.namespaces, a.policies} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { a.queue.Add(syncKey) },
			UpdateFunc: func(any, any) { a.queue.Add(syncKey) },
			DeleteFunc: func(any) { a.queue.Add(syncKey) },
		}); err != nil {
			return err
		}
	}

	applied := healthz.NamedCheck("table-applied", func(*http.Request) error {
		if !a.applied.Load() {
			return errors.New("the table is not applied yet")
		}
		return nil
	})
	if err := healthserve.Start(ctx, log, opts.Healthz, applied); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		a.queue.ShutDown()
	}()
	for _, inf := range []cache.SharedIndexInformer{a.pods, a.namespaces, a.policies} {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), a.pods.HasSynced, a.namespaces.HasSynced, a.policies.HasSynced) {
		return nil // ctx is done
	}
	log.Info("network policy agent running", "node", opts.Node, "table", "inet "+opts.Table, "healthz", "http://"+opts.Healthz.String()+"/healthz")
	go a.resyncEvery(ctx, ResyncPeriod)
	for a.next(ctx) {
	}
	return nil
}

// resyncEvery asks for a forced apply every period (not at once: the
// first apply is one) until ctx is done.
func (a *agent) resyncEvery(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			a.resync.Store(true)
			a.queue.Add(syncKey)
		}
	}
}

// syncKey is the queue's one key: every change asks for a whole apply.
const syncKey = "table"

type agent struct {
	log     *slog.Logger
	node    string
	nft     knftables.Interface
	applied atomic.Bool
	// last is the transaction last applied (knftables' text of it), ""
	// before the first; resync asks the next apply to run even if the
	// table compiles to last.
	last   string
	resync atomic.Bool

	pods, namespaces, policies cache.SharedIndexInformer
	queue                      workqueue.TypedRateLimitingInterface[string]
}

// next applies the table once the queue asks, then waits
// MinSyncInterval; it returns false when the queue is shut down.
func (a *agent) next(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.apply(ctx); err != nil {
		a.log.Error("apply the table", "err", err)
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	select {
	case <-ctx.Done():
	case <-time.After(MinSyncInterval):
	}
	return true
}

// apply compiles the table from the caches and applies it.
func (a *agent) apply(ctx context.Context) error {
	in := Input{Node: a.node}
	for _, o := range a.pods.GetStore().List() {
		in.Pods = append(in.Pods, o.(*corev1.Pod))
	}
	for _, o := range a.namespaces.GetStore().List() {
		in.Namespaces = append(in.Namespaces, o.(*corev1.Namespace))
	}
	for _, o := range a.policies.GetStore().List() {
		in.Policies = append(in.Policies, o.(*networkingv1.NetworkPolicy))
	}
	tx := a.nft.NewTransaction()
	Compile(tx, in)
	text := tx.String()
	if resync := a.resync.Swap(false); text == a.last && !resync {
		return nil
	}
	start := time.Now()
	if err := a.nft.Run(ctx, tx); err != nil {
		a.last = "" // what the table holds now is not known: the retry applies
		return err
	}
	a.last = text
	if !a.applied.Swap(true) {
		a.log.Info("table applied", "policies", len(in.Policies), "pods", len(in.Pods), "took", time.Since(start).Round(time.Millisecond))
	} else {
		a.log.Debug("table applied", "policies", len(in.Policies), "pods", len(in.Pods), "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// slimPod keeps of a pod what Compile reads (its name, namespace and
// labels, node, host network, phase, IPs and container ports), so the
// cache of every pod of the cluster stays small.
func slimPod(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	slim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels,
			UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIPs: p.Status.PodIPs},
	}
	for _, c := range p.Spec.Containers {
		slim.Spec.Containers = append(slim.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
	}
	return slim, nil
}
