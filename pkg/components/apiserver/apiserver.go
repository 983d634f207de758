// Package apiserver builds the kube-apiserver command line: TLS everywhere,
// etcd reached with a certificate of the etcd CA, Node and RBAC
// authorization, the NodeRestriction admission plugin, secrets encrypted at
// rest, the request-header (front-proxy) authentication of the aggregation
// layer and an audit log at metadata level, listening only on the cluster
// bridge address.
package apiserver

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/kubernix/kubernix/pkg/release"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditpolicy "k8s.io/apiserver/pkg/audit/policy"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/etcd"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "kube-apiserver"

// ReadyName names the gate that is ready once the apiserver's /readyz
// passes: its post-start hooks have made the bootstrap RBAC policy,
// priority classes and system namespaces. The kube-apiserver component
// itself is ready as soon as the apiserver serves: the kubelets (which the
// node authorizer allows without RBAC objects) and the controller-manager
// (which waits for /healthz itself) need no more; the apiserver's RBAC
// bootstrap alone waits one second before it begins (k8s.io/kubernetes
// pkg/registry/rbac/rest: wait.Poll).
const ReadyName = "apiserver-ready"

// Rotation of the audit log (lumberjack in the apiserver): at most
// AuditLogMaxSizeMB megabytes per file and AuditLogMaxBackups rotated
// files, so the log takes at most 150 MB of the state dir.
const (
	AuditLogMaxSizeMB  = 50
	AuditLogMaxBackups = 2
)

// Spec is what the kube-apiserver command line is built from.
type Spec struct {
	// Release is the Kubernetes release Binary is built for: flags and
	// config fields that differ between releases are chosen from it.
	Release release.Release
	Binary  string
	// IP is both the bind and the advertise address: the host side of the
	// cluster bridge, local to this machine and reachable from pods through
	// the kubernetes Service. (Advertising 127.0.0.1 is rejected by the
	// endpoint reconciler, and binding all interfaces would expose it.)
	IP      netip.Addr
	Port    int
	EtcdURL string
	// ServiceCIDRs are the service CIDRs, one per IP family, primary
	// first; the kubernetes Service takes the primary's first address.
	ServiceCIDRs  []netip.Prefix
	ClusterDomain string
	PKI           *pki.Bundle
	// AuditPolicyFile is where AuditPolicy's output is written (the
	// apiserver's --audit-policy-file); AuditLogFile where the apiserver
	// writes audit events, one JSON object a line, rotated (see
	// AuditLogMaxSizeMB).
	AuditPolicyFile, AuditLogFile string
	// Policy, if set, is the audit policy (YAML or JSON of an
	// audit.k8s.io/v1 Policy) written to AuditPolicyFile instead of
	// kubernix's (AuditPolicy); CheckAuditPolicy must accept it.
	Policy []byte
	// FeatureGates are set with --feature-gates, gate name to on or off
	// (config.Config.FeatureGates); none when empty.
	FeatureGates map[string]bool
	// RuntimeConfig is --runtime-config: API group/versions (or api/all,
	// api/beta...) to "true" or "false"; none when empty.
	RuntimeConfig map[string]string
	// NoWatchCache runs the apiserver with --watch-cache=false: it keeps
	// no cache of each resource, so every list and watch is served from
	// etcd (one etcd watch per client watch; a streaming list, watch with
	// sendInitialEvents, is a consistent list from etcd followed by its
	// watch: k8s.io/apiserver pkg/storage/etcd3/watcher.go). It starts
	// with less CPU and memory than an apiserver that fills a cache per
	// resource. Only for an ephemeral cluster (config.Config.Ephemeral).
	NoWatchCache bool
}

// URL is the apiserver's https endpoint.
func (s Spec) URL() string {
	return "https://" + netip.AddrPortFrom(s.IP, uint16(s.Port)).String()
}

// PortFlag is the kubernix flag that sets the apiserver's secure port.
const PortFlag = "--apiserver-port"

// Describe returns the apiserver, which needs only etcd and is ready
// once it serves (/livez/ping), and the ReadyName gate (/readyz). Both
// probe as the super-admin: before RBAC has its bootstrap policy only
// system:masters passes. It errors only if the audit policy does not
// render.
func Describe(s Spec) ([]components.Description, error) {
	policy := s.Policy
	if policy == nil {
		var err error
		if policy, err = AuditPolicy(); err != nil {
			return nil, fmt.Errorf("render audit policy: %w", err)
		}
	}
	probe := func(path string) components.Probe {
		return components.Probe{HTTPGet: s.URL() + path, CAFile: s.PKI.CA.Cert, Client: s.PKI.SuperAdmin}
	}
	return []components.Description{{
		Name: Name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.ControlPlane,
		Needs: []string{etcd.Name}, Binary: Name, Command: Command(s),
		Files: []components.File{{Path: s.AuditPolicyFile, Content: policy}},
		Ports: []components.Port{{IP: s.IP, Port: s.Port, Flag: PortFlag}},
		Probe: probe("/livez/ping"),
	}, {
		Name: ReadyName, Scope: config.ControlPlaneScope, Kind: components.KindGate, Phase: boot.ControlPlane,
		Needs: []string{Name}, Probe: probe("/readyz"),
	}}, nil
}

