package config

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubernix/kubernix/pkg/rootless"
)

// StateMarker is the file, directly in a state dir, that marks the
// directory as a kubernix state dir. `up` writes it when it creates or
// first uses the directory (Paths.MakeState), and Validate refuses a
// non-empty directory without it: cleanup unmounts and removes what is
// below a state dir, so kubernix must never take over a directory that
// holds someone else's files.
const StateMarker = ".kubernix-state"

// markerText is StateMarker's content, for a person who finds the file.
const markerText = "This directory is the state of a kubernix cluster: kubernix creates, mounts\n" +
	"and removes things below it. Keep nothing else here.\n"

// SystemDirs are directories of the operating system or shared by its
// users that Validate refuses as a state dir, whatever they hold (most are
// also non-empty, but /mnt, /media, /srv or /opt may be empty and still
// hold other mounts later). They are compared after resolving symlinks on
// both sides, so /var/run matches /run and /lib matches /usr/lib on a
// merged-/usr system.
var SystemDirs = []string{
	"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
	"/lost+found", "/media", "/mnt", "/nix", "/nix/store", "/opt", "/proc", "/root", "/run",
	"/sbin", "/snap", "/srv", "/sys", "/tmp",
	"/usr", "/usr/bin", "/usr/include", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local",
	"/usr/local/bin", "/usr/local/lib", "/usr/sbin", "/usr/share", "/usr/src",
	"/var", "/var/cache", "/var/lib", "/var/local", "/var/lock", "/var/log", "/var/mail",
	"/var/opt", "/var/run", "/var/spool", "/var/tmp",
}

// stateInputs are the entries a user may create in a state dir before the
// first `up` (the images folder and registry config, see README) and the
// lost+found of a freshly made file system mounted there; a directory
// holding only these may become a state dir.
var stateInputs = []string{"images", "registries", "lost+found"}

// stateDirProblem returns why dir (absolute, clean, symlinks resolved) may
// not be a state dir, or nil: it is a SystemDirs entry or one of homes (the
// invoking user's home directories), or a non-empty directory that is not a
// kubernix state dir (see isStateDir). The message starts with what dir
// is, for the caller to prefix with the flag.
func stateDirProblem(dir string, homes []string) error {
	for _, sys := range SystemDirs {
		if dir == sys || dir == resolveExisting(sys) {
			return fmt.Errorf("%s is a system directory, and kubernix writes, replaces and removes files of its own there; use a directory of its own, e.g. /var/lib/kubernix/<name> (the default as root)", dir)
		}
	}
	for _, h := range homes {
		if h != "" && dir == h {
			return fmt.Errorf("%s is a home directory, and kubernix writes, replaces and removes files of its own there; use a directory of its own, e.g. %s", dir, filepath.Join(dir, "kubernix"))
		}
	}
	ours, err := isStateDir(dir)
	if err != nil || ours {
		return nil // a directory that cannot be read is reported by the writability check
	}
	return fmt.Errorf("%s is not empty and not a kubernix state dir (it has no %s or kubernix.toml), and kubernix writes, replaces and removes files of its own there; choose a new or empty directory, e.g. %s",
		dir, StateMarker, filepath.Join(dir, "kubernix"))
}

// isStateDir reports whether dir is, or may become, a kubernix state dir:
// it does not exist, or holds StateMarker, or a kubernix.toml (the state
// dir of an older kubernix, which wrote no marker), or nothing but
// stateInputs. It errors when dir cannot be read.
func isStateDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.Name() == StateMarker || e.Name() == "kubernix.toml" {
			return true, nil
		}
	}
	for _, e := range entries {
		if !slices.Contains(stateInputs, e.Name()) {
			return false, nil
		}
	}
	return true, nil
}

