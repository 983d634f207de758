package state

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/release"
)

// State is what `kubernix list` says of a cluster, decided from its state
// dir and the host alone (Inspect): no apiserver is asked, no binary run.
type State string

// The states of a cluster.
const (
	// StateRunning: its supervisor is alive (Running) and has given up
	// on none of its components or nodes.
	StateRunning State = "running"
	// StateStopped: no supervisor, and nothing of the cluster left on the
	// host: no live process recorded in its state dir (<state>/run), no
	// mount below its state dir, no claim of its name (NamesDir) or of the
	// host's namespaces (HostNamespacesFile). What `kubernix down` leaves.
	StateStopped State = "stopped"
	// StateBroken: no supervisor but some of the above remains (a
	// SIGKILLed supervisor leaves its components, mounts and network); or
	// a live supervisor that gave up on a component (its supervision
	// record says components.StateFailed) or a node (FailedFile); or a
	// record (kubernix.toml) that cannot be read (DamagedError).
	// `kubernix down` (or `delete`) brings it to stopped, except for a
	// damaged record: down removes what the cluster put on the host, and
	// the record stays broken until it is fixed or removed (or `delete`).
	StateBroken State = "broken"
)

// IndexDirName is the directory, in the state root (config.StateRoot),
// of the index of state dirs: `up` records there every state dir it
// claims, default or --state-dir, so that `list` finds clusters outside
// the state root too; `delete` removes the entry.
const IndexDirName = ".clusters"

// Inventory finds the clusters of one user on this host (Find). The zero
// value finds none; DefaultInventory is the calling user's.
type Inventory struct {
	// Root is the state root (config.StateRoot): its subdirectories that
	// hold a kubernix.toml are clusters, and Root/IndexDirName is the
	// index.
	Root string
	// Names is NamesDir for root, whose running clusters' names it
	// records (a cluster started by a kubernix older than the index
	// is found there too), "" for an ordinary user.
	Names string
}

// DefaultInventory is the inventory of the calling user: root's clusters
// as root, else the user's rootless clusters.
func DefaultInventory() Inventory {
	inv := Inventory{Root: config.StateRoot()}
	if os.Geteuid() == 0 {
		inv.Names = NamesDir
	}
	return inv
}

// IndexDir is the index of state dirs: one file per state dir, named by
// indexKey of its path and holding the path and a newline.
func (inv Inventory) IndexDir() string { return filepath.Join(inv.Root, IndexDirName) }

// indexKey names the index entry of stateDir (absolute, as Config.Resolve
// makes it): the first 16 hex digits of the SHA-256 of the path.
func indexKey(stateDir string) string {
	h := sha256.Sum256([]byte(stateDir))
	return hex.EncodeToString(h[:8])
}

// IndexEntry is the index file of stateDir.
func (inv Inventory) IndexEntry(stateDir string) string {
	return filepath.Join(inv.IndexDir(), indexKey(stateDir))
}

// Record adds stateDir (absolute) to the index, creating the index dir
// (0755) if need be. Recording a state dir again changes nothing.
func (inv Inventory) Record(stateDir string) error {
	if err := os.MkdirAll(inv.IndexDir(), 0o755); err != nil {
		return fmt.Errorf("record the state dir in the cluster index: %w", err)
	}
	if err := WriteFile(inv.IndexEntry(stateDir), []byte(stateDir+"\n")); err != nil {
		return fmt.Errorf("record the state dir in the cluster index: %w", err)
	}
	return nil
}

// Forget removes stateDir's index entry; a missing entry is no error.
func (inv Inventory) Forget(stateDir string) error {
	return RemoveIfExists(inv.IndexEntry(stateDir))
}

// StateDirs lists, sorted and without repeats, the state dirs of the
// clusters: subdirectories of Root, state dirs in the index and (Names)
// in the name claims, each only if a cluster was started there: it holds
// a kubernix.toml, or the cluster is on the host without one (see
// LoadCluster). An index entry whose directory holds none of
// kubernix.toml, config.StateMarker and the lock file (gone, or never
// kubernix's) is pruned; one that up claimed but never started a cluster
// in is skipped and kept. A missing Root, index or Names dir is no error;
// other read errors are joined and the rest is still listed.
func (inv Inventory) StateDirs() ([]string, error) {
	var dirs []string
	var errs []error
	if inv.Root != "" {
		entries, err := os.ReadDir(inv.Root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != IndexDirName {
				dirs = append(dirs, filepath.Join(inv.Root, e.Name()))
			}
		}
		indexed, err := inv.indexed()
		dirs = append(dirs, indexed...)
		errs = append(errs, err)
	}
	if inv.Names != "" {
		named, err := recordedDirs(inv.Names)
		dirs = append(dirs, named...)
		errs = append(errs, err)
	}
	out := slices.DeleteFunc(dirs, func(d string) bool { return !holdsCluster(d) })
	slices.Sort(out)
	return slices.Compact(out), errors.Join(errs...)
}

