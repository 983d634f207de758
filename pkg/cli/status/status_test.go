package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state"
)

func TestComponentState(t *testing.T) {
	tests := []struct {
		name     string
		running  bool
		recorded components.State
		want     components.State
	}{
		{"running, nothing recorded", true, "", components.StateRunning},
		{"not running, nothing recorded", false, "", components.StateStopped},
		{"recorded running", true, components.StateRunning, components.StateRunning},
		{"recorded running but gone (stopped with its node)", false, components.StateRunning, components.StateStopped},
		{"liveness failing", true, components.StateUnhealthy, components.StateUnhealthy},
		{"liveness failing, then exited", false, components.StateUnhealthy, components.StateStopped},
		{"restarting, its process gone", false, components.StateRestarting, components.StateRestarting},
		{"crash-looping, between two crashes", true, components.StateCrashLooping, components.StateCrashLooping},
		{"crash-looping", false, components.StateCrashLooping, components.StateCrashLooping},
		{"given up", false, components.StateFailed, components.StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := componentState(tt.running, tt.recorded); got != tt.want {
				t.Errorf("componentState(%v, %q) = %q, want %q", tt.running, tt.recorded, got, tt.want)
			}
		})
	}
}

func TestLastFailure(t *testing.T) {
	at := time.Date(2026, 12, 1, 14, 3, 4, 0, time.Local)
	tests := []struct {
		name string
		rec  Component
		want string
	}{
		{"none", Component{}, "-"},
		{"an exit", Component{LastFailure: "exited: exit status 1", LastFailureAt: &at}, "14:03:04: exited: exit status 1"},
		{
			"only the first line of a failed restart's log tail",
			Component{LastFailure: "restart failed: not ready\nlast 20 lines of x.log:\n    boom", LastFailureAt: &at},
			"14:03:04: restart failed: not ready",
		},
		{
			"a long line is cut",
			Component{LastFailure: strings.Repeat("x", 150), LastFailureAt: &at},
			"14:03:04: " + strings.Repeat("x", 97) + "...",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rec.lastFailure(); got != tt.want {
				t.Errorf("lastFailure = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExpiryWarnings(t *testing.T) {
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		exp  []pki.Expiry
		want []string
	}{
		{name: "none"},
		{
			name: "in 29 days",
			exp:  []pki.Expiry{{Path: "/s/pki/admin.crt", CommonName: "kubernix-admin", NotAfter: now.Add(29 * 24 * time.Hour)}},
			want: []string{"WARNING: certificate /s/pki/admin.crt (kubernix-admin) expires in 29d, at 2027-01-30T12:00:00Z: `kubernix down` then `kubernix up` renews it"},
		},
		{
			name: "in hours, and expired",
			exp: []pki.Expiry{
				{Path: "/s/pki/ca.crt", CommonName: "kubernix-x CA", NotAfter: now.Add(5 * time.Hour)},
				{Path: "/s/pki/etcd-server.crt", CommonName: "etcd", NotAfter: now.Add(-time.Hour)},
			},
			want: []string{
				"WARNING: certificate /s/pki/ca.crt (kubernix-x CA) expires in 5h, at 2027-01-01T17:00:00Z: `kubernix down` then `kubernix up` renews it",
				"WARNING: certificate /s/pki/etcd-server.crt (etcd) expired, at 2027-01-01T11:00:00Z: `kubernix down` then `kubernix up` renews it",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expiryWarnings(certificates(tt.exp), now); !slices.Equal(got, tt.want) {
				t.Errorf("got\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

// TestWarnExpiring checks the warning against a real PKI: nothing for a
// fresh one, one line naming the file for a certificate with 10 days left.
func TestWarnExpiring(t *testing.T) {
	cfg := config.Default()
	cfg.Name = "warn"
	cfg.Resolve()
	cfg.StateDir = t.TempDir()
	spec := pki.Spec{Dir: cfg.Paths().PKI(), ClusterName: cfg.Name, Validity: 10 * 24 * time.Hour}
	b, err := pki.Ensure(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	warnExpiring := func() {
		t.Helper()
		out.Reset()
		st, err := collect(context.Background(), cfg, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range expiryWarnings(st.ExpiringCertificates, st.Time) {
			out.WriteString(line + "\n")
		}
		if st.CertificatesError != "" {
			t.Errorf("CertificatesError: %s", st.CertificatesError)
		}
	}
	warnExpiring()
	got := out.String()
	for _, want := range []string{
		"WARNING: certificate " + b.Admin.Cert + " (kubernix-admin) expires in 9d",
		"WARNING: certificate " + b.EtcdServer.Cert + " (etcd) expires in 9d",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, b.CA.Cert) {
		t.Errorf("the CA (10 years) is reported:\n%s", got)
	}

	// What up does: leaves within pki.RenewBefore of expiry are issued
	// again, for a year.
	spec.Validity = 0
	if _, err := pki.Ensure(spec); err != nil {
		t.Fatal(err)
	}
	warnExpiring()
	if out.Len() != 0 {
		t.Errorf("after renewal: %s", out.String())
	}
}

// TestCollectDamaged: the status of a cluster whose record is damaged
// names the damage and lists the processes its run records name, live or
// not, and is never healthy.
func TestCollectDamaged(t *testing.T) {
	dir := t.TempDir()
	p := config.Paths{State: dir}
	if err := process.RecordSelf(state.SupervisorRunDir(p), state.SupervisorName, state.SupervisorScope); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	if err := process.Record(p.Run(config.ControlPlaneScope, apiserver.Name), apiserver.Name, config.ControlPlaneScope, sleep.Process.Pid, sleep.Args, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.Run("kx-node-0", "kubelet"), 0o755); err != nil { // never started
		t.Fatal(err)
	}
	damaged := &state.DamagedError{File: p.ConfigFile(), Err: errors.New("toml: expected character =")}
	st := collectDamaged(config.Config{Name: "kx", StateDir: dir}, damaged, time.Now())
	if st.Damaged != damaged.Error() || !st.Supervisor.Running || st.Supervisor.PID != os.Getpid() || st.Healthy || st.healthy() {
		t.Errorf("status %+v: want the damage, this process as supervisor, not healthy", st)
	}
	var got []string
	for _, c := range st.Components {
		got = append(got, fmt.Sprintf("%s/%s %s", c.Node, c.Name, c.State))
	}
	want := []string{"control-plane/kube-apiserver running", "kx-node-0/kubelet stopped"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("components %q, want %q", got, want)
	}
	if !st.APIServer.Running || st.APIServer.Answering {
		t.Errorf("apiserver %+v: want running, not asked", st.APIServer)
	}
}

// TestAfterReadyState: an after-Ready addon's deployment, as the
// supervisor records it, is installing while it starts, failed with its
// error, and neither once deployed or without a record.
func TestAfterReadyState(t *testing.T) {
	tests := []struct {
		name           string
		record         *components.Supervision
		wantInstalling bool
		wantFailure    string
	}{
		{"no record", nil, false, ""},
		{"deploying", &components.Supervision{State: components.StateStarting}, true, ""},
		{"deployed", &components.Supervision{State: components.StateRunning}, false, ""},
		{"failed", &components.Supervision{State: components.StateFailed, LastFailure: "boom"}, false, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: t.TempDir()}
			if tt.record != nil {
				if err := components.WriteSupervision(state.AfterReadyRunDir(p, "ingress"), *tt.record); err != nil {
					t.Fatal(err)
				}
			}
			installing, failure := afterReadyState(p, "ingress")
			if installing != tt.wantInstalling || failure != tt.wantFailure {
				t.Errorf("afterReadyState = %v, %q; want %v, %q", installing, failure, tt.wantInstalling, tt.wantFailure)
			}
		})
	}
}
