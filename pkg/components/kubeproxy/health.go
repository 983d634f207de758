package kubeproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/kubernix/kubernix/pkg/process"
)

// health is the JSON body of kube-proxy's /healthz, the fields read of
// upstream's ProxyHealth (k8s.io/kubernetes pkg/proxy/healthcheck,
// proxy_health.go, v1.37.2): Status holds, per IP family ("IPv4",
// "IPv6"), the time its proxier last wrote its rules; a family that has
// not synced yet has no entry.
type health struct {
	Healthy bool `json:"healthy"`
	Status  map[string]struct {
		LastUpdated time.Time `json:"lastUpdated"`
	} `json:"status"`
}

// SyncedFrom tells from a /healthz answer (its status code and body)
// whether kube-proxy has written its Service rules at least once: /healthz
// answers 200 from the start, before any sync, so the code alone does not
// tell. It returns nil once it has, else an error saying what is missing;
// a body that is not upstream's JSON is an error naming it.
func SyncedFrom(code int, body []byte) error {
	if code != http.StatusOK {
		return fmt.Errorf("kube-proxy /healthz: %d %s", code, http.StatusText(code))
	}
	var h health
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("kube-proxy /healthz: %w in %q", err, body)
	}
	for _, s := range h.Status {
		if !s.LastUpdated.IsZero() {
			return nil
		}
	}
	return fmt.Errorf("kube-proxy has not written its Service rules yet")
}

// Synced is a probe that passes once the kube-proxy of s has written its
// Service rules at least once (SyncedFrom on s's /healthz); each attempt is
// bounded by process.ProbeTimeout.
func (s Spec) Synced() process.Probe { return process.HTTPCheck(s.HealthURL(), nil, SyncedFrom) }
