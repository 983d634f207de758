package cluster

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControllerAccountNames(t *testing.T) {
	crb := func(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects}
	}
	sa := func(ns, name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	tests := []struct {
		name string
		crbs []rbacv1.ClusterRoleBinding
		want []string
	}{
		{"none", nil, nil},
		{
			name: "controllers only, kube-system service accounts, each once",
			crbs: []rbacv1.ClusterRoleBinding{
				crb("system:controller:deployment-controller", sa("kube-system", "deployment-controller")),
				crb("system:controller:replicaset-controller", sa("kube-system", "replicaset-controller")),
				crb("system:controller:again", sa("kube-system", "deployment-controller")),
				crb("system:kube-controller-manager", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "system:kube-controller-manager"}),
				crb("system:controller:odd", sa("default", "elsewhere"), rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "g"}),
				crb("cluster-admin", sa("kube-system", "not-a-controller")),
			},
			want: []string{"deployment-controller", "replicaset-controller"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controllerAccountNames(tt.crbs); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
