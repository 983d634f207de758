// Package containerd is a node's containerd, its container runtime. It
// describes the component (Describe: the containerd process with its
// config.toml and the node's CNI network, the CRI readiness check, and the
// removal of the node's pods through CRI before it stops), renders those
// files (Render, RenderCNI, Patch), and imports and pins image tarballs with
// containerd's Go client (Importer, Import, List, SetLabels, Pin, Unpin) in
// the "k8s.io" namespace, where the CRI plugin and thus the kubelet see them.
//
// The CRI client itself is pkg/cri. Starting and stopping the process is
// pkg/process's: a node runs the binary with the rendered config, waits for
// CRI Version, and removes its pods before it sends SIGTERM.
package containerd
