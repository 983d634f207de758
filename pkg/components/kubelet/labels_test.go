package kubelet

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSelfLabels checks which labels of a node the kubelet sets itself
// through --node-labels: none in the kubernetes.io and k8s.io namespaces
// but the kubelet's own.
func TestSelfLabels(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string
		arg    string // the --node-labels argument, "" for none
	}{
		{name: "none", want: map[string]string{}},
		{name: "ordinary", labels: map[string]string{"tier": "gpu", "example.com/team": "a"},
			want: map[string]string{"tier": "gpu", "example.com/team": "a"}, arg: "--node-labels=example.com/team=a,tier=gpu"},
		{name: "role is the admin's", labels: map[string]string{"node-role.kubernetes.io/worker": "", "tier": "gpu"},
			want: map[string]string{"tier": "gpu"}, arg: "--node-labels=tier=gpu"},
		{name: "restricted namespaces", labels: map[string]string{"node-restriction.kubernetes.io/a": "b", "x.k8s.io/y": "z", "k8s.io/q": "r"},
			want: map[string]string{}},
		{name: "allowed in kubernetes.io", labels: map[string]string{"topology.kubernetes.io/zone": "z1", "kubelet.kubernetes.io/x": "y", "a.node.kubernetes.io/b": "c"},
			want: map[string]string{"topology.kubernetes.io/zone": "z1", "kubelet.kubernetes.io/x": "y", "a.node.kubernetes.io/b": "c"},
			arg:  "--node-labels=a.node.kubernetes.io/b=c,kubelet.kubernetes.io/x=y,topology.kubernetes.io/zone=z1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SelfLabels(tt.labels); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SelfLabels = %v, want %v", got, tt.want)
			}
			args := Command(Spec{Labels: tt.labels}).Args
			i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--node-labels=") })
			switch {
			case tt.arg == "" && i >= 0:
				t.Errorf("args %v, want no --node-labels", args)
			case tt.arg != "" && (i < 0 || args[i] != tt.arg):
				t.Errorf("args %v, want %s", args, tt.arg)
			}
		})
	}
}
