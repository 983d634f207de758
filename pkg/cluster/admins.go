package cluster

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan"
)

// applyAdminBindings is the cluster-admins task: it applies, as the super-admin, the
// ClusterRoleBindings the cluster's own credentials rely on:
// ClusterAdminsBinding, KubeletAPIAdminBinding, CloudControllerBinding and
// NetpolAgentBinding, and the ClusterRole NetpolAgentRole.
// It is ready once they exist, so the admin context merged into the user's kubeconfig works as
// soon as up returns. Server-side apply with force makes a binding whose
// subjects were edited right again at every up.
func (c *Cluster) applyAdminBindings(ctx context.Context) error {
	var g errgroup.Group
	role := netpolAgentRole()
	g.Go(func() error {
		err := retry.OnError(retry.DefaultBackoff, isTransient, func() error {
			_, err := c.client.RbacV1().ClusterRoles().Apply(ctx, role, metav1.ApplyOptions{FieldManager: "kubernix", Force: true})
			return err
		})
		if err != nil {
			return fmt.Errorf("ClusterRole %s: %w", *role.Name, err)
		}
		return nil
	})
	for _, crb := range adminBindings() {
		g.Go(func() error {
			err := retry.OnError(retry.DefaultBackoff, isTransient, func() error {
				_, err := c.client.RbacV1().ClusterRoleBindings().Apply(ctx, crb,
					metav1.ApplyOptions{FieldManager: "kubernix", Force: true})
				return err
			})
			if err != nil {
				return fmt.Errorf("ClusterRoleBinding %s: %w", *crb.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// adminBindings are the ClusterRoleBindings clusterAdmins applies.
func adminBindings() []*rbacv1ac.ClusterRoleBindingApplyConfiguration {
	bind := func(name, role, kind, subject string) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
		return rbacv1ac.ClusterRoleBinding(name).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "kubernix"}).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role)).
			WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(kind).WithName(subject))
	}
	return []*rbacv1ac.ClusterRoleBindingApplyConfiguration{
		bind(plan.ClusterAdminsBinding, "cluster-admin", rbacv1.GroupKind, pki.ClusterAdminsGroup),
		bind(plan.KubeletAPIAdminBinding, "system:kubelet-api-admin", rbacv1.UserKind, pki.APIServerKubeletClientName),
		bind(plan.CloudControllerBinding, "system:controller:service-controller", rbacv1.UserKind, pki.CloudControllerName),
		bind(plan.NetpolAgentBinding, plan.NetpolAgentRole, rbacv1.UserKind, pki.NetpolAgentName),
	}
}

// netpolAgentRole is the ClusterRole of the nodes' NetworkPolicy agents
// (pkg/netpol): they read the pods, namespaces and NetworkPolicies the
// tables are compiled from.
func netpolAgentRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	read := []string{"get", "list", "watch"}
	return rbacv1ac.ClusterRole(plan.NetpolAgentRole).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "kubernix"}).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods", "namespaces").WithVerbs(read...),
			rbacv1ac.PolicyRule().WithAPIGroups("networking.k8s.io").WithResources("networkpolicies").WithVerbs(read...),
		)
}