// homeDirs are the home directories of the invoking user: $HOME, the
// user's passwd entry, and under sudo the home of $SUDO_USER; each with
// symlinks resolved.
func homeDirs() []string {
	var homes []string
	if h, err := os.UserHomeDir(); err == nil {
		homes = append(homes, h)
	}
	if u, err := user.Current(); err == nil {
		homes = append(homes, u.HomeDir)
	}
	if name := os.Getenv("SUDO_USER"); name != "" {
		if u, err := user.Lookup(name); err == nil {
			homes = append(homes, u.HomeDir)
		}
	}
	for i, h := range homes {
		if filepath.IsAbs(h) {
			homes[i] = resolveExisting(filepath.Clean(h))
		}
	}
	return homes
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the absolute path p and appends the rest unchanged, so a state dir
// reached through a link is used, checked and recorded by its real path
// whether or not it exists yet. It returns p itself when nothing resolves.
func resolveExisting(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// CheckStateDirOwner returns nil when the state dir dir (absolute) is
// the caller's alone: nobody but the caller (the effective uid: root, or
// the user of a rootless cluster) and root can change it or what it holds
// (CheckTrusted: the dir owned by the caller and writable by nobody
// else, every ancestor owned by root or the caller and not writable by
// others unless sticky, such as /tmp). kubernix follows the records in a
// state dir (processes to signal, paths to unmount and remove) and trusts
// the CA it finds there, so a state dir someone else could write is
// refused: the error wraps ErrInvalid (exit 2, see Invalid) and names
// the path at fault and how to fix it. A missing state dir is checked by its nearest
// existing ancestor. Inside a user namespace (the supervisor of a
// rootless cluster, which the kubernix outside started after this check)
// it checks nothing: owners outside the namespace all show as the
// overflow uid there. It changes nothing.
func CheckStateDirOwner(dir string) error {
	if err := stateDirOwnerProblem(dir); err != nil {
		return Invalid("", []error{err})
	}
	return nil
}

// stateDirOwnerProblem is CheckStateDirOwner's problem, unwrapped.
func stateDirOwnerProblem(dir string) error {
	if rootless.InUserNamespace() {
		return nil
	}
	err := CheckTrusted(dir, os.Geteuid())
	var ue *UntrustedError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ue):
		return fmt.Errorf("--state-dir %s: check its owner: %w", dir, err)
	}
	why := "kubernix follows the records in a state dir (processes to signal, paths to unmount and remove) and trusts the CA it finds there, " +
		"so it uses only a state dir that nobody but you and root can change"
	var fix string
	switch {
	case ue.Final && ue.Problem == OwnedByOther:
		fix = fmt.Sprintf("choose another --state-dir, or, if you trust what it holds, `chown -R %d %s`", ue.User, ue.Path)
	case ue.Final:
		fix = fmt.Sprintf("`chmod go-w %s`, or choose another --state-dir", ue.Path)
	case ue.Problem == OwnedByOther:
		fix = "choose a state dir below directories that only root or you own (a sticky one such as /tmp is fine)"
	default:
		fix = fmt.Sprintf("`chmod go-w %s` (or `chmod +t %s`), or choose another --state-dir", ue.Path, ue.Path)
	}
	return fmt.Errorf("--state-dir %s: %w; %s; %s", dir, ue, why, fix)
}

// listSeparator is the character that separates the entries of PATH and of
// the path lists in containerd's and the kubelet's flags and config.
const listSeparator = string(filepath.ListSeparator)

// pathListProblem returns an error for a directory flag whose value holds
// listSeparator, nil otherwise.
func pathListProblem(flag, dir string) error {
	if !strings.Contains(dir, listSeparator) {
		return nil
	}
	return fmt.Errorf("--%s %q: contains %q, which separates the entries of PATH and of path lists in containerd's and the kubelet's flags; choose a path without it", flag, dir, listSeparator)
}

// Marker is the state dir's StateMarker file.
func (p Paths) Marker() string { return filepath.Join(p.State, StateMarker) }

// MakeState creates the state dir (and its parents) unless it exists,
// makes it StateDirMode (a state dir of an older kubernix was 0755), and
// marks it as kubernix's with StateMarker; a state dir of an older
// kubernix, which has none, gets it too. Validate has refused a directory
// that is not kubernix's, or not the caller's alone; MakeState does not
// check again.
func (p Paths) MakeState() error {
	if err := os.MkdirAll(p.State, StateDirMode); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if err := os.Chmod(p.State, StateDirMode); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if _, err := os.Stat(p.Marker()); err == nil {
		return nil
	}
	if err := os.WriteFile(p.Marker(), []byte(markerText), StateFileMode); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	return nil
}
