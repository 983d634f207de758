package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckNetworkPolicy: without nft, or with an nft the kernel check
// refuses (a stand-in that prints nft's message and fails), the check
// fails naming --network-policy=false; with the real nft (as root, where
// unshare -n works) it passes.
func TestCheckNetworkPolicy(t *testing.T) {
	refusing := filepath.Join(t.TempDir(), "nft")
	if err := os.WriteFile(refusing, []byte("#!/bin/sh\necho 'Error: Could not process rule: No such file or directory' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, nft  string
		want       Status
		wantDetail string
	}{
		{"no nft", "", StatusFail, "nft not found"},
	}
	if os.Geteuid() == 0 { // unshare -n
		tests = append(tests, struct {
			name, nft  string
			want       Status
			wantDetail string
		}{"kernel refuses", refusing, StatusFail, "Could not process rule"})
	}
	if real, err := exec.LookPath("nft"); err == nil && os.Geteuid() == 0 {
		tests = append(tests, struct {
			name, nft  string
			want       Status
			wantDetail string
		}{"this kernel", real, StatusOK, "enforced"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkNetworkPolicy(t.Context(), tt.nft)
			if r.Status != tt.want || !strings.Contains(r.Detail, tt.wantDetail) {
				t.Fatalf("status %v, detail %q; want %v with %q", r.Status, r.Detail, tt.want, tt.wantDetail)
			}
			if r.Status == StatusFail && !strings.Contains(r.Fix, "--network-policy=false") {
				t.Errorf("fix %q does not name --network-policy=false", r.Fix)
			}
		})
	}
}
