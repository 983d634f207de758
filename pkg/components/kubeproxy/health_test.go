package kubeproxy

import (
	"net/http"
	"strings"
	"testing"
)

// TestSyncedFrom: only a 200 whose status has a family with a last
// update counts as synced; /healthz's answers at start (no status yet)
// do not.
func TestSyncedFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		body string
		want string // "" for synced, else a part of the error
	}{
		{"synced", http.StatusOK,
			`{"lastUpdated":"2026-12-02T23:39:01Z","currentTime":"2026-12-02T23:39:01Z","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-12-02T23:39:01Z","healthy":true}}}`, ""},
		{"started, not synced", http.StatusOK,
			`{"lastUpdated":"2026-12-02T23:39:01Z","currentTime":"2026-12-02T23:39:01Z","nodeEligible":true,"healthy":true}`, "not written"},
		{"a family with a zero time", http.StatusOK,
			`{"healthy":true,"status":{"IPv4":{"lastUpdated":"0001-01-01T00:00:00Z","healthy":true}}}`, "not written"},
		{"node not eligible yet", http.StatusServiceUnavailable, `{"healthy":true,"nodeEligible":false}`, "503"},
		{"not JSON", http.StatusOK, `ok`, `"ok"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := SyncedFrom(tc.code, []byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("SyncedFrom = %v, want synced", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("SyncedFrom = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
