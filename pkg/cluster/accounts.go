package cluster

import (
	"context"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerAccountsPrefix names the ClusterRoleBindings of the
// controller-manager's controllers in the apiserver's bootstrap RBAC policy
// (system:controller:<controller>), each bound to a service account of
// that name in kube-system.
const controllerAccountsPrefix = "system:controller:"

// makeControllerAccounts is the controller-accounts task: it creates, as soon as the apiserver
// is ready, the service accounts that the bootstrap policy binds the
// controllers' roles to. The controller-manager (with
// --use-service-account-credentials) creates each itself, one after the
// other, before any controller runs; made beforehand, in parallel, they
// are only read. Nothing fails the boot here: what is not made, the
// controller-manager still makes.
func (c *Cluster) makeControllerAccounts(ctx context.Context) error {
	names, err := c.controllerAccounts(ctx)
	if err != nil {
		c.Log.Debug("controller service accounts not made in advance", "err", err)
	}
	var g errgroup.Group
	g.SetLimit(8)
	for _, name := range names {
		g.Go(func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}}
			_, err := c.client.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Create(ctx, sa, metav1.CreateOptions{FieldManager: "kubernix"})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				c.Log.Debug("controller service account not made in advance", "name", name, "err", err)
			}
			return nil // not fatal: the controller-manager makes what is missing
		})
	}
	_ = g.Wait()
	return nil
}

// controllerAccounts lists the kube-system service accounts bound by the controllers'
// bootstrap ClusterRoleBindings.
func (c *Cluster) controllerAccounts(ctx context.Context) ([]string, error) {
	crbs, err := c.client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return controllerAccountNames(crbs.Items), nil
}

// controllerAccountNames returns the kube-system service accounts that the
// bindings named with controllerAccountsPrefix bind, each once, in order.
func controllerAccountNames(crbs []rbacv1.ClusterRoleBinding) []string {
	var out []string
	seen := map[string]bool{}
	for _, crb := range crbs {
		if !strings.HasPrefix(crb.Name, controllerAccountsPrefix) {
			continue
		}
		for _, s := range crb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == metav1.NamespaceSystem && !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s.Name)
			}
		}
	}
	return out
}
