package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
)

// Owner is a user and group by numeric id, as in chown(2).
type Owner struct {
	UID, GID int
}

// Target is a user's kubeconfig: the file Merge writes a cluster's context
// into, and who owns what Merge creates there.
type Target struct {
	// Path is the kubeconfig file; a symlink is followed.
	Path string
	// Owner, if not nil, owns the file and the missing directories Merge
	// creates (the user who ran `sudo kubernix`); nil leaves them to the
	// process. An existing file always keeps its own owner and mode.
	Owner *Owner
}

// Environment variables sudo(8) sets for the command it runs: the invoking
// user's login name and real uid and gid.
const (
	sudoUserEnv = "SUDO_USER"
	sudoUIDEnv  = "SUDO_UID"
	sudoGIDEnv  = "SUDO_GID"
)

// UserTarget returns the kubeconfig of the user who ran kubernix.
//
// Under sudo (effective uid 0, SUDO_USER set to a user other than root,
// with SUDO_UID and SUDO_GID) that is the invoking user's: the file kubectl
// run by that user would write (see defaultPath: $KUBECONFIG if sudo kept
// it, else ~/.kube/config with the home directory of SUDO_USER from the
// user database, not $HOME, which sudo may have set to root's), owned by
// SUDO_UID:SUDO_GID. Otherwise it is the file kubectl would write for the
// process itself, with no Owner.
//
// The error names the variable when SUDO_UID or SUDO_GID is not a number,
// wraps os/user's error when SUDO_USER is unknown, or says that
// $KUBECONFIG names no file (e.g. "a:" while a does not exist).
func UserTarget() (Target, error) {
	return userTarget(os.Geteuid(), user.Lookup)
}

// ProcessTarget returns the kubeconfig kubectl run by this process would
// write, with no Owner: UserTarget ignoring sudo. The error says that
// $KUBECONFIG names no file.
func ProcessTarget() (Target, error) {
	return pathTarget(clientcmd.RecommendedHomeFile)
}

// userTarget is UserTarget with the effective uid and the user lookup
// given, for tests.
func userTarget(euid int, lookup func(name string) (*user.User, error)) (Target, error) {
	name := os.Getenv(sudoUserEnv)
	if euid != 0 || name == "" || name == "root" {
		return ProcessTarget()
	}
	var owner Owner
	var errs []error
	for _, v := range []struct {
		env string
		id  *int
	}{{sudoUIDEnv, &owner.UID}, {sudoGIDEnv, &owner.GID}} {
		id, err := strconv.Atoi(os.Getenv(v.env))
		if err != nil || id < 0 {
			errs = append(errs, fmt.Errorf("%s=%q is not a user or group id", v.env, os.Getenv(v.env)))
		}
		*v.id = id
	}
	if err := errors.Join(errs...); err != nil {
		return Target{}, fmt.Errorf("kubeconfig: find the kubeconfig of %s=%s: %w", sudoUserEnv, name, err)
	}
	if owner.UID == 0 {
		return ProcessTarget()
	}
	u, err := lookup(name)
	if err != nil {
		return Target{}, fmt.Errorf("kubeconfig: find the home directory of %s=%s: %w", sudoUserEnv, name, err)
	}
	t, err := pathTarget(filepath.Join(u.HomeDir, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName))
	t.Owner = &owner
	return t, err
}

// pathTarget is the Target defaultPath chooses for globalFile, without an
// Owner; the error says that $KUBECONFIG names no file.
func pathTarget(globalFile string) (Target, error) {
	p := defaultPath(globalFile)
	if p == "" {
		return Target{}, fmt.Errorf("kubeconfig: %s=%q names no file to write to",
			clientcmd.RecommendedConfigPathEnvVar, os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
	}
	return Target{Path: p}, nil
}

// defaultPath returns the kubeconfig kubectl writes a new context to
// (clientcmd.PathOptions.GetDefaultFilename): with $KUBECONFIG a single
// file, that file; with a list (separated by ':' on Linux), its first file
// that exists, else its last; without, globalFile (for kubectl
// ~/.kube/config, clientcmd.RecommendedHomeFile). It is "" for a
// $KUBECONFIG whose chosen entry is empty (e.g. "a:" while a does not
// exist).
func defaultPath(globalFile string) string {
	opts := clientcmd.PathOptions{
		GlobalFile:   globalFile,
		EnvVar:       clientcmd.RecommendedConfigPathEnvVar,
		LoadingRules: clientcmd.NewDefaultClientConfigLoadingRules(),
	}
	return opts.GetDefaultFilename()
}
