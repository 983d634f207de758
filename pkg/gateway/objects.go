// Package gateway gives each Gateway of a GatewayClass that traefik
// serves (the ingress addon's) a traefik of its own: a Deployment and a
// LoadBalancer Service in the addon's namespace, so that each Gateway gets
// an address of the LoadBalancer pool, serves only its own routes, and
// frees its address when it is deleted. This is the in-cluster deployment
// model of the Gateway API (GEP-1762) that Envoy Gateway and Istio follow;
// the Deployments live beside the addon's traefik rather than in the
// Gateway's namespace because traefik reads Secrets and Services of every
// namespace, which only the addon's ServiceAccount may.
//
// Each Gateway's traefik runs the addon's pod template (the template
// Deployment, kube-system/traefik) with the kubernetesGateway provider
// alone, limited to that Gateway by the provider's `gateways` option
// (kubernix's patch of traefik, bundle/traefik/_add/traefik), one entry
// point per listener port, and its Service as the Gateway's status
// address. The addon's own Gateway (the template's namespace and name) is
// served by the addon's traefik and left alone here.
package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ControllerName is the controllerName of the GatewayClasses traefik
// serves (traefik's pkg/provider/kubernetes/gateway).
const ControllerName gatewayv1.GatewayController = "traefik.io/gateway-controller"

// Labels and annotations of the objects made for a Gateway.
const (
	// LabelGateway selects a Gateway's objects and its traefik's pods:
	// the hash of its namespace/name (ObjectName's suffix).
	LabelGateway = "kubernix.dev/gateway"
	// AnnotationGateway is the Gateway's namespace/name.
	AnnotationGateway = "kubernix.dev/gateway"
	// appName is the app.kubernetes.io/name of a Gateway's objects: not
	// the template's, whose Service selects its pods by it.
	appName = "traefik-gateway"
)

// pingPort is the first port tried for traefik's /ping entry point (the
// template's, named "traefik", which its probes name): the next free one
// when a listener has it.
const pingPort = 9000

// ObjectName is the name of the Deployment and Service made for the
// Gateway key (namespace/name): "gateway-" and 12 hex digits of its
// SHA-256, a DNS label whatever the Gateway's name.
func ObjectName(key types.NamespacedName) string {
	return "gateway-" + keyHash(key)
}

func keyHash(key types.NamespacedName) string {
	sum := sha256.Sum256([]byte(key.String()))
	return hex.EncodeToString(sum[:6])
}

// ListenerPorts returns the distinct ports of gw's listeners, ascending.
func ListenerPorts(gw *gatewayv1.Gateway) []int32 {
	var ports []int32
	for _, l := range gw.Spec.Listeners {
		if !slices.Contains(ports, int32(l.Port)) {
			ports = append(ports, int32(l.Port))
		}
	}
	slices.Sort(ports)
	return ports
}

// Objects returns the Deployment and the LoadBalancer Service that serve
// gw, in the namespace of tmpl (the addon's traefik Deployment), whose pod
// template and container "traefik" they take; errors when tmpl has no
// container "traefik" or gw no listener.
func Objects(gw *gatewayv1.Gateway, tmpl *appsv1.Deployment) (*appsv1.Deployment, *corev1.Service, error) {
	key := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	ports := ListenerPorts(gw)
	if len(ports) == 0 {
		return nil, nil, fmt.Errorf("gateway %s has no listener", key)
	}
	meta := metav1.ObjectMeta{
		Name: ObjectName(key), Namespace: tmpl.Namespace,
		Labels:      map[string]string{"app.kubernetes.io/name": appName, "app.kubernetes.io/managed-by": "kubernix", LabelGateway: keyHash(key)},
		Annotations: map[string]string{AnnotationGateway: key.String()},
	}
	selector := map[string]string{"app.kubernetes.io/name": appName, LabelGateway: keyHash(key)}
	pod := *tmpl.Spec.Template.DeepCopy()
	pod.Labels = selector
	// A Gateway's traefik serves an application's traffic: it does not
	// preempt pods as the addon's (cluster-critical) one may.
	pod.Spec.PriorityClassName = ""
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "traefik" })
	if i < 0 {
		return nil, nil, fmt.Errorf("deployment %s/%s has no container traefik", tmpl.Namespace, tmpl.Name)
	}
	c := &pod.Spec.Containers[i]
	c.Args, c.Ports = containerArgs(c.Args, key, meta.Name, tmpl.Namespace, ports)
	one := int32(1)
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: pod,
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: *meta.DeepCopy(),
		Spec:       serviceSpec(selector, ports),
	}
	return deploy, svc, nil
}

// containerArgs returns the traefik container's arguments and ports for
// the Gateway key: the template's --global.* and --log.* arguments, an
// entry point "p<port>" per listener port, /ping on the first free port
// from pingPort (the port named "traefik"), and the kubernetesGateway
// provider for key alone with Service namespace/name as its status
// address.
func containerArgs(tmpl []string, key types.NamespacedName, name, namespace string, ports []int32) ([]string, []corev1.ContainerPort) {
	var args []string
	for _, a := range tmpl {
		if strings.HasPrefix(a, "--global.") || strings.HasPrefix(a, "--log.") {
			args = append(args, a)
		}
	}
	var cports []corev1.ContainerPort
	for _, p := range ports {
		n := "p" + strconv.Itoa(int(p))
		args = append(args, "--entrypoints."+n+".address=:"+strconv.Itoa(int(p)))
		cports = append(cports, corev1.ContainerPort{Name: n, ContainerPort: p, Protocol: corev1.ProtocolTCP})
	}
	ping := int32(pingPort)
	for slices.Contains(ports, ping) {
		ping++
	}
	args = append(args,
		"--entrypoints.traefik.address=:"+strconv.Itoa(int(ping)),
		"--ping=true",
		"--providers.kubernetesgateway=true",
		"--providers.kubernetesgateway.gateways="+key.String(),
		"--providers.kubernetesgateway.statusaddress.service.namespace="+namespace,
		"--providers.kubernetesgateway.statusaddress.service.name="+name,
	)
	cports = append(cports, corev1.ContainerPort{Name: "traefik", ContainerPort: ping, Protocol: corev1.ProtocolTCP})
	return args, cports
}

// serviceSpec is a Gateway's LoadBalancer Service: each listener port to
// the same port of the pods of selector, an address of each of the
// cluster's IP families.
func serviceSpec(selector map[string]string, ports []int32) corev1.ServiceSpec {
	policy := corev1.IPFamilyPolicyPreferDualStack
	spec := corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilyPolicy: &policy, Selector: selector}
	for _, p := range ports {
		n := "p" + strconv.Itoa(int(p))
		spec.Ports = append(spec.Ports, corev1.ServicePort{
			Name: n, Port: p, TargetPort: intstr.FromString(n), Protocol: corev1.ProtocolTCP,
		})
	}
	return spec
}
