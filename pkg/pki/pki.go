// Package pki creates and maintains the key material of a kubernix cluster,
// split as kubeadm splits it (k8s.io/kubernetes cmd/kubeadm/app/phases/certs):
// three CAs, each trusted only where it must be,
//   - the cluster CA: the apiserver's serving certificate, the control-plane
//     clients, the admin users and every kubelet (and, through the
//     controller-manager, every approved CSR);
//   - the etcd CA: etcd's server and peer certificates and the apiserver's
//     etcd client certificate, nothing else, so no certificate of the
//     cluster CA opens etcd;
//   - the front-proxy (request-header) CA: the apiserver's front-proxy
//     client certificate for the aggregation layer;
//
// the service-account signing key pair and the apiserver's
// encryption-at-rest configuration. Everything lives as PEM (or YAML) files
// in one directory.
//
// Ensure is idempotent: what is on disk and still good is reused, so a
// restarted cluster keeps its identities, and only what is missing, broken
// or no longer matching the Spec is written again.
package pki

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// DefaultValidity is the lifetime of a leaf certificate when
	// Spec.Validity is zero: one year.
	DefaultValidity = 365 * 24 * time.Hour
	// CAValidity is the lifetime of a newly created CA: ten years.
	CAValidity = 10 * 365 * 24 * time.Hour
	// RenewBefore is the remaining lifetime under which Ensure replaces a
	// certificate (a CA included) instead of reusing it, and under which
	// Expiring reports it: 30 days, so `kubernix status` warns a month
	// ahead and any up in that month renews.
	RenewBefore = 30 * 24 * time.Hour
)

// Names and groups in certificates that other parts of kubernix refer to.
const (
	// ClusterAdminsGroup is the organization (group) of the admin
	// credential the user's kubeconfig holds. It is bound to the
	// cluster-admin ClusterRole by a ClusterRoleBinding of the same name,
	// which kubernix creates at boot, so access can be revoked, unlike
	// system:masters (kubeadm >= 1.29 does the same with
	// kubeadm:cluster-admins).
	ClusterAdminsGroup = "kubernix:cluster-admins"
	// MastersGroup is the group the apiserver authorizes for everything
	// without asking RBAC (k8s.io/apiserver user.SystemPrivilegedGroup).
	// Only the super-admin credential, which stays in the state dir, has it.
	MastersGroup = "system:masters"
	// FrontProxyClientName is the common name of the front-proxy client
	// certificate: the one name the apiserver's
	// --requestheader-allowed-names accepts.
	FrontProxyClientName = "front-proxy-client"
	// APIServerKubeletClientName is the user (common name) the apiserver
	// authenticates as towards kubelets; RBAC binds it to
	// system:kubelet-api-admin, as kubeadm does.
	APIServerKubeletClientName = "kube-apiserver-kubelet-client"
	// CloudControllerName is the user (common name, no group) of the
	// cloud controller's client certificate (pkg/loadbalancer); an RBAC
	// binding gives it the upstream ClusterRole
	// system:controller:service-controller.
	CloudControllerName = "kubernix:cloud-controller"
	// NetpolAgentName is the user (common name, no group) of the nodes'
	// NetworkPolicy agents' client certificate (pkg/netpol); an RBAC
	// binding gives it the ClusterRole of the same name: get, list and
	// watch pods, namespaces and networkpolicies.
	NetpolAgentName = "kubernix:netpol-agent"
)

// File modes of what Ensure writes.
const (
	dirMode  os.FileMode = 0o700
	keyMode  os.FileMode = 0o600
	certMode os.FileMode = 0o644
)

// Spec says which identities a cluster needs.
type Spec struct {
	// Dir is the directory the files live in, e.g. <state>/pki. It is
	// created with mode 0700 if missing (and set to 0700 if present).
	Dir string
	// ClusterName is used in the CA's common name "kubernix-<ClusterName> CA".
	ClusterName string
	// APIServerIPs are the IP SANs of the apiserver serving certificate: the
	// bind/advertise address and the first service IP (e.g. 10.10.1.1).
	// 127.0.0.1 is always added.
	APIServerIPs []net.IP
	// APIServerDNSNames are DNS SANs of the apiserver serving certificate in
	// addition to kubernetes, kubernetes.default, kubernetes.default.svc,
	// kubernetes.default.svc.cluster.local and localhost, which are always
	// present.
	APIServerDNSNames []string
	// EtcdIPs are the IP SANs of the etcd server and peer certificates;
	// 127.0.0.1 and the DNS name localhost are always added.
	EtcdIPs []net.IP
	// Nodes get one kubelet serving and one kubelet client certificate each.
	Nodes []Node
	// Services get one serving certificate each: in-cluster servers that
	// the apiserver dials by their Service's name, such as an aggregated
	// apiserver (metrics-server) behind an APIService.
	Services []Service
	// Validity is the lifetime of newly issued leaf certificates;
	// DefaultValidity if zero. It is capped at the CA's expiry. A value of
	// RenewBefore or less makes every Ensure reissue the leaves.
	Validity time.Duration
}

