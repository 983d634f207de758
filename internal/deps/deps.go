// Package deps anchors modules in go.mod that packages under construction use.
// It is removed once they import these themselves.
package deps

import (
	_ "github.com/containerd/containerd/v2/client"
	_ "github.com/coreos/go-iptables/iptables"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
	_ "github.com/vishvananda/netlink"
	_ "google.golang.org/grpc"
	_ "k8s.io/apiserver/pkg/apis/apiserver/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "k8s.io/kube-proxy/config/v1alpha1"
	_ "k8s.io/kubelet/config/v1beta1"
	_ "sigs.k8s.io/yaml"
)
