// Package containerd is kubernix's side of a node's containerd: it renders
// containerd's config.toml (Render) and the node's CNI network (RenderCNI),
// talks CRI to a running containerd (Dial: readiness through Version, and
// RemoveAll before containerd is stopped), and imports and pins image
// tarballs with containerd's Go client (Import, List, SetLabels, Pin, Unpin)
// in the "k8s.io" namespace, where the CRI plugin and thus the kubelet see
// them.
//
// Starting and stopping the containerd process is not done here: a node runs
// the binary with the rendered config, waits for Version, and calls RemoveAll
// before it sends SIGTERM.
package containerd
