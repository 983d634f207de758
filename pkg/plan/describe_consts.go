package plan

import "github.com/kubernix/kubernix/pkg/pki"

// ContainerdGiveUpAfter is how many failures in a row (exits, hangs,
// failed restarts, without a minute of stable running in between) of a
// node's containerd make the node failed: the first and six more, about
// 30 s of backoff (components.DefaultRestart), as many as before the
// control plane was restarted for ever.
const ContainerdGiveUpAfter = 7

// ClusterAdminsBinding names the ClusterRoleBinding that gives the admin
// credential's group (pki.ClusterAdminsGroup) the cluster-admin role, as
// kubeadm's kubeadm:cluster-admins does (k8s.io/kubernetes
// cmd/kubeadm/app/phases/kubeconfig: EnsureAdminClusterRoleBinding).
const ClusterAdminsBinding = pki.ClusterAdminsGroup

// KubeletAPIAdminBinding names the ClusterRoleBinding that lets the
// apiserver's kubelet client (pki.APIServerKubeletClientName, no longer in
// system:masters) use the kubelet API for logs, exec and port-forward, as
// kubeadm's kubeadm:kubelet-api-admin does.
const KubeletAPIAdminBinding = "kubernix:kubelet-api-admin"

// CloudControllerBinding names the ClusterRoleBinding that gives the cloud
// controller (pki.CloudControllerName) the upstream service controller's
// ClusterRole, system:controller:service-controller (Services and their
// status, Nodes, Events).
const CloudControllerBinding = pki.CloudControllerName

// NetpolAgentRole names the ClusterRole of the nodes' NetworkPolicy agents
// (pki.NetpolAgentName): get, list and watch pods, namespaces and
// networkpolicies; NetpolAgentBinding, of the same name, binds it.
const (
	NetpolAgentRole    = pki.NetpolAgentName
	NetpolAgentBinding = pki.NetpolAgentName
)
