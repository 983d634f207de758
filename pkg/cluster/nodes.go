package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/images"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// Image labels kubernix sets on the images it imports.
const (
	// LabelBuiltinID records the config digest of the built-in image
	// tarball an image was imported from.
	LabelBuiltinID = "io.kubernix.builtin-id"
	// LabelSource records the file an image was imported from.
	LabelSource = "io.kubernix.source"
)

// nodeFailed handles a node whose containerd keeps dying: it records the
// failure for `kubernix status` and stops the node's agents (kubelet,
// kube-proxy and, with network_policy, netpol-agent), so nothing of the
// node runs half-alive. The rest of the cluster stays up.
func (c *Cluster) nodeFailed(nd *node.Node, reason error) {
	c.Log.Error("node failed: stopping its node agents (kubelet, kube-proxy, netpol-agent)", "node", nd.Name, "err", reason)
	_ = state.WriteFile(state.FailedFile(c.Plan.Paths, nd.Name), []byte(reason.Error()+"\n"))
	c.mu.Lock()
	agents := c.agents[nd.Name]
	c.mu.Unlock()
	for _, a := range agents {
		if err := a.Stop(context.Background()); err != nil {
			c.Log.Warn("stopping node agent", "node", nd.Name, "err", err)
		}
	}
}

// importBuiltins imports the built-in image tarballs the boot needs
// (not those of bootSkips), pinned. An image already in the node's store
// from the same tarball (its config digest recorded in LabelBuiltinID) is
// not imported again, so a warm up or a containerd restart skips the
// work.
func (c *Cluster) importBuiltins(ctx context.Context, nd *node.Node) error {
	tars, err := filepath.Glob(filepath.Join(c.Plan.ImagesDir, "*.tar"))
	if err != nil {
		return err
	}
	if len(tars) == 0 {
		return fmt.Errorf("no built-in images in %s: run `make images`", c.Plan.ImagesDir)
	}
	skip := bootSkips(addons.Table, c.Plan.Cfg)
	var files []string
	for _, t := range tars {
		if !skip[filepath.Base(t)] {
			files = append(files, filepath.Base(t))
		}
	}
	return c.importBuiltinFiles(ctx, nd, files)
}

// importBuiltinFiles imports the built-in image tarballs named (file
// names in the images dir), in name order, pinned, as importBuiltins
// says. A missing tarball is an error.
func (c *Cluster) importBuiltinFiles(ctx context.Context, nd *node.Node, files []string) error {
	target := c.containerdTarget(nd)
	files = slices.Sorted(slices.Values(files))
	have := map[string]string{} // ref -> built-in ID label
	present, err := containerd.List(ctx, target.Socket)
	if err != nil {
		return err
	}
	for _, img := range present {
		have[img.Ref] = img.Labels[LabelBuiltinID]
	}
	for _, f := range files {
		t := filepath.Join(c.Plan.ImagesDir, f)
		info, err := images.Inspect(t)
		if err == nil && len(info.Tags) > 0 && allHave(have, info.Tags, info.ID) {
			c.Log.Debug("built-in image already imported", "file", t, "id", info.ID)
			continue
		}
		labels := map[string]string{containerd.LabelPinned: "pinned", LabelSource: "builtin:" + f}
		if err == nil {
			labels[LabelBuiltinID] = info.ID
		}
		imgs, err := c.importer.Import(ctx, target, t, containerd.ImportOptions{Labels: labels})
		if err != nil {
			return err
		}
		for _, img := range imgs {
			c.Log.Debug("imported built-in image", "ref", img.Ref, "digest", img.Digest)
		}
	}
	return nil
}

// bootSkips names the tarballs (images.Builtin.FileName) of the built-in
// images the nodes need not import while the cluster boots, given the
// addon table (addons.Table): those that
// only opt-in addons (not addons.Addon.Default) run, none of them enabled
// in cfg (traefik's, without the ingress addon), and those that only
// after-Ready addons run (addons.Addon.AfterReady), which import them
// themselves once the cluster is Ready (traefik's, with it). The other
// default addons' images are imported even when cfg leaves those addons
// out: pods of the user's may run them (busybox, agnhost), as kind's node
// image holds its images.
func bootSkips(table []addons.Addon, cfg config.Config) map[string]bool {
	skip := map[string]bool{}
	atBoot := func(a addons.Addon) bool { return !a.AfterReady && (a.Default || cfg.HasAddon(a.Name)) }
	for _, a := range table {
		if !atBoot(a) {
			for _, name := range a.Images {
				skip[images.Builtin{Name: name}.FileName()] = true
			}
		}
	}
	for _, a := range table {
		if atBoot(a) {
			for _, name := range a.Images {
				delete(skip, images.Builtin{Name: name}.FileName())
			}
		}
	}
	return skip
}

// containerdTarget is how the supervisor reaches nd's containerd to import
// images.
func (c *Cluster) containerdTarget(nd *node.Node) containerd.Target {
	np := c.Plan.Paths.Node(nd.Name)
	return containerd.Target{Socket: np.ContainerdSocket(), Root: np.ContainerdRoot()}
}

// allHave reports whether every ref is present with built-in ID id.
func allHave(have map[string]string, refs []string, id string) bool {
	for _, r := range refs {
		if have[r] != id {
			return false
		}
	}
	return true
}

// registerBackoff spaces the attempts to register a node while the
// apiserver is still starting: 12 attempts, 100 ms apart growing by half
// each time, about 17 s in all. (A Cap would end the backoff once
// reached: wait.Backoff.Step.)
var registerBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 1.5, Steps: 12}