// holdsCluster reports whether a cluster was started in the state dir:
// it holds a kubernix.toml, or its record is missing while the cluster is
// still on the host (LoadCluster).
func holdsCluster(stateDir string) bool {
	if fileinfo.Exists(config.Paths{State: stateDir}.ConfigFile()) {
		return true
	}
	_, err := LoadCluster(stateDir)
	var damaged *DamagedError
	return errors.As(err, &damaged)
}

// indexed lists the index's state dirs, pruning entries of directories
// that are not (or no longer) kubernix's, see StateDirs.
func (inv Inventory) indexed() ([]string, error) {
	entries, err := os.ReadDir(inv.IndexDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var dirs []string
	var errs []error
	for _, e := range entries {
		path := filepath.Join(inv.IndexDir(), e.Name())
		dir, err := readRecord(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := config.Paths{State: dir}
		if dir == "" || !slices.ContainsFunc([]string{p.ConfigFile(), p.Marker(), LockFile(p)}, fileinfo.Exists) {
			errs = append(errs, RemoveIfExists(path))
			continue
		}
		dirs = append(dirs, dir)
	}
	return dirs, errors.Join(errs...)
}

// recordedDirs lists the state dirs the files in dir hold, one each
// (NamesDir's format).
func recordedDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if d, err := readRecord(filepath.Join(dir, e.Name())); err == nil && d != "" {
			out = append(out, d)
		}
	}
	return out, nil
}

// readRecord reads a file holding one absolute path; "" if it holds
// something else.
func readRecord(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(string(b))
	if !filepath.IsAbs(dir) {
		return "", nil
	}
	return filepath.Clean(dir), nil
}

// Info is one cluster as `kubernix list` shows it.
type Info struct {
	// Name is the cluster's name, from its kubernix.toml (RecordedName's
	// when that is damaged: "" if unknown).
	Name string
	// StateDir is the cluster's state dir (absolute).
	StateDir string
	// Nodes is the node count it was last started with.
	Nodes int
	// Kubernetes is the version of the Kubernetes release it last ran
	// (its recorded kubernetes_version, e.g. "v1.36.3"; the default
	// release for a record from before kubernix recorded it); "" when its
	// record is damaged.
	Kubernetes string
	// Rootless is true for a cluster an ordinary user runs (RootlessFile).
	Rootless bool
	// State is running, stopped or broken.
	State State
	// Supervisor is the live supervisor's PID, 0 without one.
	Supervisor int
	// Started is when its last up started: the supervisor's start time
	// (its run.json), else the time kubernix.toml was written; zero if
	// neither is known.
	Started time.Time
	// Problems say why the cluster is broken (empty otherwise): the
	// remains or failures found, e.g. "process control-plane/etcd (pid 12)".
	Problems []string
	// Damaged is true when the cluster's record cannot be read (a
	// DamagedError, the first of Problems).
	Damaged bool
}

// LoadRecorded reads the config the cluster in stateDir was last started
// with (<state>/kubernix.toml), its StateDir set to stateDir. The error
// wraps os.ErrNotExist when there is none. When it cannot be loaded, the
// error is a *DamagedError (wrapping config.ErrInvalid), returned with the
// config Recover makes of the state dir's other records.
//
// A state dir that exists but is not the caller's alone is refused before
// anything in it is read (config.CheckStateDirOwner: an error wrapping
// config.ErrInvalid): its records could be anyone's. LoadCluster, and so
// every verb that acts on an existing cluster, starts here.
func LoadRecorded(stateDir string) (config.Config, error) {
	if fileinfo.Exists(stateDir) {
		if err := config.CheckStateDirOwner(stateDir); err != nil {
			return config.Config{}, err
		}
	}
	p := config.Paths{State: stateDir}
	file := p.ConfigFile()
	if _, err := os.Stat(file); err != nil {
		return config.Config{}, err
	}
	cfg, err := config.Load(nil, []string{config.EnvPrefix + "CONFIG=" + file})
	if err != nil {
		return Recover(stateDir, RecordedName(p)), &DamagedError{File: file, Err: err}
	}
	cfg.StateDir = stateDir
	return cfg, nil
}

