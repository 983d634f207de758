package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// TestApplyNodeSpec checks that the labels and taints of a node's
// [[nodes]] entry are set, that those an earlier up set and the config
// dropped go, and that what someone else set stays.
func TestApplyNodeSpec(t *testing.T) {
	gpu := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	notReady := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		node        corev1.Node
		labels      map[string]string
		taints      []corev1.Taint
		wantLabels  map[string]string
		wantTaints  []corev1.Taint
		wantAnnots  map[string]string
		wantChanged bool
	}{
		{
			name:        "new node",
			labels:      map[string]string{"tier": "gpu", "node-role.kubernetes.io/worker": ""},
			taints:      []corev1.Taint{gpu},
			wantLabels:  map[string]string{"tier": "gpu", "node-role.kubernetes.io/worker": ""},
			wantTaints:  []corev1.Taint{gpu},
			wantAnnots:  map[string]string{AnnotationLabels: "node-role.kubernetes.io/worker,tier", AnnotationTaints: "gpu:NoSchedule"},
			wantChanged: true,
		},
		{
			name: "unchanged",
			node: corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "gpu", "other": "x"},
					Annotations: map[string]string{AnnotationLabels: "tier", AnnotationTaints: "gpu:NoSchedule"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{notReady, gpu}},
			},
			labels:     map[string]string{"tier": "gpu"},
			taints:     []corev1.Taint{gpu},
			wantLabels: map[string]string{"tier": "gpu", "other": "x"},
			wantTaints: []corev1.Taint{notReady, gpu},
			wantAnnots: map[string]string{AnnotationLabels: "tier", AnnotationTaints: "gpu:NoSchedule"},
		},
		{
			name: "dropped from the config, others kept",
			node: corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "gpu", "other": "x"},
					Annotations: map[string]string{AnnotationLabels: "tier", AnnotationTaints: "gpu:NoSchedule", "a": "b"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{gpu, notReady}},
			},
			wantLabels:  map[string]string{"other": "x"},
			wantTaints:  []corev1.Taint{notReady},
			wantAnnots:  map[string]string{"a": "b"},
			wantChanged: true,
		},
		{
			name: "value changed in place",
			node: corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "cpu"},
					Annotations: map[string]string{AnnotationLabels: "tier", AnnotationTaints: "gpu:NoSchedule"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gpu", Value: "false", Effect: corev1.TaintEffectNoSchedule}}},
			},
			labels:      map[string]string{"tier": "gpu"},
			taints:      []corev1.Taint{gpu},
			wantLabels:  map[string]string{"tier": "gpu"},
			wantTaints:  []corev1.Taint{gpu},
			wantAnnots:  map[string]string{AnnotationLabels: "tier", AnnotationTaints: "gpu:NoSchedule"},
			wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node.DeepCopy()
			changed := applyNodeSpec(n, tt.labels, tt.taints)
			if changed != tt.wantChanged {
				t.Errorf("changed %v, want %v", changed, tt.wantChanged)
			}
			if !reflect.DeepEqual(n.Labels, tt.wantLabels) {
				t.Errorf("labels %v, want %v", n.Labels, tt.wantLabels)
			}
			if !reflect.DeepEqual(n.Spec.Taints, tt.wantTaints) {
				t.Errorf("taints %v, want %v", n.Spec.Taints, tt.wantTaints)
			}
			if !reflect.DeepEqual(n.Annotations, tt.wantAnnots) {
				t.Errorf("annotations %v, want %v", n.Annotations, tt.wantAnnots)
			}
		})
	}
}

// TestRegisterNodeSpec checks that registerNode gives a new Node and one
// left from an earlier up the labels and taints of its [[nodes]] entry.
func TestRegisterNodeSpec(t *testing.T) {
	pl := plantest.Plan(t, 2)
	pl.Cfg.NodeSpecs = []config.NodeSpec{{}, {
		Labels: map[string]string{"tier": "gpu", "node-role.kubernetes.io/worker": ""},
		Taints: []string{"gpu=true:NoSchedule"},
	}}
	nd := pl.Nodes[1]
	for _, existing := range []*corev1.Node{nil, {ObjectMeta: metav1.ObjectMeta{Name: nd.Name, Labels: map[string]string{"old": "x"}}}} {
		client := fake.NewClientset()
		if existing != nil {
			client = fake.NewClientset(existing)
		}
		c := &Cluster{Plan: pl, client: client, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := c.registerNode(context.Background(), nd); err != nil {
			t.Fatal(err)
		}
		got, err := client.CoreV1().Nodes().Get(context.Background(), nd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["tier"] != "gpu" || got.Labels["node-role.kubernetes.io/worker"] != "" {
			t.Errorf("existing %v: labels %v", existing != nil, got.Labels)
		}
		if _, ok := got.Labels["node-role.kubernetes.io/worker"]; !ok {
			t.Errorf("existing %v: no role label in %v", existing != nil, got.Labels)
		}
		want := []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		if !reflect.DeepEqual(got.Spec.Taints, want) {
			t.Errorf("existing %v: taints %v, want %v", existing != nil, got.Spec.Taints, want)
		}
	}
}

// TestRootlessMounts: a rootless plan refuses mounts, naming each, with
// exit 2; a root plan takes them into the node's sandbox.
func TestRootlessMounts(t *testing.T) {
	pl := plantest.Plan(t, 2)
	cfg := pl.Cfg
	cfg.NodeSpecs = []config.NodeSpec{{}, {Mounts: []config.Mount{{HostPath: "/srv/data", NodePath: "/data", ReadOnly: true}}}}
	_, err := plan.New(cfg, pl.Facts, "/IMAGES", plan.Rootless{Enabled: true})
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "nodes[1].mounts[0] /srv/data: mounts are not supported in a rootless cluster") {
		t.Errorf("rootless plan: error %v", err)
	}
	root, err := plan.New(cfg, pl.Facts, "/IMAGES", plan.Rootless{})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := root.Nodes[1].Exec.(*node.Container)
	want := []node.Bind{{Source: "/srv/data", Target: "/data", ReadOnly: true}}
	if !ok || !reflect.DeepEqual(c.Binds, want) || c.MountPointsRecord != root.MountPointsRecord(root.Nodes[1]) {
		t.Errorf("node 1's sandbox %+v, want binds %v", root.Nodes[1].Exec, want)
	}
	if argv := strings.Join(c.HolderArgv(), " "); !strings.Contains(argv, `--bind {"source":"/srv/data","target":"/data","readOnly":true}`) {
		t.Errorf("holder argv %s", argv)
	}
}