// Node is one kubelet of the cluster.
type Node struct {
	// Name is the node name (a DNS-1123 subdomain): the kubelet client
	// certificate is for system:node:<Name>, the serving certificate carries
	// Name as a DNS SAN.
	Name string
	// IPs are the IP SANs of the kubelet serving certificate.
	IPs []net.IP
}

// Service is an in-cluster Service whose pods serve TLS with a
// certificate of the cluster CA. Its DNS SANs are <Name>,
// <Name>.<Namespace>, <Name>.<Namespace>.svc (the name the aggregation
// layer verifies, k8s.io/kube-aggregator's proxy handler) and, with
// ClusterDomain, <Name>.<Namespace>.svc.<ClusterDomain>.
type Service struct {
	// Name and Namespace name the Service (DNS-1123 labels).
	Name, Namespace string
	// ClusterDomain is the cluster's DNS domain, e.g. "cluster.local";
	// "" leaves the fully qualified name out.
	ClusterDomain string
}

// Key is the Service's "namespace/name", its key in Bundle.Services.
func (s Service) Key() string { return s.Namespace + "/" + s.Name }

// Pair is the path of a PEM certificate and the path of its PEM private key.
type Pair struct {
	Cert, Key string
}

// KubeletPair are the two certificates of one node's kubelet.
type KubeletPair struct {
	// Serving is the kubelet's HTTPS serving certificate (ServerAuth).
	Serving Pair
	// Client is the kubelet's apiserver client certificate,
	// CN system:node:<name>, O system:nodes (ClientAuth).
	Client Pair
}

// Bundle is the on-disk result of Ensure: paths of everything it made sure
// exists. Every certificate but the CAs' is signed by CA, except those the
// field comments say EtcdCA or FrontProxyCA signs.
type Bundle struct {
	// CA is the cluster CA (ECDSA P-256, self-signed).
	CA Pair
	// EtcdCA is the etcd CA (ECDSA P-256, self-signed): it signs
	// APIServerEtcdClient, EtcdServer and EtcdPeer, and etcd trusts it
	// alone.
	EtcdCA Pair
	// FrontProxyCA is the request-header CA of the aggregation layer
	// (ECDSA P-256, self-signed): it signs FrontProxyClient only.
	FrontProxyCA Pair

	// APIServer is the apiserver serving certificate.
	APIServer Pair
	// APIServerKubeletClient is the apiserver's client certificate towards
	// kubelets (CN APIServerKubeletClientName, no group).
	APIServerKubeletClient Pair
	// APIServerEtcdClient is the apiserver's client certificate towards
	// etcd, signed by EtcdCA.
	APIServerEtcdClient Pair
	// FrontProxyClient is the apiserver's client certificate towards
	// aggregated apiservers (CN FrontProxyClientName), signed by
	// FrontProxyCA.
	FrontProxyClient Pair

	// EtcdServer is etcd's client-facing serving certificate, signed by
	// EtcdCA.
	EtcdServer Pair
	// EtcdPeer is etcd's peer certificate (server and client auth), signed
	// by EtcdCA.
	EtcdPeer Pair

	// ControllerManager, Scheduler and KubeProxy are client certificates
	// for system:kube-controller-manager, system:kube-scheduler and
	// system:kube-proxy.
	ControllerManager, Scheduler, KubeProxy Pair
	// CloudController is the cloud controller's client certificate
	// (CN CloudControllerName).
	CloudController Pair
	// NetpolAgent is the NetworkPolicy agents' client certificate (CN
	// NetpolAgentName), one for every node.
	NetpolAgent Pair
	// Admin is the user's client certificate: kubernix-admin, O
	// ClusterAdminsGroup (cluster-admin through RBAC).
	Admin Pair
	// SuperAdmin is kubernix's own client certificate:
	// kubernix-super-admin, O MastersGroup. The supervisor uses it to
	// bootstrap the cluster (before RBAC has any binding) and it is never
	// handed to the user's kubeconfig.
	SuperAdmin Pair

	// ControllerManagerServing and SchedulerServing are the serving
	// certificates of kube-controller-manager's and kube-scheduler's secure
	// ports (ServerAuth; IP SANs: APIServerIPs and 127.0.0.1, the control
	// plane's addresses). Without them each generates a self-signed CA and
	// certificate, two RSA-2048 keys, at every start.
	ControllerManagerServing, SchedulerServing Pair

	// Kubelets holds the certificates of each node, by node name.
	Kubelets map[string]KubeletPair

	// Services holds the serving certificate of each Spec.Services, by
	// Service.Key.
	Services map[string]Pair

	// ServiceAccountKey is the path of the service-account signing key
	// (0600): ECDSA P-256 (SEC 1 PEM), or the RSA key of an older kubernix
	// (PKCS#1 PEM); ServiceAccountPub the path of its public key (PKIX
	// PEM, 0644).
	ServiceAccountKey, ServiceAccountPub string

	// EncryptionConfig is the path of the apiserver EncryptionConfiguration
	// (secretbox with a random 32-byte key for secrets, identity fallback),
	// mode 0600.
	EncryptionConfig string

	// Generated lists the paths Ensure wrote in this call, in write order;
	// it is empty when everything on disk was reused.
	Generated []string
}

