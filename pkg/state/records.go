// Package state reads and writes what a cluster keeps on disk and in
// /run: the state dir's lock, the inventory of state dirs, the records
// of a run (supervisor and rootlesskit run dirs, the rootless record,
// timings, failed nodes, the user's kubeconfig entry) and the host-wide
// name claims, so that list, status and down work offline, also after
// the supervisor was killed.
package state

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

// Running reports the PID of the cluster's live supervisor, if any.
func Running(paths config.Paths) (int, bool) {
	return process.Running(SupervisorRunDir(paths))
}

// SupervisorRunDir is the run dir recording the cluster's supervisor.
func SupervisorRunDir(paths config.Paths) string { return paths.Run(SupervisorScope, SupervisorName) }

// Timings are the boot timings the supervisor records in
// <state>/supervisor/timings.json, for `kubernix status --timings` and
// `make bench`.
type Timings struct {
	// Prepare is the host preparation before the first component: network,
	// PKI, kubeconfigs.
	Prepare time.Duration `json:"prepare_ns"`
	// Phases maps a phase name to its wall time.
	Phases map[string]time.Duration `json:"phases_ns"`
	// Components are the per-component start and ready times.
	Components []boot.Timing `json:"components"`
	// Total is the time Up took.
	Total time.Duration `json:"total_ns"`
}

// TimingsFile is where the supervisor records Timings.
func TimingsFile(paths config.Paths) string {
	return filepath.Join(paths.Run(SupervisorScope, SupervisorName), "timings.json")
}

// ReadTimings reads the timings of the last successful up.
func ReadTimings(paths config.Paths) (Timings, error) {
	var t Timings
	b, err := os.ReadFile(TimingsFile(paths))
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal(b, &t)
}

// NamesDir holds one file per cluster name in use on this host (root
// mode), holding the state dir of the cluster that uses it. Host-wide
// resources (the bridge, iptables chains, cgroups) are named after the
// cluster name, so two clusters of one name would tear each other down.
const NamesDir = config.RunDir + "/names"

// NameFile is the claim file of cluster name under NamesDir.
func NameFile(name string) string { return filepath.Join(NamesDir, name) }

// HostNamespacesFile names the state dir of the one cluster whose node
// runs in the host's namespaces (--executor process, as root). Its
// kube-proxy's nftables tables and its kubelet's device plugin directory
// have fixed names there, so a second such cluster, or a kube-proxy of
// other software (k3s, kubeadm), would share them and break both.
const HostNamespacesFile = config.RunDir + "/host-namespaces"

// NameHolder returns the state dir that claims cluster name (NameFile),
// "" when none does or the claim holds no absolute path.
func NameHolder(name string) string {
	dir, _ := readRecord(NameFile(name))
	return dir
}

// HostNamespacesHolder returns the state dir recorded in
// HostNamespacesFile, "" when there is none.
func HostNamespacesHolder() string {
	dir, _ := readRecord(HostNamespacesFile)
	return dir
}

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
	return WriteFile(RootlessFile(paths), append(b, '\n'))
}

// ClearRootless removes the record, as a cluster started as root does.
func ClearRootless(paths config.Paths) error {
	err := os.Remove(RootlessFile(paths))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
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

// FailedFile marks a node given up on; it holds the reason.
func FailedFile(paths config.Paths, nodeName string) string {
	return filepath.Join(paths.Run(nodeName, ""), "failed")
}

// WriteFile writes data to path atomically, readable by its owner alone
// (config.StateFileMode), creating its directory (config.StateDirMode):
// every record of the cluster's (kubernix.toml, cluster.toml,
// rootless.json, claims) is written here.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		return err
	}
	return atomicfile.Write(path, data, config.StateFileMode)
}

// UserKubeconfig is what <state>/user-kubeconfig.json records: the user's
// kubeconfig that up merges the cluster's context into, so that Cleanup
// removes it from that same file whatever the environment of `down` (sudo
// or not, $KUBECONFIG, $HOME), also after the supervisor was killed.
type UserKubeconfig struct {
	// Path is the kubeconfig file (kubeconfig.Target.Path).
	Path string `json:"path"`
}

// UserKubeconfigFile is where UserKubeconfig is recorded.
func UserKubeconfigFile(paths config.Paths) string {
	return filepath.Join(paths.State, "user-kubeconfig.json")
}

// WriteJSON records v as indented JSON at path.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(b, '\n'))
}

// RemoveIfExists removes path; a missing path is not an error.
func RemoveIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SuperAdmin names the kubeconfig of the super-admin credential
// (pki.Bundle.SuperAdmin, system:masters): the supervisor's own, for the
// boot before RBAC has bindings. It stays in the state dir (0600) and is
// never merged into the user's kubeconfig, which gets the admin's.
const SuperAdmin = "super-admin"

// SuperAdminKubeconfig is the path of the super-admin kubeconfig.
func SuperAdminKubeconfig(paths config.Paths) string { return paths.Kubeconfig(SuperAdmin) }

// DownRequestedFile is the file `kubernix down` writes before it asks a
// live supervisor to bring the cluster down: a foreground up that then
// ends leaves deleting its ephemeral cluster (config.Config.Ephemeral)
// to that down, which waits for it, instead of deleting the state dir
// the down is about to lock.
func DownRequestedFile(paths config.Paths) string {
	return filepath.Join(paths.Run(SupervisorScope, ""), "down-requested")
}

// AfterReadyRunDir is where the supervisor records the deployment of
// addon name, one it deploys once the cluster is Ready
// (addons.Addon.AfterReady), as a components.Supervision: starting while
// it deploys, running once deployed, failed with the error. `kubernix
// status` reads it.
func AfterReadyRunDir(paths config.Paths, name string) string {
	return paths.Run(config.ControlPlaneScope, name)
}

// SupervisorScope and SupervisorName locate the supervisor's own run dir.
const (
	SupervisorScope = "supervisor"
	SupervisorName  = "kubernix"
)

// RootlesskitScope and RootlesskitName locate the run dir recording the
// rootlesskit process of a rootless cluster (beside the supervisor's).
const (
	RootlesskitScope = SupervisorScope
	RootlesskitName  = "rootlesskit"
)
