// Package addons is the table of the workloads kubernix can deploy into a
// cluster once its nodes are Ready (CoreDNS, local-path storage,
// metrics-server, Ingress and Gateway API). An addon is a
// manifest template under manifests/ plus one entry in Table: the
// table drives the --addons validation and help, the components `up`
// registers (apply the manifest, wait for the Deployment), and `status`.
package addons

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"text/template"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/images"
)

//go:embed manifests/*.yaml.tmpl crds/*.yaml
var manifests embed.FS

// Addon is one deployable addon.
type Addon struct {
	// Name is what --addons takes, e.g. "coredns".
	Name string
	// Help says in a few words what it gives the cluster.
	Help string
	// Manifest is the file name of its text/template under manifests/;
	// its data is Params.
	Manifest string
	// Images are the built-in images (pkg/images names) its pods run;
	// the template finds their references in Params.Images.
	Images []string
	// Deployment is the "namespace/name" of the Deployment whose
	// availability is the addon's health; "" for an addon without a
	// manifest.
	Deployment string
	// Components are the supervised processes (their component names,
	// as pkg/cluster describes them) that run only with the addon: its
	// health is theirs. An addon has a manifest, components, or both.
	Components []string
	// Default addons are deployed unless --addons says otherwise.
	Default bool
	// AfterReady addons are deployed once the cluster is Ready, in the
	// background, as k3s deploys traefik: up does not wait for them, so
	// importing their images into the nodes, applying their CRDs and
	// manifest and starting their pods cost the boot nothing; `kubernix
	// status` says "installing" until their Deployment is Available.
	// Only an addon with a manifest and a Deployment can be one.
	AfterReady bool
	// Serving, if set, is a serving certificate kubernix issues the
	// addon from the cluster CA; nil for none.
	Serving *Serving
	// CRDs is the file under crds/ of the CustomResourceDefinitions (and
	// what comes with them) the addon installs, as they are, before its
	// manifest, which may then hold their custom resources; "" for none.
	CRDs string
}

// Serving is an addon's serving certificate: kubernix issues it from the
// cluster CA for the addon's Service (pki.Service), writes it to a Secret
// before it applies the manifest, and sets the caBundle of the addon's
// APIService to the cluster CA, so the aggregation layer verifies the
// addon instead of skipping TLS verification.
type Serving struct {
	// Service is the "namespace/name" of the Service the certificate is
	// for, e.g. "kube-system/metrics-server".
	Service string
	// Secret is the name of the kubernetes.io/tls Secret in the Service's
	// namespace that holds tls.crt, tls.key and ca.crt (the cluster CA,
	// which also signs every kubelet's serving certificate).
	Secret string
	// APIService is the name of the manifest's APIService whose
	// spec.caBundle is set to the cluster CA, e.g. "v1beta1.metrics.k8s.io";
	// "" for none.
	APIService string
}

// ServiceName splits Service into its namespace and name.
func (s Serving) ServiceName() (namespace, name string) {
	namespace, name, _ = strings.Cut(s.Service, "/")
	return namespace, name
}

// Table lists every addon, in the order they are registered.
var Table = []Addon{
	{
		Name: "coredns", Help: "cluster DNS, Service kube-dns",
		Manifest: "coredns.yaml.tmpl", Images: []string{"coredns"},
		Deployment: "kube-system/coredns", Default: true,
	},
	{
		Name: "local-path-storage", Help: "default StorageClass standard, node-local volumes in the state dir",
		Manifest: "local-path.yaml.tmpl", Images: []string{"local-path-provisioner", "busybox"},
		Deployment: "local-path-storage/local-path-provisioner", Default: true,
	},
	{
		Name: "metrics-server", Help: "resource metrics for kubectl top and autoscaling",
		Manifest: "metrics-server.yaml.tmpl", Images: []string{"metrics-server"},
		Deployment: "kube-system/metrics-server", Default: true,
		Serving: &Serving{Service: "kube-system/metrics-server", Secret: "metrics-server-tls",
			APIService: "v1beta1.metrics.k8s.io"},
	},
	{
		Name: Ingress, Help: "Ingress and Gateway API by traefik: IngressClass and GatewayClass traefik, Gateway kube-system/traefik, on a LoadBalancer IP; deployed once the cluster is Ready",
		Manifest: "ingress.yaml.tmpl", Images: []string{"traefik"}, CRDs: "gateway-api.yaml",
		Deployment: "kube-system/traefik", Default: true, AfterReady: true,
	},
	{
		Name: LoadBalancer, Help: "LoadBalancer Services get an IP of --loadbalancer-cidr, reachable from the host",
		Components: []string{"cloud-controller"}, Default: true,
	},
	{
		Name: Registry, Help: "a local registry at localhost:<--registry-port> for the host and every node",
		Components: []string{"registry", "registry-localhost"}, Default: true,
	},
}

