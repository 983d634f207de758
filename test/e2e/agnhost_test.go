package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/images"
)

// agnhostToolsManifest is a pod of the built-in agnhost serving HTTP and
// UDP (netexec) and HTTPS with the image's /localhost.crt and
// /localhost.key, as the conformance specs' probes and hooks run it, with
// a ConfigMap's keys (names that are not shell names) in its environment.
func agnhostToolsManifest() string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: env}
data: {data-1: value-1}
---
apiVersion: v1
kind: Pod
metadata: {name: tools}
spec:
  containers:
    - name: netexec
      image: %[1]s
      imagePullPolicy: Never
      args: ["netexec", "--http-port=8080", "--udp-port=8081"]
      envFrom: [{configMapRef: {name: env}}]
      readinessProbe:
        httpGet: {path: /healthz, port: 8080}
        periodSeconds: 1
    - name: tls
      image: %[1]s
      imagePullPolicy: Never
      args: ["netexec", "--http-port=8443", "--udp-port=8082", "--tls-cert-file", "/localhost.crt", "--tls-private-key-file", "/localhost.key"]
      readinessProbe:
        httpGet: {path: /healthz, port: 8443, scheme: HTTPS}
        periodSeconds: 1
`, images.AgnhostRef())
}

// TestAgnhostTools checks, in a running cluster, that the built-in agnhost
// image has what the upstream conformance specs run in it (issue #16):
// a /bin/sh that finds the tools on PATH (not busybox applets) and keeps
// environment variables whose names are not shell names, dig, getent,
// curl, OpenBSD nc with -v -t -u -z, the TLS pair /localhost.crt and
// /localhost.key, the user and group upstream's image defines, and tar,
// which kubectl cp runs.
func TestAgnhostTools(t *testing.T) {
	e := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e.apply(ctx, agnhostToolsManifest())
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "pod/tools", "--timeout=120s")
	apiIP := strings.TrimSpace(e.mustKubectl(ctx, "--namespace", "default", "get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"))

	tests := []struct {
		name, script string
		want         []string // each must be in the output
	}{
		{"sh finds the tools on PATH", "command -v nc dig curl getent ip",
			[]string{"/usr/bin/nc\n/usr/bin/dig\n/usr/bin/curl\n/usr/bin/getent\n/sbin/ip"}},
		{"sh keeps variables that are not shell names", "env", []string{"data-1=value-1"}},
		{"dig through the cluster DNS", "dig +notcp +noall +answer +search kubernetes.default A",
			[]string{"kubernetes.default.svc.cluster.local.", apiIP}},
		{"getent", "getent hosts kubernetes.default", []string{apiIP, "kubernetes.default.svc.cluster.local"}},
		{"curl", "curl -sS http://127.0.0.1:8080/hostname", []string{"tools"}},
		{"HTTPS with /localhost.crt", "curl -sS --cacert /localhost.crt https://127.0.0.1:8443/hostname", []string{"tools"}},
		{"nc -v -t -z", "nc -v -t -z -w 5 kubernetes.default 443 2>&1", []string{"443", "succeeded"}},
		{"nc -v -u -z", "nc -v -u -z -w 5 127.0.0.1 8081 2>&1", []string{"8081", "udp", "succeeded"}},
		{"user and group of the image", "id user-defined-in-image",
			[]string{"uid=1000(user-defined-in-image)", "50000(group-defined-in-image)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eventually(t, 20*time.Second, tt.name, func() error {
				out, err := e.kubectl(ctx, "exec", "tools", "-c", "netexec", "--", "sh", "-c", tt.script)
				if err != nil {
					return fmt.Errorf("%s: %w\n%s", tt.script, err, out)
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						return fmt.Errorf("%s printed %q, want %q in it", tt.script, out, w)
					}
				}
				return nil
			})
		})
	}
	t.Run("kubectl cp (tar)", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "copied")
		if err := os.WriteFile(src, []byte("copied into agnhost\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := e.kubectl(ctx, "cp", "-c", "netexec", src, "tools:/tmp/copied"); err != nil {
			t.Fatalf("kubectl cp: %v\n%s", err, out)
		}
		out, err := e.kubectl(ctx, "exec", "tools", "-c", "netexec", "--", "cat", "/tmp/copied")
		if err != nil || out != "copied into agnhost\n" {
			t.Errorf("cat /tmp/copied = %q, %v; want what kubectl cp copied", out, err)
		}
	})
}
