package containerd

import (
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/release"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "containerd"

// CNIConfName is the file name of the node's CNI network config in
// its CNI conf dir.
const CNIConfName = "10-kubernix.conflist"

// Spec is what a node's containerd is described from.
type Spec struct {
	// Release is the Kubernetes release the node runs: containerd's
	// sandbox image is its (Release.SandboxImage).
	Release release.Release
	// Binary is containerd's absolute path.
	Binary   string
	NodeName string
	// ConfigFile is where Config is rendered (config.toml).
	ConfigFile string
	Config     Config
	// CNI is the node's pod network, rendered into Config.CNIConfDir.
	CNI CNIConfig
	// Sandbox is the ID of the node's sandbox component, which containerd
	// runs in; "" for a node without one.
	Sandbox string
	// RuntimeWrapper, if set, is the OCI runtime wrapper script a
	// rootless node's Config.RuntimeBinary names (pkg/rootless).
	RuntimeWrapper *components.File
}

// Describe returns the node's containerd. It needs only its node's
// sandbox: it boots, and imports the built-in images, while etcd and the
// apiserver do. It is ready once its CRI answers Version; its pods are
// removed through CRI before it stops. It errors when the config or the
// CNI network does not render.
func Describe(s Spec) (components.Description, error) {
	s.Config.SandboxImage = s.Release.SandboxImage
	cfg, err := Render(s.Config)
	if err != nil {
		return components.Description{}, err
	}
	cni, err := RenderCNI(s.CNI)
	if err != nil {
		return components.Description{}, err
	}
	files := []components.File{
		{Path: filepath.Join(s.Config.CNIConfDir, CNIConfName), Content: cni},
		{Path: s.ConfigFile, Content: cfg},
	}
	if s.RuntimeWrapper != nil {
		files = append(files, *s.RuntimeWrapper)
	}
	var needs []string
	if s.Sandbox != "" {
		needs = []string{s.Sandbox}
	}
	return components.Description{
		Name: Name, Scope: s.NodeName, Kind: components.KindProcess, Phase: boot.Controller,
		Needs: needs, Binary: Name, InSandbox: true,
		Command: process.Command{Path: s.Binary, Args: []string{"--config", s.ConfigFile}},
		Files:   files,
		Dirs:    []string{s.Config.CNIConfDir, s.CNI.DataDir, s.Config.RegistryConfigPath},
		Probe:   components.Probe{CRI: s.Config.Address},
		// The kubelet stops first (it needs containerd), so nothing
		// recreates the pods.
		DrainCRI: s.Config.Address,
	}, nil
}
