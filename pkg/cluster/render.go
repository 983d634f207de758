package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/components/kubeproxy"
	"github.com/kubernix/kubernix/pkg/containerd"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/pki"
)

// NodeFiles renders everything one node runs from, as `kubernix up` would:
// containerd's config.toml, its CNI conflist, the KubeletConfiguration, the
// KubeProxyConfiguration, and the command line of each node component (one
// per line, as JSON arrays). Keys are file names. Nothing is written. The
// sandbox's PID is not known before it runs: its wrapper shows as
// <sandbox-pid>.
func NodeFiles(plan *Plan, nd *node.Node) (map[string][]byte, error) {
	c := &Cluster{Plan: plan, PKI: pki.Files(plan.PKISpec())}
	np := plan.Paths.Node(nd.Name)
	out := map[string][]byte{}
	var err error
	if out["containerd.toml"], err = containerd.Render(c.ContainerdConfig(nd)); err != nil {
		return nil, err
	}
	if out["10-kubernix.conflist"], err = containerd.RenderCNI(containerd.CNIConfig{
		Name: "kubernix", Bridge: c.CNIBridge(nd), PodCIDR: nd.PodCIDR.String(), Gateway: true, DataDir: np.CNIData(),
	}); err != nil {
		return nil, err
	}
	if out["kubelet.yaml"], err = kubelet.Render(c.kubeletSpec(nd)); err != nil {
		return nil, err
	}
	if out["kube-proxy.yaml"], err = kubeproxy.Render(c.kubeProxySpec(nd)); err != nil {
		return nil, err
	}
	var argv bytes.Buffer
	comps, err := c.nodeComponents(nd)
	if err != nil {
		return nil, err
	}
	for _, comp := range comps {
		proc, ok := component.Unwrap(comp).(*components.Proc)
		if !ok {
			continue
		}
		cmd := proc.Command
		if proc.Wrap != nil {
			if ctr, ok := nd.Exec.(*node.Container); ok {
				cmd.Wrapper = []string{ctr.Nsenter, "--target", "<sandbox-pid>", "--net", "--mount", "--uts", "--"}
			}
		}
		fmt.Fprintf(&argv, "%s: ", proc.Name())
		enc := json.NewEncoder(&argv)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(cmd.Argv()); err != nil {
			return nil, err
		}
	}
	out["commands.txt"] = argv.Bytes()
	return out, nil
}

// Placeholders replaces the machine-specific paths in rendered text with
// names, for golden files: each pair is (path, placeholder).
func Placeholders(b []byte, pairs ...string) []byte {
	s := string(b)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
	}
	return []byte(s)
}
