package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/cli/status"
	"github.com/kubernix/kubernix/pkg/images"
)

// TimeToK8s is the flow of minikube's time-to-k8s benchmark after up
// returned: a Deployment's pod running, then DNS answering from it. Both
// are seconds from up's invocation, so they include up's wall time.
type TimeToK8s struct {
	// AppRunningSeconds: up invoked → the Deployment, applied once up
	// returned, has its pod Ready (kubectl rollout status).
	AppRunningSeconds float64 `json:"app_running_seconds"`
	// DNSSeconds: up invoked → the pod's nslookup of the kubernetes
	// Service answered (kubectl exec, asked again every 100 ms until it
	// does).
	DNSSeconds float64 `json:"dns_answering_seconds"`
	// AddonsSeconds: up invoked → `kubernix status` reports every addon
	// healthy, those deployed once the cluster is Ready (ingress) too
	// (asked every 200 ms, after the flow above); 0 when not measured.
	AddonsSeconds float64 `json:"addons_seconds,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// timeToK8sApp names the flow's Deployment (in the default namespace)
// and its pod's label app.
const timeToK8sApp = "time-to-k8s"

// timeToK8sManifest is the flow's Deployment: one pod of the built-in
// busybox image that sleeps, and goes at once when deleted.
func timeToK8sManifest() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: app
          image: %[2]s
          imagePullPolicy: IfNotPresent
          command: [sleep, "3600"]
`, timeToK8sApp, images.BusyboxRef())
}

// TimeToK8s runs the time-to-k8s flow on the cluster, which up (invoked
// at begin) just brought up with CoreDNS: it applies the Deployment,
// waits until its pod is Ready, then until an nslookup of
// kubernetes.default.svc.<clusterDomain> from it answers. Then it deletes
// the Deployment and waits until its pod is gone, so that what is
// measured next (memory) is the cluster's own. The error names the step
// that failed.
func (k Kubernix) TimeToK8s(ctx context.Context, begin time.Time, clusterDomain string) (*TimeToK8s, error) {
	kubectl := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, k.Timeout)
		defer cancel()
		out, _, err := k.Run.Run(ctx, append([]string{k.bin("kubectl"), "--kubeconfig", k.Layout.AdminKubeconfig()}, args...)...)
		return out, err
	}
	f, err := os.CreateTemp("", timeToK8sApp+"-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(timeToK8sManifest())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if _, err := kubectl("apply", "-f", f.Name()); err != nil {
		return nil, fmt.Errorf("apply the Deployment: %w", err)
	}
	var t TimeToK8s
	if _, err := kubectl("rollout", "status", "deployment/"+timeToK8sApp, "--timeout=2m"); err != nil {
		return nil, fmt.Errorf("wait for its pod: %w", err)
	}
	t.AppRunningSeconds = time.Since(begin).Seconds()
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, last = kubectl("exec", "deployment/"+timeToK8sApp, "--", "nslookup", "kubernetes.default.svc."+clusterDomain)
		return last == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("nslookup from its pod: %w (last: %v)", err, last)
	}
	t.DNSSeconds = time.Since(begin).Seconds()
	if _, err := kubectl("delete", "deployment", timeToK8sApp, "--wait"); err != nil {
		return &t, fmt.Errorf("delete the Deployment: %w", err)
	}
	if _, err := kubectl("wait", "--for=delete", "pod", "-l", "app="+timeToK8sApp, "--timeout=1m"); err != nil {
		return &t, fmt.Errorf("wait until its pod is gone: %w", err)
	}
	return &t, nil
}

// AddonsHealthy returns the seconds from begin, when up was invoked,
// until `kubernix status -o json` reports every addon healthy, none still
// installing (addons deployed once the cluster is Ready, such as ingress,
// are when up returns). It asks every 200 ms for up to k.Timeout; the
// error says which addon was not healthy then.
func (k Kubernix) AddonsHealthy(ctx context.Context, begin time.Time) (float64, error) {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, k.Timeout, true, func(ctx context.Context) (bool, error) {
		out, _, err := k.run(ctx, append([]string{"status", "-o", "json"}, k.cluster()...)...)
		if err != nil && len(out) == 0 {
			last = err
			return false, nil
		}
		var st status.Status
		if err := json.Unmarshal(out, &st); err != nil {
			return false, fmt.Errorf("kubernix status -o json: %w", err)
		}
		last = st.AddonsReady()
		return last == nil, nil
	})
	if err != nil {
		return 0, errors.Join(err, last)
	}
	return time.Since(begin).Seconds(), nil
}