// Ensure makes sure every file the Spec calls for exists in spec.Dir and
// returns their paths.
//
// A file set is reused when it parses, its key matches, it is signed by the
// current CA of its kind (cluster, etcd or front-proxy), its subject,
// extended key usages and SANs cover what the Spec asks for, and it is
// valid for more than RenewBefore; otherwise only that certificate and key
// are issued again. A state dir of an older kubernix, whose etcd
// certificates the cluster CA signed and whose admin was system:masters, is
// migrated that way: its etcd and admin certificates are issued again. A
// missing or invalid CA is replaced, which reissues every certificate it
// signs. The service-account key pair and the
// encryption configuration are not signed by the CA and are kept as long as
// they are valid, so a new CA does not make existing tokens or encrypted
// secrets in etcd unreadable.
//
// Files are written atomically (temporary file and rename); keys and the
// encryption configuration get mode 0600, certificates and the public key
// 0644. An invalid Spec yields one error listing every problem; I/O and
// crypto errors are wrapped with the file they concern.
func Ensure(spec Spec) (*Bundle, error) {
	return ensure(spec, time.Now())
}

// ensure is Ensure at a given time, so tests can move the clock.
func ensure(spec Spec, now time.Time) (*Bundle, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", spec.Dir, err)
	}
	if err := os.Chmod(spec.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("pki: chmod %s: %w", spec.Dir, err)
	}

	b := spec.bundle()
	w := &writer{}
	var cas [numAuthorities]*authority
	for _, ca := range spec.authorities() {
		a, err := ensureCA(w, ca.pair, ca.cn, now)
		if err != nil {
			return nil, err
		}
		cas[ca.kind] = a
	}
	validity := spec.Validity
	if validity == 0 {
		validity = DefaultValidity
	}
	for _, id := range spec.identities() {
		if err := ensureLeaf(w, cas[id.ca], id, now, validity); err != nil {
			return nil, err
		}
	}
	if err := ensureServiceAccountKey(w, b.ServiceAccountKey, b.ServiceAccountPub); err != nil {
		return nil, err
	}
	if err := ensureEncryptionConfig(w, b.EncryptionConfig); err != nil {
		return nil, err
	}
	b.Generated = w.written
	return b, nil
}

// validate reports every problem of the Spec at once.
func (s Spec) validate() error {
	var errs []error
	if s.Dir == "" {
		errs = append(errs, errors.New("dir is empty"))
	}
	if s.ClusterName == "" {
		errs = append(errs, errors.New("cluster name is empty"))
	}
	if s.Validity < 0 {
		errs = append(errs, fmt.Errorf("validity %s is negative", s.Validity))
	}
	errs = append(errs, checkIPs("apiserver IP", s.APIServerIPs)...)
	errs = append(errs, checkIPs("etcd IP", s.EtcdIPs)...)
	for _, name := range s.APIServerDNSNames {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, fmt.Errorf("apiserver DNS name %q: %s", name, msg))
		}
	}
	seen := map[string]bool{}
	for i, n := range s.Nodes {
		for _, msg := range validation.IsDNS1123Subdomain(n.Name) {
			errs = append(errs, fmt.Errorf("node %d name %q: %s", i, n.Name, msg))
		}
		if seen[n.Name] {
			errs = append(errs, fmt.Errorf("node %d name %q: duplicate", i, n.Name))
		}
		seen[n.Name] = true
		errs = append(errs, checkIPs(fmt.Sprintf("node %q IP", n.Name), n.IPs)...)
	}
	errs = append(errs, s.checkServices()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pki: invalid spec: %w", err)
	}
	return nil
}

// checkServices reports every bad or repeated name of Spec.Services.
func (s Spec) checkServices() []error {
	var errs []error
	seen := map[string]bool{}
	for i, svc := range s.Services {
		for _, part := range []struct{ what, value string }{{"name", svc.Name}, {"namespace", svc.Namespace}} {
			for _, msg := range validation.IsDNS1123Label(part.value) {
				errs = append(errs, fmt.Errorf("service %d %s %q: %s", i, part.what, part.value, msg))
			}
		}
		if svc.ClusterDomain != "" {
			for _, msg := range validation.IsDNS1123Subdomain(svc.ClusterDomain) {
				errs = append(errs, fmt.Errorf("service %d cluster domain %q: %s", i, svc.ClusterDomain, msg))
			}
		}
		if seen[svc.Key()] {
			errs = append(errs, fmt.Errorf("service %d %q: duplicate", i, svc.Key()))
		}
		seen[svc.Key()] = true
	}
	return errs
}

