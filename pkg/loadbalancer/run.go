package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/util/feature"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"

	"github.com/kubernix/kubernix/internal/healthserve"
	"github.com/kubernix/kubernix/pkg/kubeconfig"
)

// Options configure Run.
type Options struct {
	// Kubeconfig is the controller's kubeconfig file: its identity needs
	// the upstream ClusterRole system:controller:service-controller.
	Kubeconfig string
	// Pools are the prefixes LoadBalancer IPs come from, one or two, one
	// per IP family, primary first (see ValidatePools).
	Pools []netip.Prefix
	// ClusterName is the cluster's name, as the service controller passes
	// it to the LoadBalancer (unused by Pool).
	ClusterName string
	// Healthz is the address /healthz is served on over plain HTTP, e.g.
	// 10.10.0.1:10258; it answers 200 once the Service and Node caches
	// are synced.
	Healthz netip.AddrPort
	// RootlesskitAPI, in a rootless cluster, is rootlesskit's API socket:
	// each LoadBalancer IP's ports are then also published on the host's
	// 127.0.0.1 (RootlessPorts; IPv4 addresses only). "" as root.
	RootlesskitAPI string
}

// Run runs the upstream service controller with a Provider of
// opts.Pools until ctx is done, serving /healthz at opts.Healthz. It
// returns nil when ctx ends it, and errors when the kubeconfig cannot be
// read, the pools are not usable (ValidatePools) or the health address
// cannot be bound.
func Run(ctx context.Context, log *slog.Logger, opts Options) error {
	client, err := kubeconfig.Clientset(opts.Kubeconfig, "kubernix-cloud-controller")
	if err != nil {
		return err
	}
	services := serviceInformer{coreinformers.NewServiceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{})}
	nodes := nodeInformer{coreinformers.NewNodeInformer(client, 0, cache.Indexers{})}
	pool, err := NewPool(opts.Pools, services.Lister())
	if err != nil {
		return err
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubernix-cloud-controller"})
	pool.RecordEvents(recorder)
	if opts.RootlesskitAPI != "" {
		pub, err := NewRootlessPorts(opts.RootlesskitAPI)
		if err != nil {
			return err
		}
		pool.PublishWith(pub, recorder)
	}
	ctrl, err := servicecontroller.New(NewProvider(pool), client, services, nodes, opts.ClusterName, feature.DefaultFeatureGate)
	if err != nil {
		return fmt.Errorf("service controller: %w", err)
	}
	synced := healthz.NamedCheck("informer-sync", func(*http.Request) error {
		if !services.Informer().HasSynced() || !nodes.Informer().HasSynced() {
			return errors.New("the Service and Node caches are not synced yet")
		}
		return nil
	})
	if err := healthserve.Start(ctx, log, opts.Healthz, synced); err != nil {
		return err
	}
	go services.inf.RunWithContext(ctx)
	go nodes.inf.RunWithContext(ctx)
	log.Info("service controller running", "pools", opts.Pools, "healthz", "http://"+opts.Healthz.String()+"/healthz")
	// One worker: allocations are decided one Service at a time.
	ctrl.Run(ctx, 1, controllersmetrics.NewControllerManagerMetrics("kubernix-cloud-controller"))
	return nil
}

// serviceInformer and nodeInformer are the two informers the service
// controller takes, made alone: a SharedInformerFactory would link the
// informers of every API group into kubernix.
type serviceInformer struct{ inf cache.SharedIndexInformer }

func (s serviceInformer) Informer() cache.SharedIndexInformer { return s.inf }
func (s serviceInformer) Lister() corelisters.ServiceLister {
	return corelisters.NewServiceLister(s.inf.GetIndexer())
}

type nodeInformer struct{ inf cache.SharedIndexInformer }

func (n nodeInformer) Informer() cache.SharedIndexInformer { return n.inf }
func (n nodeInformer) Lister() corelisters.NodeLister {
	return corelisters.NewNodeLister(n.inf.GetIndexer())
}
