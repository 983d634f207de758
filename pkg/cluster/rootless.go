package cluster

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// RootlessState is what <state>/rootless.json records of a cluster that
// runs rootless: `kubernix up` as an ordinary user writes it before starting
// rootlesskit, and its presence is what makes a plan rootless (Plan.Rootless)
// for the components inside and for down, status and env outside.
type RootlessState struct {
	// UID is the user who runs the cluster.
	UID int `json:"uid"`
	// RootlesskitStateDir is rootlesskit's --state-dir.
	RootlesskitStateDir string `json:"rootlesskit_state_dir"`
	// HostAPIServer is where the apiserver answers on the host: the host
	// side of rootlesskit's port forward, 127.0.0.1:<port>.
	HostAPIServer netip.AddrPort `json:"host_apiserver"`
}

// RootlessFile is where RootlessState is recorded.
func RootlessFile(paths config.Paths) string { return filepath.Join(paths.State, "rootless.json") }

// ReadRootless returns the recorded RootlessState; ok is false for a
// cluster that runs as root (no record).
func ReadRootless(paths config.Paths) (st RootlessState, ok bool) {
	b, err := os.ReadFile(RootlessFile(paths))
	if err != nil {
		return st, false
	}
	return st, json.Unmarshal(b, &st) == nil
}

// WriteRootless records st for the cluster at paths.
func WriteRootless(paths config.Paths, st RootlessState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(RootlessFile(paths), append(b, '\n'))
}

// ClearRootless removes the record, as a cluster started as root does.
func ClearRootless(paths config.Paths) error {
	err := os.Remove(RootlessFile(paths))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// RootlesskitScope and RootlesskitName locate the run dir recording the
// rootlesskit process of a rootless cluster (beside the supervisor's).
const (
	RootlesskitScope = SupervisorScope
	RootlesskitName  = "rootlesskit"
)

// outside reports whether the plan is of a rootless cluster seen from the
// host, outside rootlesskit's namespaces: its network links, iptables
// rules and mounts are not visible from here and vanish with the
// namespaces.
func (p *Plan) outside() bool { return p.Rootless && !host.InUserNamespace() }

// WrapperPath is where the OCI runtime wrapper script of a rootless
// cluster is rendered.
func (p *Plan) WrapperPath() string {
	return filepath.Join(p.Paths.State, "bin", rootless.WrapperName)
}

// HostKubeconfig is the admin kubeconfig of a rootless cluster for clients
// on the host: its server is the host side of rootlesskit's port forward,
// https://127.0.0.1:<port> (127.0.0.1 is among the apiserver's SANs), as
// the bridge address exists only in the namespace.
func HostKubeconfig(paths config.Paths) string { return paths.Kubeconfig("admin-host") }

// ClientKubeconfig is the admin kubeconfig a client on the host uses:
// HostKubeconfig for a rootless cluster, else the admin kubeconfig.
func ClientKubeconfig(paths config.Paths) string {
	if _, ok := ReadRootless(paths); ok {
		return HostKubeconfig(paths)
	}
	return paths.Kubeconfig("admin")
}
