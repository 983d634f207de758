package preflight

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// fakeGateBinary writes a script that behaves as a component binary does
// when gateChecks asks it about feature gates: it refuses the gate Bogus
// (any value) on stderr with exit 1, and otherwise exits 0 or, as the
// kubelet does, fails naming its --config.
func fakeGateBinary(t *testing.T, dir, name string) string {
	t.Helper()
	accept := "exit 0"
	if name == "kubelet" {
		accept = `for a; do case "$a" in --config=*) echo "failed to load kubelet config file, path: ${a#--config=}" >&2;; esac; done; exit 1`
	}
	script := "#!/bin/sh\ncase \"$*\" in *Bogus=*) echo 'E1201 23:15:15.374437   20267 run.go:72] \"command failed\" err=\"unrecognized feature gate: Bogus\"' >&2; exit 1;; esac\n" + accept + "\n"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckComponents(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n"), 0o644)
	os.WriteFile(bad, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n"), 0o644)
	names := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}
	tests := []struct {
		name   string
		gates  map[string]bool
		policy string
		want   []string // substrings of the error; none: no error
		absent []string
	}{
		{name: "nothing to check"},
		{name: "known gates", gates: map[string]bool{"CoordinatedLeaderElection": true, "Other": false}, policy: good},
		{name: "unknown gate named per component", gates: map[string]bool{"Bogus": true, "CoordinatedLeaderElection": true},
			want:   []string{"--feature-gates Bogus=true: kube-apiserver refuses it", "kubelet refuses it", "kube-proxy refuses it", "kube-scheduler refuses it", "kube-controller-manager refuses it", "it: \"command failed\" err=\"unrecognized feature gate: Bogus\""},
			absent: []string{"CoordinatedLeaderElection=true:", "run.go:72"}},
		{name: "bad audit policy", policy: bad, want: []string{"--audit-policy " + bad, "Loud"}},
		{name: "both", gates: map[string]bool{"Bogus": false}, policy: bad, want: []string{"--audit-policy", "--feature-gates Bogus=false: kubelet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := plantest.Plan(t, 1)
			for _, n := range names {
				pl.Facts.Paths[n] = fakeGateBinary(t, t.TempDir(), n)
			}
			pl.Cfg.FeatureGates = tt.gates
			pl.Cfg.AuditPolicy = tt.policy
			err := CheckComponents(context.Background(), pl)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if tt.policy != "" && !strings.Contains(string(pl.AuditPolicy), "Metadata") {
					t.Errorf("plan.AuditPolicy = %q, want the file's", pl.AuditPolicy)
				}
				return
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("err = %v, want config.ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error has %q:\n%v", a, err)
				}
			}
		})
	}
}
