package state

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/node"
)

// DamagedError is the error of LoadRecorded and LoadCluster for a cluster
// whose record, its kubernix.toml, cannot be read: the file does not load,
// or (LoadCluster) it is missing while the cluster is still on the host.
// With it they return the config Recover makes from the state dir's other
// records, which down, delete and list work from; the README's "When a
// record is damaged" says what that covers.
type DamagedError struct {
	// File is the record, <state>/kubernix.toml.
	File string
	// Err is why it cannot be read: the error of loading it (it wraps
	// config.ErrInvalid), or errRecordMissing.
	Err error
}

// errRecordMissing is DamagedError.Err for a record that is missing.
var errRecordMissing = errors.New("it is missing, but the cluster's processes or claims remain on the host")

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the cluster's record %s cannot be read: %s", e.File, oneLine(e.Err))
}

// Missing reports whether the record is missing rather than unreadable.
func (e *DamagedError) Missing() bool { return errors.Is(e.Err, errRecordMissing) }

// Unwrap returns Err.
func (e *DamagedError) Unwrap() error { return e.Err }

// oneLine is err's message with its lines joined by "; " (config.Load's
// errors put each problem on a line of its own).
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, strings.TrimSuffix(l, ":"))
		}
	}
	return strings.Join(parts, ": ")
}

// LoadCluster is LoadRecorded for the verbs that find a cluster (down,
// delete, list): a record that is missing while the state dir is
// kubernix's (config.StateMarker) and the cluster is still on the host
// (its supervisor runs, or processes, mounts or claims of it remain; see
// Inspect) is a *DamagedError too, returned with the config of Recover.
// Other errors are LoadRecorded's.
func LoadCluster(stateDir string) (config.Config, error) {
	cfg, err := LoadRecorded(stateDir)
	if !errors.Is(err, os.ErrNotExist) {
		return cfg, err
	}
	p := config.Paths{State: stateDir}
	if !fileinfo.Exists(p.Marker()) {
		return cfg, err
	}
	name := RecordedName(p)
	if _, ok := Running(p); !ok && len(remains(p, name)) == 0 {
		return cfg, err
	}
	return Recover(stateDir, name), &DamagedError{File: p.ConfigFile(), Err: errRecordMissing}
}

// RecordedName returns the cluster name that the records in the state
// dir p, other than its kubernix.toml, give: the name claim (NamesDir)
// that names p, else the current context of the admin kubeconfig that
// every up writes (kubernix-<name>, Config.ContextName); "" when neither
// does.
func RecordedName(p config.Paths) string {
	entries, _ := os.ReadDir(NamesDir)
	for _, e := range entries {
		if d, err := readRecord(filepath.Join(NamesDir, e.Name())); err == nil && d == p.State {
			return e.Name()
		}
	}
	kc, err := clientcmd.LoadFromFile(p.Kubeconfig("admin"))
	if err != nil {
		return ""
	}
	name, ok := strings.CutPrefix(kc.CurrentContext, "kubernix-")
	if !ok || len(validation.IsDNS1123Label(name)) > 0 {
		return ""
	}
	return name
}

// Recover returns the config of the cluster named name in stateDir as the
// state dir's records other than kubernix.toml give it, for bringing down
// a cluster whose record is damaged: plan.New of it is what Cleanup and
// Leftovers work from, and Cleanup also stops every live process recorded
// under <state>/run, whether the plan describes it or not. It holds the
// defaults, and:
//   - Name and StateDir;
//   - a node for each directory in <state>/nodes named <name>-<suffix>,
//     with that suffix as its name (config.NodeSpec), in name order;
//   - executor process when no node has a sandbox run dir, else container;
//   - CgroupParent, the parent of the cgroupRoot in the first node's
//     kubelet config that names one (the cgroup is the kubelet's).
//
// The network, mounts, claims, sysctl ledger and kubeconfig context need
// no more: the network is named after the cluster (network.Teardown), and
// the rest is recorded where Cleanup finds it. name "" finds no nodes.
func Recover(stateDir, name string) config.Config {
	cfg := config.Default()
	cfg.Name, cfg.StateDir = name, stateDir
	p := cfg.Paths()
	cfg.Executor = config.ExecutorProcess
	cfg.NodeSpecs = nil
	for _, n := range recordedNodes(p, name) {
		cfg.NodeSpecs = append(cfg.NodeSpecs, config.NodeSpec{Name: strings.TrimPrefix(n, name+"-")})
		if fileinfo.Exists(p.Run(n, node.SandboxName)) {
			cfg.Executor = config.ExecutorContainer
		}
		if cfg.CgroupParent == "" {
			cfg.CgroupParent = kubeletCgroupParent(p.Node(n).KubeletConfig(), n)
		}
	}
	cfg.Nodes = len(cfg.NodeSpecs)
	cfg.Resolve()
	return cfg
}

// recordedNodes lists, sorted, the directories in <state>/nodes named
// <name>-<suffix>: the nodes some up of the cluster named name made.
func recordedNodes(p config.Paths, name string) []string {
	if name == "" {
		return nil
	}
	entries, _ := os.ReadDir(filepath.Join(p.State, "nodes"))
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), name+"-") && len(e.Name()) > len(name)+1 {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// kubeletCgroupParent returns the parent of the cgroupRoot in the kubelet
// config file when that cgroup is the node's own (<parent>/<nodeName>),
// "" otherwise (no file, or one that does not parse).
func kubeletCgroupParent(file, nodeName string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	var kc kubeletv1beta1.KubeletConfiguration
	if err := yaml.Unmarshal(b, &kc); err != nil || path.Base(kc.CgroupRoot) != nodeName || !path.IsAbs(kc.CgroupRoot) {
		return ""
	}
	return path.Dir(kc.CgroupRoot)
}

// RunDirs lists the run dirs recorded in the state dir p, the
// directories <state>/run/<scope>/<name>, sorted, without the
// supervisor's scope (SupervisorScope: the supervisor and rootlesskit).
func RunDirs(p config.Paths) []string {
	return slices.DeleteFunc(runDirs(p), func(d string) bool {
		st, err := os.Stat(d)
		return err != nil || !st.IsDir() || filepath.Base(filepath.Dir(d)) == SupervisorScope
	})
}