// CheckAuditPolicy returns an error saying why the apiserver would refuse
// policy (YAML or JSON) as its --audit-policy-file: it is decoded and
// validated by the apiserver's own loader (k8s.io/apiserver
// pkg/audit/policy), which takes an audit.k8s.io/v1 Policy with at least
// one rule.
func CheckAuditPolicy(policy []byte) error {
	_, err := auditpolicy.LoadPolicyFromBytes(policy)
	return err
}

// Command returns kube-apiserver's process.
func Command(s Spec) process.Command {
	p := s.PKI
	args := []string{
		"--advertise-address=" + s.IP.String(),
		"--bind-address=" + s.IP.String(),
		"--secure-port=" + strconv.Itoa(s.Port),
		"--etcd-servers=" + s.EtcdURL,
		"--etcd-cafile=" + p.EtcdCA.Cert,
		"--etcd-certfile=" + p.APIServerEtcdClient.Cert,
		"--etcd-keyfile=" + p.APIServerEtcdClient.Key,
		"--client-ca-file=" + p.CA.Cert,
		"--tls-cert-file=" + p.APIServer.Cert,
		"--tls-private-key-file=" + p.APIServer.Key,
		"--kubelet-client-certificate=" + p.APIServerKubeletClient.Cert,
		"--kubelet-client-key=" + p.APIServerKubeletClient.Key,
		"--kubelet-certificate-authority=" + p.CA.Cert,
		// The aggregation layer (k8s.io/kubernetes cmd/kubeadm/app/phases/
		// controlplane: the same flags): requests the apiserver proxies to
		// an extension apiserver carry the user in these headers, vouched
		// for by the front-proxy client certificate.
		"--requestheader-client-ca-file=" + p.FrontProxyCA.Cert,
		"--requestheader-allowed-names=" + pki.FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.FrontProxyClient.Cert,
		"--proxy-client-key-file=" + p.FrontProxyClient.Key,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-issuer=https://kubernetes.default.svc." + s.ClusterDomain,
		"--service-account-key-file=" + p.ServiceAccountPub,
		"--service-account-signing-key-file=" + p.ServiceAccountKey,
		"--service-cluster-ip-range=" + components.JoinPrefixes(s.ServiceCIDRs),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--encryption-provider-config=" + p.EncryptionConfig,
		"--allow-privileged=true",
		"--profiling=false",
		"--enable-bootstrap-token-auth=false",
		"--audit-policy-file=" + s.AuditPolicyFile,
		"--audit-log-path=" + s.AuditLogFile,
		"--audit-log-format=json",
		"--audit-log-maxsize=" + strconv.Itoa(AuditLogMaxSizeMB),
		"--audit-log-maxbackup=" + strconv.Itoa(AuditLogMaxBackups),
	}
	if s.NoWatchCache {
		args = append(args, "--watch-cache=false")
	}
	args = append(args, components.FeatureGatesArgs(s.FeatureGates)...)
	args = append(args, components.MapArgs("runtime-config", s.RuntimeConfig)...)
	return process.Command{Path: s.Binary, Args: args}
}

// AuditPolicy returns the audit policy the apiserver runs with, as YAML
// starting with a "generated by kubernix" line: every request at level
// Metadata (who did what to which object, and the response code; no
// request or response bodies, so no secret's data), from the
// ResponseStarted stage on, except the health endpoints, which the
// supervisor and the kubelets poll.
func AuditPolicy() ([]byte, error) {
	policy := auditv1.Policy{
		TypeMeta:   metav1.TypeMeta{APIVersion: auditv1.SchemeGroupVersion.String(), Kind: "Policy"},
		OmitStages: []auditv1.Stage{auditv1.StageRequestReceived},
		Rules: []auditv1.PolicyRule{
			{Level: auditv1.LevelNone, NonResourceURLs: []string{"/healthz*", "/livez*", "/readyz*"}},
			{Level: auditv1.LevelMetadata},
		},
	}
	return components.RenderYAML(policy, "audit policy")
}
