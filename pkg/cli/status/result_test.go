package status

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/kubernix/kubernix/internal/golden"
	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update)
}

// inUTC shows local times as UTC for the test, so the goldens do not
// depend on the machine's time zone.
func inUTC(t *testing.T) {
	local := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = local })
}

// statusCases are the Status values the goldens show: a healthy cluster,
// one whose supervisor was killed, one whose apiserver does not answer,
// a healthy one whose nodes publish ports, a running one whose record is
// damaged, a healthy dual-stack one that is ephemeral, and a healthy one
// whose ingress addon is still being deployed after Ready.
func statusCases() map[string]Status {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	started := now.Add(-time.Hour)
	failedAt := now.Add(-10 * time.Minute)
	healthy := Status{
		Cluster: "kx", StateDir: "/tmp/kx", KubernetesVersion: "v1.36.3", IPFamily: "ipv4", Time: now, NetworkPolicies: NetworkPoliciesEnforced,
		Supervisor: Supervisor{PID: 100, Running: true},
		Components: []Component{
			{Name: "etcd", Node: "control-plane", PID: 101, State: components.StateRunning, Since: &started},
			{Name: "kube-apiserver", Node: "control-plane", PID: 102, State: components.StateRunning, Since: &started},
			{Name: "containerd", Node: "kx-node-0", PID: 103, State: components.StateRunning, Restarts: 1, Since: &started,
				LastFailure: "exited: signal: killed\nlast lines:\n  boom", LastFailureAt: &failedAt},
			{Name: "kubelet", Node: "kx-node-0", PID: 104, State: components.StateRunning, Since: &started},
		},
		APIServer: APIServer{Running: true, Answering: true},
		Nodes:     []Node{{Name: "kx-node-0", Ready: "True", KubeletVersion: "v1.36.3", InternalIP: "10.176.0.2", InternalIPs: []string{"10.176.0.2"}, PodCIDRs: []string{"10.176.128.0/24"}}},
		Addons: []Addon{
			{Name: "coredns", Healthy: true, Deployment: &Deployment{Name: "kube-system/coredns", ReadyReplicas: 1, Replicas: 1}},
			{Name: "registry", Healthy: true, Processes: []AddonProcess{{ID: "registry", Running: true}}},
		},
		Healthy: true,
	}
	down := Status{
		Cluster: "kx", StateDir: "/tmp/kx", KubernetesVersion: "v1.37.2", Time: now, NetworkPolicies: NetworkPoliciesOff,
		Components: []Component{
			{Name: "etcd", Node: "control-plane", PID: 101, State: components.StateStopped, Since: &started},
			{Name: "kubelet", Node: "kx-node-0", State: components.StateStopped},
		},
		FailedNodes:          []FailedNode{{Node: "kx-node-0", Reason: "containerd exited: exit status 1"}},
		ExpiringCertificates: []Certificate{{Path: "/tmp/kx/pki/admin.crt", CommonName: "kubernix-admin", NotAfter: now.Add(48 * time.Hour)}},
		CertificatesError:    "read /tmp/kx/pki/ca.crt: permission denied",
	}
	notAnswering := Status{
		Cluster: "kx", StateDir: "/tmp/kx", Time: now,
		Supervisor: Supervisor{PID: 100, Running: true},
		Components: []Component{{Name: "kube-apiserver", Node: "control-plane", PID: 102, State: components.StateCrashLooping, Restarts: 5, Since: &started}},
		APIServer:  APIServer{Running: true, Error: "Get \"https://10.176.0.1:6443/api/v1/nodes\": context deadline exceeded"},
	}
	unhealthyAddon := healthy
	unhealthyAddon.Addons = []Addon{{Name: "coredns", Deployment: &Deployment{Name: "kube-system/coredns", Error: `deployments.apps "coredns" not found`}},
		{Name: "registry", Processes: []AddonProcess{{ID: "registry", Running: false}}},
		{Name: "ingress", Deployment: &Deployment{Name: "kube-system/traefik", Replicas: 1},
			Error: "deploy addon ingress after the cluster was Ready: context deadline exceeded"}}
	unhealthyAddon.Healthy = false
	installing := healthy
	installing.Addons = append(slices.Clone(healthy.Addons), Addon{Name: "ingress", Installing: true,
		Deployment: &Deployment{Name: "kube-system/traefik", Error: `deployments.apps "traefik" not found`}})
	ports := healthy
	ports.Ports = []plan.Published{{Listen: "127.0.0.1:8080", Protocol: "TCP", Node: "kx-node-0", NodePort: 30080},
		{Listen: "0.0.0.0:5353", Protocol: "UDP", Node: "kx-node-0", NodePort: 53}}
	dual := healthy
	dual.IPFamily, dual.Ephemeral = "dual", true
	dual.Nodes = []Node{{Name: "kx-node-0", Ready: "True", KubeletVersion: "v1.36.3", InternalIP: "10.176.0.2",
		InternalIPs: []string{"10.176.0.2", "fd50:c307:8205::2"}, PodCIDRs: []string{"10.176.128.0/24", "fd50:c307:8205:8000::/64"}}}
	damaged := Status{
		Cluster: "kx", StateDir: "/tmp/kx", Time: now,
		Damaged:    "the cluster's record /tmp/kx/kubernix.toml cannot be read: invalid configuration: config file /tmp/kx/kubernix.toml: toml: expected character =",
		Supervisor: Supervisor{PID: 100, Running: true},
		Components: []Component{
			{Name: "etcd", Node: "control-plane", PID: 101, State: components.StateRunning, Since: &started},
			{Name: "kube-apiserver", Node: "control-plane", PID: 102, State: components.StateRunning, Since: &started},
		},
		APIServer: APIServer{Running: true, Error: "the cluster's record is damaged"},
	}
	return map[string]Status{"healthy": healthy, "supervisor-killed": down, "apiserver-not-answering": notAnswering,
		"addons-unhealthy": unhealthyAddon, "ports": ports, "damaged": damaged, "dual-stack": dual,
		"addon-installing": installing}
}