// Inspect describes the cluster in stateDir from its files, the process
// table and the mount table (see State). A cluster whose record is
// damaged (LoadCluster: a *DamagedError) is broken, that error its first
// problem, whatever else is found; its Name is the one RecordedName
// finds, and Nodes counts its node dirs (Recover). Other errors are
// LoadCluster's.
func Inspect(stateDir string) (Info, error) {
	cfg, err := LoadCluster(stateDir)
	var damaged *DamagedError
	if err != nil && !errors.As(err, &damaged) {
		return Info{}, err
	}
	p := cfg.Paths()
	_, rootless := ReadRootless(p)
	info := Info{Name: cfg.Name, StateDir: stateDir, Nodes: cfg.Nodes, Kubernetes: cfg.KubernetesVersion, Rootless: rootless}
	if info.Kubernetes == "" && damaged == nil {
		info.Kubernetes = release.Default().Kubernetes
	}
	if run, err := process.ReadRun(SupervisorRunDir(p)); err == nil && !run.StartedAt.IsZero() {
		info.Started = run.StartedAt
	} else if st, err := os.Stat(p.ConfigFile()); err == nil {
		info.Started = st.ModTime()
	}
	pid, supervised := Running(p)
	if supervised {
		info.Supervisor = pid
		info.Problems = failures(p, cfg.NodeNames())
	} else {
		info.Problems = remains(p, cfg.Name)
	}
	if damaged != nil {
		info.Damaged = true
		info.Problems = append([]string{damaged.Error()}, info.Problems...)
	}
	switch {
	case len(info.Problems) > 0:
		info.State = StateBroken
	case supervised:
		info.State = StateRunning
	default:
		info.State = StateStopped
	}
	return info, nil
}

// runDirs lists the run dirs recorded in the state dir: <state>/run/<scope>/<name>.
func runDirs(p config.Paths) []string {
	dirs, _ := filepath.Glob(filepath.Join(p.Run("*", "*")))
	return dirs
}

// failures lists what a live supervisor gave up on: components whose
// supervision record says failed, and nodes with a FailedFile.
func failures(p config.Paths, nodes []string) []string {
	var out []string
	for _, dir := range runDirs(p) {
		if rec, err := components.ReadSupervision(dir); err == nil && rec.State == components.StateFailed {
			out = append(out, fmt.Sprintf("component %s failed: %s", runDirName(p, dir), rec.LastFailure))
		}
	}
	for _, n := range nodes {
		if b, err := os.ReadFile(FailedFile(p, n)); err == nil {
			out = append(out, fmt.Sprintf("node %s failed: %s", n, strings.TrimSpace(string(b))))
		}
	}
	return out
}

// remains lists what of a cluster without a supervisor is left on the
// host: live recorded processes, mounts below the state dir and the
// claims in config.RunDir that name its state dir.
func remains(p config.Paths, name string) []string {
	var out []string
	for _, dir := range runDirs(p) {
		if pid, ok := process.Running(dir); ok && pid != os.Getpid() {
			out = append(out, fmt.Sprintf("process %s (pid %d)", runDirName(p, dir), pid))
		}
	}
	mounts, _ := node.MountsUnder(p.State)
	for _, mp := range mounts {
		out = append(out, "mount "+mp)
	}
	return append(out, RunRecords(p, name)...)
}

// RunRecords lists the records in config.RunDir that name the cluster of name in
// state dir p: its name claim (NamesDir) and the host namespaces claim
// (HostNamespacesFile). Cleanup removes both; left behind, they say that
// no down ran after the cluster's last up.
func RunRecords(p config.Paths, name string) []string {
	var out []string
	if d, err := readRecord(NameFile(name)); err == nil && d == p.State {
		out = append(out, "claim "+NameFile(name))
	}
	if d, err := readRecord(HostNamespacesFile); err == nil && d == p.State {
		out = append(out, "claim "+HostNamespacesFile)
	}
	return out
}

