package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubernix/kubernix/pkg/loadbalancer"
)

// ingressBackends are two Deployments of agnhost, each behind a Service
// of its name on port 80: ing-a runs netexec, whose /hostname answers the
// pod's name (and other paths other things), ing-b serve-hostname, which
// answers its pod's name at every path. So a response says which Service
// a request reached.
func ingressBackends() string {
	var docs []string
	for name, args := range map[string]string{"ing-a": `"netexec", "--http-port=8080"`, "ing-b": `"serve-hostname", "--port=8080"`} {
		docs = append(docs, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
        - name: agnhost
          image: %[2]s
          imagePullPolicy: Never
          args: [%[3]s]
          ports: [{containerPort: 8080}]
          readinessProbe:
            httpGet: {path: /healthz, port: 8080}
            periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  selector: {app: %[1]s}
  ports: [{port: 80, targetPort: 8080}]`, name, agnhost, args))
	}
	return strings.Join(docs, "\n---\n")
}

// ingressRules is an Ingress of the default IngressClass with two host
// rules and a path rule: a.kx.test goes to ing-a but its paths under /b
// to ing-b, b.kx.test to ing-b; no other host is routed. tls.kx.test is
// served over HTTPS with the Secret ingress-tls and goes to ing-a.
const ingressRules = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: two-hosts}
spec:
  tls:
    - hosts: [tls.kx.test]
      secretName: ingress-tls
  rules:
    - host: a.kx.test
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: ing-a, port: {number: 80}}}}
          - {path: /b, pathType: Prefix, backend: {service: {name: ing-b, port: {number: 80}}}}
    - host: b.kx.test
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: ing-b, port: {number: 80}}}}
    - host: tls.kx.test
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: ing-a, port: {number: 80}}}}
`

// httpRoutes are two HTTPRoutes on the addon's default Gateway
// (kube-system/traefik, listener web): ra.kx.test to ing-a, and
// rb.kx.test's paths under /b to ing-b.
const httpRoutes = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route-a}
spec:
  parentRefs: [{name: traefik, namespace: kube-system, sectionName: web}]
  hostnames: [ra.kx.test]
  rules:
    - backendRefs: [{name: ing-a, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route-b}
spec:
  parentRefs: [{name: traefik, namespace: kube-system, sectionName: web}]
  hostnames: [rb.kx.test]
  rules:
    - matches: [{path: {type: PathPrefix, value: /b}}]
      backendRefs: [{name: ing-b, port: 80}]
`

// tlsGateway is a Gateway of the test's own with an HTTPS listener for
// gtls.kx.test on port 443 (traefik's websecure entry point), its
// certificate the Secret gateway-tls, and an HTTPRoute on it to ing-b.
const tlsGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tls}
spec:
  gatewayClassName: traefik
  listeners:
    - name: https
      protocol: HTTPS
      port: 443
      hostname: gtls.kx.test
      tls:
        mode: Terminate
        certificateRefs: [{name: gateway-tls}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route-tls}
spec:
  parentRefs: [{name: tls, sectionName: https}]
  rules:
    - backendRefs: [{name: ing-b, port: 80}]
`

// TestIngress checks issue 29's ingress addon on the shared cluster: an
// Ingress with two host rules and a path rule routes to two Services,
// reached with curl --resolve from the host at the address of Service
// kube-system/traefik, which the Ingress's status shows; HTTPRoutes on
// the default Gateway do the same at the Gateway's status address; an
// Ingress TLS Secret and a Gateway HTTPS listener's certificateRefs serve
// their certificates (curl verifies them against their CAs); a
// pod reaches the routes too, a neighbour does not. A Gateway of the
// test's own gets an address of its own, served by a traefik of its own
// (pkg/gateway), which deleting the Gateway frees.
func TestIngress(t *testing.T) {
	e := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pairs := testCertificates(t, t.TempDir(), "tls.kx.test", "gtls.kx.test")
	e.mustKubectl(ctx, "create", "secret", "tls", "ingress-tls", "--cert", pairs["tls.kx.test"][0], "--key", pairs["tls.kx.test"][1])
	e.mustKubectl(ctx, "create", "secret", "tls", "gateway-tls", "--cert", pairs["gtls.kx.test"][0], "--key", pairs["gtls.kx.test"][1])
	e.apply(ctx, ingressBackends()+"\n---\n"+ingressRules+"---\n"+httpRoutes+"---\n"+tlsGateway)
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/ing-a", "deployment/ing-b", "--timeout=180s")

	var lb string
	eventually(t, 60*time.Second, "Service kube-system/traefik has a LoadBalancer IP", func() error {
		out, err := e.kubectl(ctx, "get", "service", "-n", "kube-system", "traefik", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}")
		if lb = strings.TrimSpace(out); err == nil && net.ParseIP(lb) == nil {
			return fmt.Errorf("ingress %q", out)
		}
		return err
	})
	t.Logf("traefik's LoadBalancer IP: %s", lb)

	t.Run("Ingress: two host rules and a path rule, from the host", func(t *testing.T) {
		eventually(t, 60*time.Second, "the Ingress's status names the LoadBalancer IP", func() error {
			out, err := e.kubectl(ctx, "get", "ingress", "two-hosts", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
			if err == nil && strings.TrimSpace(out) != lb {
				return fmt.Errorf("status ingress %q, want %s", out, lb)
			}
			return err
		})
		wantRouted(ctx, t, "http", lb, "a.kx.test", "/hostname", "", "ing-a-")
		wantRouted(ctx, t, "http", lb, "a.kx.test", "/b/hostname", "", "ing-b-")
		wantRouted(ctx, t, "http", lb, "b.kx.test", "/hostname", "", "ing-b-")
		wantStatus(ctx, t, lb, "c.kx.test", "/hostname", "404")
	})

	t.Run("HTTPRoutes on the default Gateway, from the host", func(t *testing.T) {
		gw := programmedAddress(ctx, t, e.kubectl, "kube-system", "traefik")
		if gw != lb {
			t.Errorf("the Gateway's address is %s, want traefik's LoadBalancer IP %s", gw, lb)
		}
		wantRouted(ctx, t, "http", gw, "ra.kx.test", "/hostname", "", "ing-a-")
		wantRouted(ctx, t, "http", gw, "rb.kx.test", "/b/hostname", "", "ing-b-")
		wantStatus(ctx, t, gw, "rb.kx.test", "/hostname", "404")
	})

	var tlsAddr string
	t.Run("TLS: the Ingress's Secret and the Gateway listener's certificate", func(t *testing.T) {
		wantRouted(ctx, t, "https", lb, "tls.kx.test", "/hostname", pairs["tls.kx.test"][0], "ing-a-")
		tlsAddr = programmedAddress(ctx, t, e.kubectl, e.namespace, "tls")
		wantRouted(ctx, t, "https", tlsAddr, "gtls.kx.test", "/hostname", pairs["gtls.kx.test"][0], "ing-b-")
	})

	t.Run("each Gateway its own address; deleting the Gateway frees it", func(t *testing.T) {
		if tlsAddr == "" {
			t.Skip("Gateway tls got no address")
		}
		if tlsAddr == lb {
			t.Errorf("Gateway tls has the default Gateway's address %s, want one of its own", lb)
		}
		// The default Gateway's traefik does not serve Gateway tls's
		// routes: only tls's own address does.
		if out, err := exec.CommandContext(ctx, "curl", "-sS", "--max-time", "5", "-k", "--resolve", "gtls.kx.test:443:"+lb,
			"https://gtls.kx.test/hostname").CombinedOutput(); err == nil && strings.HasPrefix(string(out), "ing-b-") {
			t.Errorf("the default Gateway's address %s served Gateway tls's route: %q", lb, out)
		}
		e.mustKubectl(ctx, "delete", "gateway", "tls", "--wait")
		eventually(t, 60*time.Second, "no Service holds "+tlsAddr+" and nothing answers there", func() error {
			out, err := e.kubectl(ctx, "get", "services", "-A", "-o", "jsonpath={.items[*].status.loadBalancer.ingress[*].ip}")
			if err != nil {
				return err
			}
			if slices.Contains(strings.Fields(out), tlsAddr) {
				return fmt.Errorf("a Service still has %s: %s", tlsAddr, out)
			}
			if err := dial(netns.None(), net.JoinHostPort(tlsAddr, "443")); err == nil {
				return fmt.Errorf("%s:443 still answers", tlsAddr)
			}
			return nil
		})
		out := e.mustKubectl(ctx, "get", "deployments,services", "-n", "kube-system", "-l", "app.kubernetes.io/name=traefik-gateway",
			"-o", `jsonpath={range .items[*]}{.metadata.annotations.kubernix\.dev/gateway}{"\n"}{end}`)
		if gw := e.namespace + "/tls"; slices.Contains(strings.Fields(out), gw) {
			t.Errorf("Gateway %s's objects are left in kube-system: %s", gw, out)
		}
	})

	t.Run("a pod reaches the routes, a neighbour does not", func(t *testing.T) {
		pod := strings.TrimSpace(e.mustKubectl(ctx, "get", "pods", "-l", "app=ing-a", "-o", "jsonpath={.items[0].metadata.name}"))
		eventually(t, 30*time.Second, "curl from pod "+pod, func() error {
			out, err := e.kubectl(ctx, "exec", pod, "--", "curl", "-sS", "--max-time", "5", "--resolve", "b.kx.test:80:"+lb, "http://b.kx.test/hostname")
			if err == nil && !strings.HasPrefix(strings.TrimSpace(out), "ing-b-") {
				return fmt.Errorf("answer %q", out)
			}
			return err
		})
		n := newNeighbour(t, e.cidr, "")
		defer n.remove()
		addr := net.JoinHostPort(lb, "80")
		if err := dial(n.ns, addr); err == nil {
			t.Errorf("the neighbour reached traefik at %s", addr)
		}
		if err := dial(netns.None(), addr); err != nil {
			t.Errorf("the host cannot reach traefik at %s: %v", addr, err)
		}
	})
}

// TestIngressRootless is TestIngress reduced, on the shared rootless
// cluster: the addon's ports 80 and 443 are published on the host's
// 127.0.0.1 8000 up (ordinary users cannot bind ports below 1024 there),
// where the Ingress's host rules and its TLS Secret are served; a Gateway
// of the test's own with a listener on port 9080 gets an address and a
// traefik of its own, its route is reached at the host's 127.0.0.1:9080,
// and deleting the Gateway closes that port again.
func TestIngressRootless(t *testing.T) {
	rc := sharedRootlessCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pairs := testCertificates(t, rc.dir, "tls.kx.test")
	rc.mustKubectl(ctx, "create", "secret", "tls", "ingress-tls", "--cert", pairs["tls.kx.test"][0], "--key", pairs["tls.kx.test"][1])
	manifest := filepath.Join(rc.dir, "ingress.yaml")
	if err := os.WriteFile(manifest, []byte(ingressBackends()+"\n---\n"+ingressRules+"---\n"+rootlessGateway), 0o644); err != nil {
		t.Fatal(err)
	}
	rc.mustKubectl(ctx, "apply", "-f", manifest)
	rc.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/ing-a", "deployment/ing-b", "--timeout=180s")
	loopback := loadbalancer.HostLoopback.String()

	wantRoutedAt(ctx, t, "http", loopback, "8080", "a.kx.test", "/hostname", "", "ing-a-")
	wantRoutedAt(ctx, t, "http", loopback, "8080", "a.kx.test", "/b/hostname", "", "ing-b-")
	wantRoutedAt(ctx, t, "http", loopback, "8080", "b.kx.test", "/hostname", "", "ing-b-")
	wantRoutedAt(ctx, t, "https", loopback, "8443", "tls.kx.test", "/hostname", pairs["tls.kx.test"][0], "ing-a-")

	programmedAddress(ctx, t, rc.kubectl, rc.namespace, "own")
	wantRoutedAt(ctx, t, "http", loopback, "9080", "own.kx.test", "/hostname", "", "ing-b-")
	rc.mustKubectl(ctx, "delete", "gateway", "own", "--wait=true", "--timeout=60s")
	eventually(t, 60*time.Second, "127.0.0.1:9080 closed after the Gateway's delete", func() error {
		if err := dial(netns.None(), net.JoinHostPort(loopback, "9080")); err == nil {
			return fmt.Errorf("still open")
		}
		return nil
	})
}

// rootlessGateway is a Gateway with an HTTP listener on port 9080 and an
// HTTPRoute on it to ing-b.
const rootlessGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: own}
spec:
  gatewayClassName: traefik
  listeners: [{name: http, protocol: HTTP, port: 9080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: own}
spec:
  parentRefs: [{name: own}]
  rules:
    - backendRefs: [{name: ing-b, port: 80}]
`

// wantRouted waits until curl from the host, resolving host to ip, gets
// an answer starting with prefix for scheme://host path (HTTPS verified
// against the CA file ca), on the scheme's port.
func wantRouted(ctx context.Context, t *testing.T, scheme, ip, host, path, ca, prefix string) {
	t.Helper()
	wantRoutedAt(ctx, t, scheme, ip, map[string]string{"http": "80", "https": "443"}[scheme], host, path, ca, prefix)
}

// wantRoutedAt is wantRouted on port.
func wantRoutedAt(ctx context.Context, t *testing.T, scheme, ip, port, host, path, ca, prefix string) {
	t.Helper()
	args := []string{"-sS", "--fail", "--max-time", "5", "--resolve", host + ":" + port + ":" + ip}
	if ca != "" {
		args = append(args, "--cacert", ca)
	}
	args = append(args, scheme+"://"+net.JoinHostPort(host, port)+path)
	eventually(t, 60*time.Second, "curl "+strings.Join(args, " "), func() error {
		out, err := exec.CommandContext(ctx, "curl", args...).CombinedOutput()
		if err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), prefix) {
			return fmt.Errorf("answer %q, want one from %s*", out, prefix)
		}
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// wantStatus waits until curl from the host gets the HTTP status code
// for http://host/path at ip.
func wantStatus(ctx context.Context, t *testing.T, ip, host, path, code string) {
	t.Helper()
	eventually(t, 30*time.Second, "HTTP "+code+" for "+host+path, func() error {
		out, err := exec.CommandContext(ctx, "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
			"--resolve", host+":80:"+ip, "http://"+host+path).CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) != code {
			return fmt.Errorf("status %s", out)
		}
		return err
	})
}

// testCertificates writes, for each host, a serving certificate for it
// and its key as PEM files in dir, readable by all (client-go's
// self-signed pair: the certificate file also holds the CA that signed
// it, so it is also the file curl --cacert verifies the host with).
func testCertificates(t *testing.T, dir string, hosts ...string) map[string][2]string {
	t.Helper()
	pairs := map[string][2]string{}
	for _, host := range hosts {
		crt, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		files := [2]string{filepath.Join(dir, host+".crt"), filepath.Join(dir, host+".key")}
		for i, b := range [][]byte{crt, key} {
			if err := os.WriteFile(files[i], b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pairs[host] = files
	}
	return pairs
}

// programmedAddress waits until the Gateway namespace/name is Programmed
// with an address, asking with kubectl (a cluster's, root or rootless),
// and returns the address.
func programmedAddress(ctx context.Context, t *testing.T, kubectl func(context.Context, ...string) (string, error), namespace, name string) string {
	t.Helper()
	var addr string
	eventually(t, 90*time.Second, "Gateway "+namespace+"/"+name+" is Programmed with an address", func() error {
		out, err := kubectl(ctx, "get", "gateway", "-n", namespace, name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Programmed")].status} {.status.addresses[0].value}`)
		f := strings.Fields(out)
		if err == nil && (len(f) != 2 || f[0] != "True") {
			return fmt.Errorf("Programmed and address: %q", out)
		}
		if err == nil {
			addr = f[1]
		}
		return err
	})
	return addr
}