// isTransient tells errors of an apiserver that is starting (connection
// refused, 429, 5xx, timeouts) from final ones.
func isTransient(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsUnexpectedServerError(err)
}

// specPodCIDRs are n's pod CIDRs: spec.podCIDRs, or spec.podCIDR alone
// (the apiserver fills both; a Node of another source may not).
func specPodCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return n.Spec.PodCIDRs
}

// registerNode creates the Node object with its pod CIDR before the kubelet
// starts (the kubelet adopts it), so each node's pod CIDR is the one
// kubernix routed and rendered into its CNI config; the controller-manager's
// allocator respects pre-set CIDRs. The Node gets the labels and taints of
// its [[nodes]] entry (applyNodeSpec), also when it exists from an earlier
// up: the kubelet's own --node-labels and registerWithTaints only apply
// when it creates the Node itself, and it may not set labels in the
// kubernetes.io and k8s.io namespaces (such as node-role.kubernetes.io/*),
// which kubernix, as the cluster's admin, may.
func (c *Cluster) registerNode(ctx context.Context, nd *node.Node) error {
	spec := c.Plan.Cfg.NodeSpec(nd.Index)
	var podCIDRs []string
	for _, p := range nd.PodCIDRs {
		podCIDRs = append(podCIDRs, p.String())
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nd.Name},
		Spec:       corev1.NodeSpec{PodCIDR: nd.PodCIDRs[0].String(), PodCIDRs: podCIDRs},
	}
	applyNodeSpec(n, spec.Labels, plan.NodeTaints(spec))
	n.Labels["kubernetes.io/hostname"] = nd.Name
	n.Labels["kubernix.io/cluster"] = c.Plan.Cfg.Name
	created, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: "kubernix"})
	if err == nil {
		// The addresses the kubelet will post (its --node-ip and
		// hostname), now: kube-proxy waits for them, polling each second.
		for _, ip := range nd.IPs {
			created.Status.Addresses = append(created.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
		}
		created.Status.Addresses = append(created.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: nd.Name})
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kubernix"}); err != nil {
			c.Log.Debug("node addresses not set", "node", nd.Name, "err", err)
		}
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var existing *corev1.Node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if existing, err = c.client.CoreV1().Nodes().Get(ctx, nd.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		if have := specPodCIDRs(existing); len(have) > 0 && !slices.Equal(have, podCIDRs) {
			return fmt.Errorf("node %s has pod CIDRs %s, want %s: delete the node or the cluster's state", nd.Name, strings.Join(have, ","), strings.Join(podCIDRs, ","))
		}
		if !applyNodeSpec(existing, spec.Labels, plan.NodeTaints(spec)) {
			return nil
		}
		updated, err := c.client.CoreV1().Nodes().Update(ctx, existing, metav1.UpdateOptions{FieldManager: "kubernix"})
		if err == nil {
			existing = updated
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: %w", nd.Name, err)
	}
	c.markNodeUnknown(ctx, existing)
	return nil
}

// deleteStaleNodes deletes the Nodes of this cluster (label
// kubernix.io/cluster) that the plan no longer has, as after `up --nodes
// 1` of a cluster that had 3, and force-deletes the pods bound to them:
// nothing runs them any more, and the scheduler and the ReplicaSets would
// otherwise count on them until the node lifecycle and pod GC controllers
// noticed, a minute later.
func (c *Cluster) deleteStaleNodes(ctx context.Context) error {
	want := map[string]bool{}
	for _, nd := range c.Plan.Nodes {
		want[nd.Name] = true
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "kubernix.io/cluster=" + c.Plan.Cfg.Name})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for _, n := range nodes.Items {
		if want[n.Name] {
			continue
		}
		c.Log.Info("deleting a node this cluster no longer has", "node", n.Name)
		pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		if err != nil {
			errs = append(errs, fmt.Errorf("list pods of node %s: %w", n.Name, err))
			continue
		}
		for _, pod := range pods.Items {
			if pod.Spec.NodeName != n.Name {
				continue // a server that ignored the field selector
			}
			err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
		}
		if err := c.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// markNodeUnknown sets the Ready condition of a Node that etcd still holds
// from the previous run to Unknown, as the node lifecycle controller does
// when a kubelet stops posting status. The starting kubelet then sees its
// node not ready and posts its status as soon as it is (the kubelet's fast
// status update); a stale Ready=True would make it wait for its periodic
// update instead.
func (c *Cluster) markNodeUnknown(ctx context.Context, n *corev1.Node) {
	for i, cond := range n.Status.Conditions {
		if cond.Type != corev1.NodeReady || cond.Status != corev1.ConditionTrue {
			continue
		}
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
		n.Status.Conditions[i].Message = "kubernix: the kubelet is starting"
		n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		// Only a speed-up: a conflicting write (the node lifecycle
		// controller's) is left to the kubelet's periodic update.
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{FieldManager: "kubernix"}); err != nil {
			c.Log.Debug("node status not reset", "node", n.Name, "err", err)
		}
	}
}

// nodeReady returns nil once the Node's Ready condition is True in a status
// the kubelet posted at or after since (its start, to the second): on a
// restart, etcd still holds the previous kubelet's Ready=True.
func (c *Cluster) nodeReady(ctx context.Context, name string, since time.Time) error {
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.LastHeartbeatTime.Time.Before(since) {
				return fmt.Errorf("node %s: no status from the new kubelet yet", name)
			}
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s not Ready: %s", name, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}
