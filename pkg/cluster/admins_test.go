package cluster

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestClusterAdmins checks the bindings the admin and the apiserver's
// kubelet client rely on: made on a new cluster, and made right again
// when someone changed their subjects.
func TestClusterAdmins(t *testing.T) {
	tests := []struct {
		name     string
		existing []rbacv1.ClusterRoleBinding
	}{
		{name: "new cluster"},
		{name: "subjects edited", existing: []rbacv1.ClusterRoleBinding{{
			ObjectMeta: metav1.ObjectMeta{Name: "kubernix:cluster-admins"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "someone-else"}},
		}}},
	}
	want := map[string]struct {
		role    string
		subject rbacv1.Subject
	}{
		"kubernix:cluster-admins":    {"cluster-admin", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "kubernix:cluster-admins"}},
		"kubernix:kubelet-api-admin": {"system:kubelet-api-admin", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "kube-apiserver-kubelet-client"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, crb := range tt.existing {
				if _, err := client.RbacV1().ClusterRoleBindings().Create(context.Background(), &crb, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			c := &Cluster{client: client, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if err := c.applyAdminBindings(context.Background()); err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				crb, err := client.RbacV1().ClusterRoleBindings().Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != w.role {
					t.Errorf("%s: role %+v, want ClusterRole %s", name, crb.RoleRef, w.role)
				}
				if !slices.Equal(crb.Subjects, []rbacv1.Subject{w.subject}) {
					t.Errorf("%s: subjects %+v, want %+v", name, crb.Subjects, w.subject)
				}
			}
		})
	}
}

// testCluster returns a Cluster of nodes nodes, not started, with its PKI
// made in a temporary state dir.
func testCluster(t *testing.T, nodes int) *Cluster {
	t.Helper()
	pl := plantest.Plan(t, nodes)
	pl.Paths = config.Paths{State: t.TempDir()}
	bundle, err := pki.Ensure(pl.PKISpec())
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Plan: pl, PKI: bundle, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestTrust checks which CA each control-plane component trusts for what:
// etcd only the etcd CA, the apiserver's request-header authentication
// only the front-proxy CA.
func TestTrust(t *testing.T) {
	c := testCluster(t, 1)
	pl, b := c.Plan, c.PKI
	ds, err := plan.Describe(pl)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{}
	for _, d := range components.Processes(ds) {
		args[d.ID()] = d.Command.Args
	}
	tests := []struct {
		component, flag, want string
	}{
		{"etcd", "--trusted-ca-file", b.EtcdCA.Cert},
		{"etcd", "--peer-trusted-ca-file", b.EtcdCA.Cert},
		{"etcd", "--client-cert-auth", "true"},
		{"etcd", "--peer-client-cert-auth", "true"},
		{"etcd", "--cert-file", b.EtcdServer.Cert},
		{"etcd", "--peer-cert-file", b.EtcdPeer.Cert},
		{"kube-apiserver", "--etcd-cafile", b.EtcdCA.Cert},
		{"kube-apiserver", "--etcd-certfile", b.APIServerEtcdClient.Cert},
		{"kube-apiserver", "--client-ca-file", b.CA.Cert},
		{"kube-apiserver", "--requestheader-client-ca-file", b.FrontProxyCA.Cert},
		{"kube-apiserver", "--requestheader-allowed-names", "front-proxy-client"},
		{"kube-apiserver", "--requestheader-username-headers", "X-Remote-User"},
		{"kube-apiserver", "--requestheader-group-headers", "X-Remote-Group"},
		{"kube-apiserver", "--requestheader-extra-headers-prefix", "X-Remote-Extra-"},
		{"kube-apiserver", "--proxy-client-cert-file", b.FrontProxyClient.Cert},
		{"kube-apiserver", "--proxy-client-key-file", b.FrontProxyClient.Key},
		{"kube-apiserver", "--audit-policy-file", pl.Paths.AuditPolicy()},
		{"kube-apiserver", "--audit-log-path", pl.Paths.State + "/logs/control-plane/audit.log"},
		{"kube-apiserver", "--audit-log-maxsize", "50"},
		{"kube-apiserver", "--audit-log-maxbackup", "2"},
		{"kube-controller-manager", "--requestheader-client-ca-file", b.FrontProxyCA.Cert},
		{"kube-scheduler", "--requestheader-client-ca-file", b.FrontProxyCA.Cert},
	}
	for _, tt := range tests {
		got, ok := flagValue(args[tt.component], tt.flag)
		if !ok || got != tt.want {
			t.Errorf("%s %s=%q (set %v), want %q", tt.component, tt.flag, got, ok, tt.want)
		}
	}
}

// TestKubeconfigCredentials checks who the kubeconfigs kubernix writes
// are: the user's (merged into their kubeconfig) is in the cluster-admins
// group, only the supervisor's super-admin in system:masters, and both
// are readable by their owner alone.
func TestKubeconfigCredentials(t *testing.T) {
	c := testCluster(t, 1)
	pl := c.Plan
	if err := c.writeKubeconfigs(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, cn string
		groups         []string
	}{
		{"user", state.ClientKubeconfig(pl.Paths), "kubernix-admin", []string{"kubernix:cluster-admins"}},
		{"supervisor", state.SuperAdminKubeconfig(pl.Paths), "kubernix-super-admin", []string{"system:masters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fi, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			rc, err := clientcmd.BuildConfigFromFlags("", tt.path)
			if err != nil {
				t.Fatal(err)
			}
			certs, err := cert.ParseCertsPEM(rc.CertData)
			if err != nil {
				t.Fatal(err)
			}
			if s := certs[0].Subject; s.CommonName != tt.cn || !slices.Equal(s.Organization, tt.groups) {
				t.Errorf("user %s groups %q, want %s %q", s.CommonName, s.Organization, tt.cn, tt.groups)
			}
		})
	}
}

// flagValue returns the value of --flag=value in args.
func flagValue(args []string, flag string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}