// TestStatusOutput renders each Status as a table and as JSON (goldens),
// parses the JSON back to the same Status, and checks that Healthy is
// what the rest says.
func TestStatusOutput(t *testing.T) {
	inUTC(t)
	for name, st := range statusCases() {
		t.Run(name, func(t *testing.T) {
			if got := st.healthy(); got != st.Healthy {
				t.Errorf("healthy() = %v, the case says %v", got, st.Healthy)
			}
			var table, js bytes.Buffer
			if err := common.PrintOutput(&table, common.OutputTable, st, st.Table); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", table.Bytes())
			if err := common.PrintOutput(&js, common.OutputJSON, st, st.Table); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".json", js.Bytes())
			var back Status
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, st) {
				t.Errorf("JSON round trip:\n%+v\nwant\n%+v", back, st)
			}
		})
	}
}

// TestTimingsOutput converts recorded timings, sorted by start, and
// renders them as a table and as JSON that parses back.
func TestTimingsOutput(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	rec := state.Timings{
		Prepare: 1234567 * time.Microsecond, Total: 9876543 * time.Microsecond,
		Components: []boot.Timing{
			{Name: "kubelet/kx-node-0", Phase: "NodeAgent", Started: t0.Add(3 * time.Second), Ready: t0.Add(4500 * time.Millisecond), Elapsed: 1500 * time.Millisecond},
			{Name: "etcd", Phase: "Datastore", Started: t0, Ready: t0.Add(800 * time.Millisecond), Elapsed: 800 * time.Millisecond},
		},
	}
	tt := newTimings(rec)
	var table, js bytes.Buffer
	if err := common.PrintOutput(&table, common.OutputTable, tt, tt.Table); err != nil {
		t.Fatal(err)
	}
	want := "total 9.877s (prepare 1.235s)\n" +
		"PHASE      COMPONENT          STARTED(+s)  READY(+s)  TOOK\n" +
		"Datastore  etcd               0.000        0.800      800ms\n" +
		"NodeAgent  kubelet/kx-node-0  3.000        4.500      1.5s\n"
	if table.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), want)
	}
	if err := common.PrintOutput(&js, common.OutputJSON, tt, tt.Table); err != nil {
		t.Fatal(err)
	}
	var back Timings
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tt) {
		t.Errorf("JSON round trip:\n%+v\nwant\n%+v", back, tt)
	}
	if back.TotalSeconds != 9.877 || back.PrepareSeconds != 1.235 || back.Components[1].TookSeconds != 1.5 {
		t.Errorf("seconds: total %v, kubelet took %v\n%s", back.TotalSeconds, back.Components[1].TookSeconds, js.String())
	}
}

// TestCheckOutputBeforeWork checks that a bad -o is refused (exit 2,
// naming --output) before status looks for the cluster, which does not
// exist (that would be exit 1, "no cluster").
func TestCheckOutputBeforeWork(t *testing.T) {
	var out, errOut bytes.Buffer
	env := &common.Env{Streams: common.Streams{Out: &out, Err: &errOut}, Flags: config.NewFlags()}
	cmd := NewCommand(env)
	cmd.SetArgs([]string{"-o", "xml", "--state-dir", filepath.Join(t.TempDir(), "none")})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	if common.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("status -o xml: %v (exit %d), want exit 2 naming --output", err, common.ExitCode(err))
	}
}

// TestAddonsReady: every addon healthy and none installing is ready; an
// installing or unhealthy addon, or no list at all, is not, named.
func TestAddonsReady(t *testing.T) {
	healthy := Addon{Name: "coredns", Healthy: true}
	tests := []struct {
		name   string
		addons []Addon
		want   string // "" for nil, else a substring of the error
	}{
		{"apiserver not answering", nil, "no addons listed"},
		{"none enabled", []Addon{}, ""},
		{"all healthy", []Addon{healthy, {Name: "registry", Healthy: true}}, ""},
		{"installing", []Addon{healthy, {Name: "ingress", Installing: true}}, "addon ingress: installing"},
		{"unhealthy", []Addon{{Name: "coredns", Deployment: &Deployment{Name: "kube-system/coredns", Replicas: 1}}}, "addon coredns: 0/1 ready"},
		{"failed after Ready", []Addon{healthy, {Name: "ingress", Error: "boom"}}, "addon ingress: failed: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Status{Addons: tt.addons}.AddonsReady()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("AddonsReady() = %v, want %q", err, tt.want)
			}
		})
	}
}
