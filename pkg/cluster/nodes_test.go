package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRegisterNode checks the Node kubernix makes before a kubelet starts:
// a new one carries the pod CIDR and the addresses the kubelet will post;
// one left from the previous run has its stale Ready=True reset to
// Unknown; one with another pod CIDR is refused.
func TestRegisterNode(t *testing.T) {
	pl := plantest.Plan(t, 3)
	nd := pl.Nodes[1]
	readyNode := func(podCIDR string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nd.Name},
			Spec:       corev1.NodeSpec{PodCIDR: podCIDR},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"},
			}},
		}
	}
	tests := []struct {
		name      string
		existing  *corev1.Node
		wantErr   string
		wantReady corev1.ConditionStatus // "" when the node has no Ready condition
		wantAddrs []corev1.NodeAddress
	}{
		{
			name:      "new",
			wantAddrs: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nd.IP.String()}, {Type: corev1.NodeHostName, Address: nd.Name}},
		},
		{name: "stale ready", existing: readyNode(nd.PodCIDR.String(), corev1.ConditionTrue), wantReady: corev1.ConditionUnknown},
		{name: "not ready stays", existing: readyNode(nd.PodCIDR.String(), corev1.ConditionFalse), wantReady: corev1.ConditionFalse},
		{name: "other pod CIDR", existing: readyNode("10.99.0.0/24", corev1.ConditionTrue), wantErr: "has pod CIDRs 10.99.0.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.existing != nil {
				client = fake.NewClientset(tt.existing)
			}
			c := &Cluster{Plan: pl, client: client, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			err := c.registerNode(context.Background(), nd)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Nodes().Get(context.Background(), nd.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.existing == nil && (got.Spec.PodCIDR != nd.PodCIDR.String() || got.Labels["kubernix.io/cluster"] != pl.Cfg.Name) {
				t.Errorf("new node spec %+v labels %v", got.Spec, got.Labels)
			}
			var ready corev1.ConditionStatus
			for _, cond := range got.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					ready = cond.Status
				}
			}
			if ready != tt.wantReady {
				t.Errorf("Ready = %q, want %q", ready, tt.wantReady)
			}
			if tt.wantAddrs != nil && !slices.Equal(got.Status.Addresses, tt.wantAddrs) {
				t.Errorf("addresses %v, want %v", got.Status.Addresses, tt.wantAddrs)
			}
		})
	}
}

func TestIsTransient(t *testing.T) {
	gr := schema.GroupResource{Resource: "nodes"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, true},
		{"service unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "create", 1), true},
		{"already exists", apierrors.NewAlreadyExists(gr, "n"), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "n", nil), false},
		{"forbidden", apierrors.NewForbidden(gr, "n", errors.New("no")), false},
	}
	for _, tt := range tests {
		if got := isTransient(tt.err); got != tt.want {
			t.Errorf("%s: isTransient = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDeleteStaleNodes: after a 3-node cluster, a 1-node plan deletes the
// cluster's nodes 1 and 2 and force-deletes their pods; node 0, its pods
// and another cluster's node stay.
func TestDeleteStaleNodes(t *testing.T) {
	pl := plantest.Plan(t, 1)
	node := func(name, cluster string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernix.io/cluster": cluster}}}
	}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	client := fake.NewClientset(
		node("golden-node-0", "golden"), node("golden-node-1", "golden"), node("golden-node-2", "golden"),
		node("other-node-1", "other"),
		pod("coredns-a", "golden-node-0"), pod("coredns-b", "golden-node-2"), pod("elsewhere", "other-node-1"),
	)
	c := &Cluster{Plan: pl, client: client, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := c.deleteStaleNodes(context.Background()); err != nil {
		t.Fatal(err)
	}
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	var gotNodes []string
	for _, n := range nodes.Items {
		gotNodes = append(gotNodes, n.Name)
	}
	pods, _ := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	var gotPods []string
	for _, p := range pods.Items {
		gotPods = append(gotPods, p.Name)
	}
	slices.Sort(gotNodes)
	slices.Sort(gotPods)
	if want := []string{"golden-node-0", "other-node-1"}; !slices.Equal(gotNodes, want) {
		t.Errorf("nodes = %v, want %v", gotNodes, want)
	}
	if want := []string{"coredns-a", "elsewhere"}; !slices.Equal(gotPods, want) {
		t.Errorf("pods = %v, want %v", gotPods, want)
	}
}

// TestBootSkips: the boot skips the images of opt-in addons left out and
// of after-Ready addons (which import their own once the cluster is
// Ready), but imports a default addon's even without it, and an image
// that an addon of the boot shares with a skipped one.
func TestBootSkips(t *testing.T) {
	table := []addons.Addon{
		{Name: "dns", Images: []string{"coredns"}, Default: true},
		{Name: "opt", Images: []string{"optional", "busybox"}},
		{Name: "later", Images: []string{"traefik", "busybox"}, Default: true, AfterReady: true},
		{Name: "tools", Images: []string{"busybox"}, Default: true},
	}
	tests := []struct {
		addons []string
		want   []string
	}{
		{[]string{"dns", "later", "tools"}, []string{"optional.tar", "traefik.tar"}},
		{nil, []string{"optional.tar", "traefik.tar"}},
		{[]string{"opt"}, []string{"traefik.tar"}},
		{[]string{"later"}, []string{"optional.tar", "traefik.tar"}},
	}
	for _, tt := range tests {
		got := slices.Sorted(maps.Keys(bootSkips(table, config.Config{Addons: tt.addons})))
		if !slices.Equal(got, tt.want) {
			t.Errorf("addons %v: skipped %v, want %v", tt.addons, got, tt.want)
		}
	}
	// The real table: traefik's image, ingress's, is never imported at boot.
	for _, cfgAddons := range [][]string{nil, {"ingress", "loadbalancer"}} {
		if !bootSkips(addons.Table, config.Config{Addons: cfgAddons})["traefik.tar"] {
			t.Errorf("addons %v: traefik.tar imported at boot", cfgAddons)
		}
	}
}
