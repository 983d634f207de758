package gateway

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// template is a Deployment like the ingress addon's kube-system/traefik.
func template() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "traefik"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "traefik"}},
			Spec: corev1.PodSpec{
				ServiceAccountName: "traefik", PriorityClassName: "system-cluster-critical",
				Containers: []corev1.Container{{
					Name: "traefik", Image: "docker.io/library/traefik:v3.7.13",
					Args: []string{"--global.checknewversion=false", "--log.level=INFO", "--entrypoints.web.address=:80",
						"--providers.kubernetesingress=true", "--providers.kubernetesgateway.gateways=kube-system/traefik"},
					Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 80}, {Name: "traefik", ContainerPort: 9000}},
				}},
			},
		}},
	}
}

func gatewayWith(ns, name string, ports ...int32) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "traefik"}}
	for i, p := range ports {
		gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{
			Name: gatewayv1.SectionName("l" + string(rune('a'+i))), Port: gatewayv1.PortNumber(p), Protocol: gatewayv1.HTTPProtocolType})
	}
	return gw
}

// TestObjects checks the Deployment and Service made for a Gateway:
// one entry point and Service port per distinct listener port, /ping on
// a port no listener has, the provider limited to the Gateway with its
// Service as status address, the template's pod otherwise, and labels
// that the template's Service does not select.
func TestObjects(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gw        *gatewayv1.Gateway
		wantPorts []int32
		wantPing  int32
	}{
		{"one HTTP listener", gatewayWith("apps", "web", 80), []int32{80}, 9000},
		{"listeners sharing a port", gatewayWith("apps", "web", 443, 80, 443), []int32{80, 443}, 9000},
		{"a listener on the ping port", gatewayWith("apps", "web", 9000, 9001, 80), []int32{80, 9000, 9001}, 9002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := template()
			deploy, svc, err := Objects(tc.gw, tmpl)
			if err != nil {
				t.Fatal(err)
			}
			key := types.NamespacedName{Namespace: tc.gw.Namespace, Name: tc.gw.Name}
			if deploy.Name != ObjectName(key) || svc.Name != deploy.Name || deploy.Namespace != "kube-system" || svc.Namespace != "kube-system" {
				t.Errorf("objects %s/%s and %s/%s, want kube-system/%s", deploy.Namespace, deploy.Name, svc.Namespace, svc.Name, ObjectName(key))
			}
			if got := deploy.Annotations[AnnotationGateway]; got != "apps/web" {
				t.Errorf("annotation %q, want apps/web", got)
			}
			pod := deploy.Spec.Template
			if pod.Labels["app.kubernetes.io/name"] == "traefik" || svc.Spec.Selector["app.kubernetes.io/name"] == "traefik" {
				t.Errorf("the pods carry the template's label, which its Service selects: %v", pod.Labels)
			}
			for k, v := range svc.Spec.Selector {
				if pod.Labels[k] != v || deploy.Spec.Selector.MatchLabels[k] != v {
					t.Errorf("selector %s=%s does not select the pods %v", k, v, pod.Labels)
				}
			}
			if pod.Spec.PriorityClassName != "" || pod.Spec.ServiceAccountName != "traefik" {
				t.Errorf("priority class %q, service account %q", pod.Spec.PriorityClassName, pod.Spec.ServiceAccountName)
			}
			c := pod.Spec.Containers[0]
			want := []string{"--global.checknewversion=false", "--log.level=INFO"}
			for _, p := range tc.wantPorts {
				want = append(want, "--entrypoints.p"+itoa(p)+".address=:"+itoa(p))
			}
			want = append(want, "--entrypoints.traefik.address=:"+itoa(tc.wantPing), "--ping=true",
				"--providers.kubernetesgateway=true", "--providers.kubernetesgateway.gateways=apps/web",
				"--providers.kubernetesgateway.statusaddress.service.namespace=kube-system",
				"--providers.kubernetesgateway.statusaddress.service.name="+svc.Name)
			if !slices.Equal(c.Args, want) {
				t.Errorf("args\n%s\nwant\n%s", strings.Join(c.Args, "\n"), strings.Join(want, "\n"))
			}
			var svcPorts, podPorts []int32
			for _, p := range svc.Spec.Ports {
				svcPorts = append(svcPorts, p.Port)
				if p.TargetPort.StrVal != "p"+itoa(p.Port) {
					t.Errorf("service port %d targets %v", p.Port, p.TargetPort)
				}
			}
			for _, p := range c.Ports {
				podPorts = append(podPorts, p.ContainerPort)
			}
			if !slices.Equal(svcPorts, tc.wantPorts) || !slices.Equal(podPorts, append(slices.Clone(tc.wantPorts), tc.wantPing)) {
				t.Errorf("service ports %v, container ports %v", svcPorts, podPorts)
			}
			if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
				t.Errorf("service type %s", svc.Spec.Type)
			}
			if tmpl.Spec.Template.Labels["app.kubernetes.io/name"] != "traefik" || len(tmpl.Spec.Template.Spec.Containers[0].Args) != 5 {
				t.Error("Objects changed the template")
			}
		})
	}
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// TestObjectsErrors checks the errors of Objects.
func TestObjectsErrors(t *testing.T) {
	noTraefik := template()
	noTraefik.Spec.Template.Spec.Containers[0].Name = "proxy"
	for name, tc := range map[string]struct {
		gw   *gatewayv1.Gateway
		tmpl *appsv1.Deployment
	}{
		"no listener":          {gatewayWith("apps", "web"), template()},
		"no container traefik": {gatewayWith("apps", "web", 80), noTraefik},
	} {
		if _, _, err := Objects(tc.gw, tc.tmpl); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestObjectName checks that names are DNS labels, distinct per Gateway.
func TestObjectName(t *testing.T) {
	long := strings.Repeat("x", 253)
	a := ObjectName(types.NamespacedName{Namespace: "a-b", Name: "c"})
	b := ObjectName(types.NamespacedName{Namespace: "a", Name: "b-c"})
	c := ObjectName(types.NamespacedName{Namespace: "apps", Name: long})
	if a == b || len(c) > 63 || !strings.HasPrefix(a, "gateway-") {
		t.Errorf("names %s %s %s", a, b, c)
	}
}