func checkIPs(what string, ips []net.IP) []error {
	var errs []error
	for i, ip := range ips {
		if len(ip) != net.IPv4len && len(ip) != net.IPv6len {
			errs = append(errs, fmt.Errorf("%s %d is not an IP address (%d bytes)", what, i, len(ip)))
		}
	}
	return errs
}

// File names, relative to Spec.Dir, without the .crt/.key extension.
const (
	fileCA                     = "ca"
	fileEtcdCA                 = "etcd-ca"
	fileFrontProxyCA           = "front-proxy-ca"
	fileFrontProxyClient       = "front-proxy-client"
	fileAPIServer              = "apiserver"
	fileAPIServerKubeletClient = "apiserver-kubelet-client"
	fileAPIServerEtcdClient    = "apiserver-etcd-client"
	fileEtcdServer             = "etcd-server"
	fileEtcdPeer               = "etcd-peer"
	fileControllerManager      = "controller-manager"
	fileScheduler              = "scheduler"
	fileControllerManagerServe = "controller-manager-serving"
	fileSchedulerServe         = "scheduler-serving"
	fileKubeProxy              = "kube-proxy"
	fileCloudController        = "cloud-controller"
	fileNetpolAgent            = "netpol-agent"
	fileAdmin                  = "admin"
	fileSuperAdmin             = "super-admin"
	fileServiceAccountKey      = "sa.key"
	fileServiceAccountPub      = "sa.pub"
	fileEncryptionConfig       = "encryption-config.yaml"
)

// kubeletFiles returns the serving and client file names of a node. Each
// node has its own subdirectory, so no node name can clash with another
// file.
func kubeletFiles(node string) (serving, client string) {
	dir := filepath.Join("kubelet", node)
	return filepath.Join(dir, "serving"), filepath.Join(dir, "client")
}

// serviceFile returns the file name of a Service's serving certificate,
// in a directory per namespace.
func serviceFile(svc Service) string {
	return filepath.Join("service", svc.Namespace, svc.Name)
}

func (s Spec) pair(name string) Pair {
	p := filepath.Join(s.Dir, name)
	return Pair{Cert: p + ".crt", Key: p + ".key"}
}

// bundle returns the paths of everything the Spec calls for.
func (s Spec) bundle() *Bundle {
	b := &Bundle{
		CA:                       s.pair(fileCA),
		EtcdCA:                   s.pair(fileEtcdCA),
		FrontProxyCA:             s.pair(fileFrontProxyCA),
		FrontProxyClient:         s.pair(fileFrontProxyClient),
		APIServer:                s.pair(fileAPIServer),
		APIServerKubeletClient:   s.pair(fileAPIServerKubeletClient),
		APIServerEtcdClient:      s.pair(fileAPIServerEtcdClient),
		EtcdServer:               s.pair(fileEtcdServer),
		EtcdPeer:                 s.pair(fileEtcdPeer),
		ControllerManager:        s.pair(fileControllerManager),
		Scheduler:                s.pair(fileScheduler),
		ControllerManagerServing: s.pair(fileControllerManagerServe),
		SchedulerServing:         s.pair(fileSchedulerServe),
		KubeProxy:                s.pair(fileKubeProxy),
		CloudController:          s.pair(fileCloudController),
		NetpolAgent:              s.pair(fileNetpolAgent),
		Admin:                    s.pair(fileAdmin),
		SuperAdmin:               s.pair(fileSuperAdmin),
		Kubelets:                 make(map[string]KubeletPair, len(s.Nodes)),
		ServiceAccountKey:        filepath.Join(s.Dir, fileServiceAccountKey),
		ServiceAccountPub:        filepath.Join(s.Dir, fileServiceAccountPub),
		EncryptionConfig:         filepath.Join(s.Dir, fileEncryptionConfig),
	}
	for _, n := range s.Nodes {
		serving, client := kubeletFiles(n.Name)
		b.Kubelets[n.Name] = KubeletPair{Serving: s.pair(serving), Client: s.pair(client)}
	}
	b.Services = make(map[string]Pair, len(s.Services))
	for _, svc := range s.Services {
		b.Services[svc.Key()] = s.pair(serviceFile(svc))
	}
	return b
}

// Files returns the paths Ensure would write for spec, without touching the
// disk: for rendering plans and for reading an existing cluster's PKI.
func Files(spec Spec) *Bundle { return spec.bundle() }