// runDirName is dir relative to the state dir's run dir: <scope>/<name>.
func runDirName(p config.Paths, dir string) string {
	rel, err := filepath.Rel(p.Run("", ""), dir)
	if err != nil {
		return dir
	}
	return rel
}

// Find inspects every cluster of StateDirs, sorted by name (then state
// dir). A state dir that
// cannot be inspected is left out and its error joined to the others.
func (inv Inventory) Find() ([]Info, error) {
	dirs, err := inv.StateDirs()
	errs := []error{err}
	var out []Info
	for _, d := range dirs {
		info, err := Inspect(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster in %s: %w", d, err))
			continue
		}
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// ErrNotOurs is wrapped by the error of CheckOwned and Purge for a
// directory that is not a kubernix state dir; with config.ErrInvalid, as
// the directory came from --state-dir or the index.
var ErrNotOurs = errors.New("not a kubernix state dir")

// CheckOwned returns nil when dir is a kubernix state dir, one that holds
// config.StateMarker or a kubernix.toml (the state dir of an older
// kubernix), or does not exist; else an error wrapping ErrNotOurs and
// config.ErrInvalid that names dir and what to do. It changes nothing.
func CheckOwned(dir string) error {
	p := config.Paths{State: dir}
	if !fileinfo.Exists(dir) || fileinfo.Exists(p.Marker()) || fileinfo.Exists(p.ConfigFile()) {
		return nil
	}
	return fmt.Errorf("%w: %w: %s holds no %s or kubernix.toml, so kubernix did not make it and will not remove it; check --state-dir, or remove the directory yourself",
		config.ErrInvalid, ErrNotOurs, dir, config.StateMarker)
}

// Purge removes what is left of a cluster that is down: its state dir
// (PKI, etcd data, logs, images folder) and its index entry in inv. It
// refuses, removing nothing, when the state dir is not ours (CheckOwned),
// when its supervisor runs, when something of it remains on the host
// (a live recorded process, a mount below the state dir, a claim in
// config.RunDir: see Inspect), or when the context merged into the user's
// kubeconfig is still recorded (UserKubeconfigFile: down could not
// remove it). A state dir that is already gone is no error.
//
// A rootless cluster's state dir may hold files owned by the subordinate
// IDs of its user namespace, which removeState removes from a user
// namespace of the user's.
func Purge(inv Inventory, p config.Paths, name string) error {
	if err := CheckOwned(p.State); err != nil {
		return err
	}
	if pid, ok := Running(p); ok {
		return fmt.Errorf("cluster %q in %s runs (supervisor pid %d): bring it down first", name, p.State, pid)
	}
	if left := remains(p, name); len(left) > 0 {
		return fmt.Errorf("cluster %q is not down, %s is kept: %s", name, p.State, strings.Join(left, ", "))
	}
	if fileinfo.Exists(UserKubeconfigFile(p)) {
		return fmt.Errorf("cluster %q: its context is still in the kubeconfig %s records (down could not remove it); fix that file and run delete again",
			name, UserKubeconfigFile(p))
	}
	_, rootless := ReadRootless(p)
	if err := removeState(p.State, rootless); err != nil {
		return err
	}
	return inv.Forget(p.State)
}

// removeState removes the state dir. A rootless cluster's may hold files
// of its user namespace's subordinate IDs (image layers with files of
// other users), which the user cannot remove: then, run by that user, it
// removes the dir again as root of a user namespace that maps the user's
// subordinate IDs (util-linux `unshare --map-auto --map-root-user rm -rf`,
// newuidmap as for rootlesskit), and the error says how to do it by hand
// when that fails too.
func removeState(dir string, rootless bool) error {
	err := os.RemoveAll(dir)
	if err != nil && rootless && os.Geteuid() != 0 && errors.Is(err, fs.ErrPermission) {
		out, uerr := exec.Command("unshare", "--map-auto", "--map-root-user", "rm", "-rf", "--one-file-system", "--", dir).CombinedOutput()
		if uerr == nil {
			return nil
		}
		return fmt.Errorf("remove the state dir: %w; files there belong to the user namespace's subordinate IDs, and `unshare --map-auto --map-root-user rm -rf --one-file-system -- %s` failed (%w: %s): remove them as root",
			err, dir, uerr, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("remove the state dir: %w", err)
	}
	return nil
}
