package pki

import (
	"crypto/x509"
	"net"
)

// authorityKind says which CA signs a leaf.
type authorityKind int

const (
	clusterCA    authorityKind = iota // the cluster CA: apiserver, clients, kubelets
	etcdCA                            // etcd's own CA: etcd and its one client
	frontProxyCA                      // the request-header CA of the aggregation layer
	numAuthorities
)

// caSpec is one CA the cluster needs.
type caSpec struct {
	kind authorityKind
	pair Pair
	cn   string
}

// authorities lists the CAs of the Spec, one per authorityKind, named
// after the cluster so two clusters' CAs are told apart.
func (s Spec) authorities() []caSpec {
	prefix := "kubernix-" + s.ClusterName
	return []caSpec{
		{kind: clusterCA, pair: s.pair(fileCA), cn: prefix + " CA"},
		{kind: etcdCA, pair: s.pair(fileEtcdCA), cn: prefix + " etcd CA"},
		{kind: frontProxyCA, pair: s.pair(fileFrontProxyCA), cn: prefix + " front-proxy CA"},
	}
}

// identity is one leaf certificate the cluster needs: who signs it, who it
// is, what it may be used for, and which names it must cover.
type identity struct {
	ca     authorityKind
	pair   Pair
	cn     string
	orgs   []string
	usages []x509.ExtKeyUsage
	ips    []net.IP
	dns    []string
}

var (
	serverAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	bothAuth   = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
)

// apiServerDNSNames are always in the apiserver serving certificate.
var apiServerDNSNames = []string{
	"kubernetes",
	"kubernetes.default",
	"kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
	"localhost",
}

// identities lists every leaf certificate of the Spec, CA excluded.
func (s Spec) identities() []identity {
	loopback := net.IPv4(127, 0, 0, 1)
	etcdIPs := uniqueIPs(append(append([]net.IP{}, s.EtcdIPs...), loopback))
	etcdDNS := []string{"localhost"}
	// The apiserver, controller-manager and scheduler serve on the same
	// addresses.
	controlPlaneIPs := uniqueIPs(append(append([]net.IP{}, s.APIServerIPs...), loopback))

	ids := []identity{
		{
			pair:   s.pair(fileAPIServer),
			cn:     "kube-apiserver",
			usages: serverAuth,
			ips:    controlPlaneIPs,
			dns:    uniqueStrings(append(append([]string{}, apiServerDNSNames...), s.APIServerDNSNames...)),
		},
		{pair: s.pair(fileAPIServerKubeletClient), cn: APIServerKubeletClientName, usages: clientAuth},
		{ca: etcdCA, pair: s.pair(fileAPIServerEtcdClient), cn: "kube-apiserver-etcd-client", usages: clientAuth},
		{ca: etcdCA, pair: s.pair(fileEtcdServer), cn: "etcd", usages: bothAuth, ips: etcdIPs, dns: etcdDNS},
		{ca: etcdCA, pair: s.pair(fileEtcdPeer), cn: "etcd-peer", usages: bothAuth, ips: etcdIPs, dns: etcdDNS},
		{ca: frontProxyCA, pair: s.pair(fileFrontProxyClient), cn: FrontProxyClientName, usages: clientAuth},
		{pair: s.pair(fileControllerManager), cn: "system:kube-controller-manager", usages: clientAuth},
		{pair: s.pair(fileScheduler), cn: "system:kube-scheduler", usages: clientAuth},
		{pair: s.pair(fileKubeProxy), cn: "system:kube-proxy", usages: clientAuth},
		{pair: s.pair(fileCloudController), cn: CloudControllerName, usages: clientAuth},
		{pair: s.pair(fileNetpolAgent), cn: NetpolAgentName, usages: clientAuth},
		{pair: s.pair(fileControllerManagerServe), cn: "kube-controller-manager", usages: serverAuth,
			ips: controlPlaneIPs, dns: []string{"localhost", "kube-controller-manager"}},
		{pair: s.pair(fileSchedulerServe), cn: "kube-scheduler", usages: serverAuth,
			ips: controlPlaneIPs, dns: []string{"localhost", "kube-scheduler"}},
		{pair: s.pair(fileAdmin), cn: "kubernix-admin", orgs: []string{ClusterAdminsGroup}, usages: clientAuth},
		{pair: s.pair(fileSuperAdmin), cn: "kubernix-super-admin", orgs: []string{MastersGroup}, usages: clientAuth},
	}
	for _, n := range s.Nodes {
		serving, client := kubeletFiles(n.Name)
		ids = append(ids,
			identity{
				pair:   s.pair(serving),
				cn:     n.Name,
				usages: serverAuth,
				ips:    uniqueIPs(n.IPs),
				dns:    []string{n.Name},
			},
			identity{
				pair:   s.pair(client),
				cn:     "system:node:" + n.Name,
				orgs:   []string{"system:nodes"},
				usages: clientAuth,
			},
		)
	}
	for _, svc := range s.Services {
		ids = append(ids, identity{pair: s.pair(serviceFile(svc)), cn: svc.Name + "." + svc.Namespace + ".svc",
			usages: serverAuth, dns: svc.dnsNames()})
	}
	return ids
}

// dnsNames are the DNS SANs of the Service's serving certificate.
func (s Service) dnsNames() []string {
	svc := s.Name + "." + s.Namespace + ".svc"
	names := []string{s.Name, s.Name + "." + s.Namespace, svc}
	if s.ClusterDomain != "" {
		names = append(names, svc+"."+s.ClusterDomain)
	}
	return names
}

// uniqueIPs drops repeated addresses (127.0.0.1 given as 4 or 16 bytes is
// one address), keeping the first occurrence's order.
func uniqueIPs(ips []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if !containsIP(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

func containsIP(ips []net.IP, ip net.IP) bool {
	for _, have := range ips {
		if have.Equal(ip) {
			return true
		}
	}
	return false
}

func uniqueStrings(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
