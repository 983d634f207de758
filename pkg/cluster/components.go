package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/components/controllermanager"
	"github.com/kubernix/kubernix/pkg/components/etcd"
	"github.com/kubernix/kubernix/pkg/components/scheduler"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// APIServerReady names the component that is ready once the apiserver's
// /readyz passes: its post-start hooks have made the bootstrap RBAC policy,
// priority classes and system namespaces. The kube-apiserver component
// itself is ready as soon as the apiserver serves: the kubelets (which the
// node authorizer allows without RBAC objects) and the controller-manager
// (which waits for /healthz itself) need no more; the apiserver's RBAC
// bootstrap alone waits one second before it begins (k8s.io/kubernetes
// pkg/registry/rbac/rest: wait.Poll).
const APIServerReady = "apiserver-ready"

// register adds every component of the cluster to the registry.
func (c *Cluster) register(r *component.Registry) error {
	cp, err := c.controlPlane()
	if err != nil {
		return err
	}
	if err := r.Add(cp...); err != nil {
		return err
	}
	if err := r.Add(component.WithNeeds(controllerAccounts{c}, APIServerReady)); err != nil {
		return err
	}
	if err := r.Add(component.WithNeeds(clusterAdmins{c}, APIServerReady)); err != nil {
		return err
	}
	for _, nd := range c.Plan.Nodes {
		ncs, err := c.nodeComponents(nd)
		if err != nil {
			return fmt.Errorf("node %s: %w", nd.Name, err)
		}
		if err := r.Add(ncs...); err != nil {
			return err
		}
	}
	var before []string // every component that starts before the addons
	for _, ph := range component.Phases {
		if ph < component.Addons {
			for _, comp := range r.Components(ph) {
				before = append(before, comp.Name())
			}
		}
	}
	for _, name := range c.Plan.Cfg.Addons {
		switch name {
		case "coredns":
			if err := r.Add(c.coreDNS().components(before)...); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown addon %q", name)
		}
	}
	return nil
}

// cmd fills the common fields of a component's process.Command.
func (c *Cluster) cmd(scope, name string, pc process.Command) process.Command {
	pc.Scope = scope
	pc.LogFile = c.Plan.Paths.Log(scope, name)
	pc.RunDir = c.Plan.Paths.Run(scope, name)
	if pc.Env == nil {
		pc.Env = c.env()
	}
	return pc
}

// env is the environment of every component: the host's, with PATH led by
// the directory of our binaries (containerd finds its shim there).
func (c *Cluster) env() []string {
	dirs := []string{filepath.Dir(c.Plan.Bin("containerd"))}
	if p := c.Plan.Bin("runc"); p != "" {
		dirs = append(dirs, filepath.Dir(p))
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+strings.Join(append(dirs, filepath.SplitList(os.Getenv("PATH"))...), ":"))
}

