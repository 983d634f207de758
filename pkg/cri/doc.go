// Package cri is a client of a node's container runtime through the
// Kubernetes Container Runtime Interface (k8s.io/cri-api, v1): Dial and
// DialReady connect to the runtime's socket, Ping tells whether its CRI
// plugin serves (Version), and Client.RemoveAll removes the node's pod
// sandboxes and containers before the runtime is stopped.
//
// It speaks CRI only; what is specific to containerd (its config.toml, the
// CNI network, image import with containerd's Go client) belongs to the
// containerd component, pkg/components/containerd.
package cri