// Names of the addons other packages switch on (besides their manifests).
const (
	// LoadBalancer gives LoadBalancer Services an IP of the pool
	// (pkg/loadbalancer, run by the cloud-controller component).
	LoadBalancer = "loadbalancer"
	// Registry is the cluster's local registry (pkg/components/registry).
	Registry = "registry"
	// Ingress is traefik, serving Ingress and the Gateway API on the
	// addresses of its LoadBalancer Service.
	Ingress = "ingress"
)

// CRDManifest returns a's CRDs file (the Gateway API's standard channel
// CRDs of GATEWAY_API_VERSION, sigs.k8s.io/gateway-api's
// config/crd/standard, for the ingress addon); nil for an addon without
// CRDs. It errors when the file is missing.
func (a Addon) CRDManifest() ([]byte, error) {
	if a.CRDs == "" {
		return nil, nil
	}
	b, err := manifests.ReadFile("crds/" + a.CRDs)
	if err != nil {
		return nil, fmt.Errorf("addon %s: %w", a.Name, err)
	}
	return b, nil
}

// Params are what a manifest is rendered from.
type Params struct {
	// ClusterDomain is the cluster's DNS domain, e.g. "cluster.local".
	ClusterDomain string
	// DNSIP is the cluster DNS Service's IP (the kubelets' clusterDNS).
	DNSIP netip.Addr
	// Volumes are the nodes' directories for local-path-storage's
	// volumes, one per node.
	Volumes []NodeDir
	// CloudController is the user name of the cloud controller's
	// identity (pki.CloudControllerName), which the ingress addon grants
	// what its Gateway provisioner (pkg/gateway) needs.
	CloudController string
	// Images maps a built-in image's name to its reference, e.g.
	// "coredns" -> "registry.k8s.io/coredns/coredns:v1.14.6"; filled by
	// Render.
	Images map[string]string
}

// NodeDir is a directory of one node.
type NodeDir struct {
	// Node is the node's name.
	Node string
	// Dir is the directory's absolute path, the same on the host and in
	// the node's sandbox.
	Dir string
}

// Lookup returns the addon named.
func Lookup(name string) (Addon, bool) {
	i := slices.IndexFunc(Table, func(a Addon) bool { return a.Name == name })
	if i < 0 {
		return Addon{}, false
	}
	return Table[i], true
}

// Names returns every addon's name, in Table order.
func Names() []string {
	var out []string
	for _, a := range Table {
		out = append(out, a.Name)
	}
	return out
}

// Defaults returns the names of the default addons.
func Defaults() []string {
	var out []string
	for _, a := range Table {
		if a.Default {
			out = append(out, a.Name)
		}
	}
	return out
}

// Help describes every addon on one line, for flag help: "coredns
// (cluster DNS ...)".
func Help() string {
	var out []string
	for _, a := range Table {
		out = append(out, fmt.Sprintf("%s (%s)", a.Name, a.Help))
	}
	return strings.Join(out, ", ")
}

// funcs are the manifests' template functions: json renders a value as
// JSON (a string quoted and escaped), e.g. in a ConfigMap's JSON file.
var funcs = template.FuncMap{"json": func(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}}

// Render returns a's manifest for p. It errors when a built-in image it
// names is unknown or the template fails (a missing key included).
func (a Addon) Render(p Params) ([]byte, error) {
	p.Images = map[string]string{}
	for _, name := range a.Images {
		b, ok := images.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("addon %s: no built-in image %q", a.Name, name)
		}
		p.Images[name] = b.Ref
	}
	t, err := template.New(a.Manifest).Option("missingkey=error").Funcs(funcs).ParseFS(manifests, "manifests/"+a.Manifest)
	if err != nil {
		return nil, fmt.Errorf("addon %s: parse manifest: %w", a.Name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("addon %s: render manifest: %w", a.Name, err)
	}
	return buf.Bytes(), nil
}

// Tolerations returns the tolerations of the pods of a's Deployment, as
// its manifest gives them; none for an addon without a Deployment. It
// errors when the manifest does not render or holds no such Deployment.
func (a Addon) Tolerations() ([]corev1.Toleration, error) {
	if a.Deployment == "" {
		return nil, nil
	}
	b, err := a.Render(Params{DNSIP: netip.IPv4Unspecified()})
	if err != nil {
		return nil, err
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			continue
		}
		if d.Kind == "Deployment" && d.Namespace+"/"+d.Name == a.Deployment {
			return d.Spec.Template.Spec.Tolerations, nil
		}
	}
	return nil, fmt.Errorf("addon %s: no Deployment %s in its manifest", a.Name, a.Deployment)
}

// Tolerates reports whether one of tols tolerates taint, as the
// scheduler decides (corev1.Toleration.ToleratesTaint).
func Tolerates(tols []corev1.Toleration, taint corev1.Taint) bool {
	return slices.ContainsFunc(tols, func(tol corev1.Toleration) bool {
		return tol.ToleratesTaint(logr.Discard(), &taint, true)
	})
}