func (c *Cluster) controlPlane() ([]component.Component, error) {
	p := c.Plan
	scope := config.ControlPlaneScope
	etcdSpec := etcd.Spec{
		Binary: p.Bin("etcd"), Name: p.Cfg.Name, DataDir: p.Paths.EtcdData(),
		IP: p.APIServerIP, PKI: c.PKI,
	}
	etcdTLS, err := components.ClientTLS(c.PKI.EtcdCA.Cert, c.PKI.APIServerEtcdClient)
	if err != nil {
		return nil, err
	}
	apiSpec := apiserver.Spec{
		Binary: p.Bin("kube-apiserver"), IP: p.APIServerIP, Port: p.Cfg.APIServerPort,
		EtcdURL: etcdSpec.ClientURL(), ServiceCIDR: p.Net.Service, ClusterDomain: p.Cfg.ClusterDomain,
		PKI: c.PKI, AuditPolicyFile: p.Paths.AuditPolicy(), AuditLogFile: p.Paths.Log(scope, "audit"),
	}
	// The apiserver's probes run before RBAC has its bootstrap policy (the
	// admin's group has no binding yet): only system:masters passes.
	superAdminTLS, err := components.ClientTLS(c.PKI.CA.Cert, c.PKI.SuperAdmin)
	if err != nil {
		return nil, err
	}
	cmSpec := controllermanager.Spec{
		Binary: p.Bin("kube-controller-manager"), Kubeconfig: p.Paths.Kubeconfig("kube-controller-manager"),
		IP: p.APIServerIP, ClusterCIDR: p.Net.Cluster, NodeMaskSize: p.Net.NodeMaskSize,
		ServiceCIDR: p.Net.Service, PKI: c.PKI,
	}
	schedSpec := scheduler.Spec{
		Binary: p.Bin("kube-scheduler"), Kubeconfig: p.Paths.Kubeconfig("kube-scheduler"),
		IP: p.APIServerIP, CAFile: c.PKI.CA.Cert, RequestHeaderCAFile: c.PKI.FrontProxyCA.Cert,
		Serving: c.PKI.SchedulerServing,
	}
	// The controller-manager and scheduler serve with certificates of the
	// cluster CA; their /healthz needs no client certificate.
	caOnly, err := components.ClientTLS(c.PKI.CA.Cert, pki.Pair{})
	if err != nil {
		return nil, err
	}
	return []component.Component{
		&components.Proc{
			ComponentName: "etcd", ComponentPhase: component.Infrastructure, Log: c.Log,
			Command: c.cmd(scope, "etcd", etcd.Command(etcdSpec)),
			Probe:   process.HTTPGet(etcdSpec.ClientURL()+"/health", etcdTLS),
		},
		// Only etcd: not the node sandboxes of the same phase. Ready is
		// serving here (/livez/ping); APIServerReady waits for /readyz.
		component.WithNeeds(&components.Proc{
			ComponentName: "kube-apiserver", ComponentPhase: component.ControlPlane, Log: c.Log,
			Command:   c.cmd(scope, "kube-apiserver", apiserver.Command(apiSpec)),
			Prepare:   func(context.Context) error { return writeAuditPolicy(apiSpec.AuditPolicyFile) },
			Probe:     process.HTTPGet(apiSpec.URL()+"/livez/ping", superAdminTLS),
			StopGrace: 0, // default; Stop re-sends SIGTERM half-way, which ends a stuck apiserver
		}, "etcd"),
		component.WithNeeds(&components.Gate{
			ComponentName: APIServerReady, ComponentPhase: component.ControlPlane,
			Probe: process.HTTPGet(apiSpec.URL()+"/readyz", superAdminTLS),
		}, "kube-apiserver"),
		// The controller-manager starts with the apiserver serving: it
		// waits for the apiserver's /healthz itself (up to 10 s, then it
		// exits and is restarted) before it makes its controllers, and
		// its process start-up (1 to 1.5 s on 2 busy cores) overlaps the
		// apiserver's post-start hooks.
		component.WithNeeds(&components.Proc{
			ComponentName: "kube-controller-manager", ComponentPhase: component.Controller, Log: c.Log,
			Command: c.cmd(scope, "kube-controller-manager", controllermanager.Command(cmSpec)),
			Probe:   process.HTTPGet(cmSpec.HealthURL(), caOnly),
		}, "kube-apiserver"),
		// The scheduler lists and watches as system:kube-scheduler, whose
		// RBAC bindings exist only once the apiserver is ready; a
		// forbidden list would back off for up to 1.6 s.
		component.WithNeeds(&components.Proc{
			ComponentName: "kube-scheduler", ComponentPhase: component.Controller, Log: c.Log,
			Command: c.cmd(scope, "kube-scheduler", scheduler.Command(schedSpec)),
			Probe:   process.HTTPGet(schedSpec.HealthURL(), caOnly),
			// Before it schedules anything onto a node a smaller
			// cluster no longer has.
			Prepare: c.deleteStaleNodes,
		}, APIServerReady),
	}, nil
}

// writeAuditPolicy renders the apiserver's audit policy to path.
func writeAuditPolicy(path string) error {
	b, err := apiserver.AuditPolicy()
	if err != nil {
		return fmt.Errorf("render audit policy: %w", err)
	}
	return writeFile(path, b)
}

// errNodeFailed marks a node given up on.
var errNodeFailed = errors.New("node failed")
