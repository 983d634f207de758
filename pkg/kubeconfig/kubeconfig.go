// Package kubeconfig writes the kubeconfig files of a kubernix cluster and
// merges a cluster's context into (or removes it from) the user's
// kubeconfig, so kubectl works at once after `kubernix up` and nothing is
// left behind after `kubernix down`.
//
// Every file is read and encoded through client-go's clientcmd; nothing here
// renders YAML by hand. Writes are atomic (temporary file and rename); a new
// file gets mode 0600, an existing one keeps its mode and owner, and changes
// to a shared kubeconfig take the same lock file (<file>.lock) kubectl
// takes, so kubernix and kubectl do not overwrite each other's edits. The
// lock file kubernix writes names its holder (LockRecord), so that a lock
// left by a kubernix killed mid-merge is removed by the next one.
//
// clientcmd.ModifyConfig is not used for the user's kubeconfig: it rewrites
// the file in place (a crash mid-write leaves it truncated), creates
// directories with mode 0755 owned by the process (root under sudo), and
// fails at once when the lock file exists instead of waiting for kubectl to
// finish.
package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/moby/sys/user"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/pki"
)

const (
	// fileMode is the mode of every kubeconfig written here: it holds keys.
	fileMode os.FileMode = 0o600
	// dirMode is the mode of directories created for a kubeconfig.
	dirMode os.FileMode = 0o700
)

// ErrReadOnly is wrapped by the error of Merge or Remove when the
// kubeconfig, or the directory that holds it, has no write permission for
// its owner.
var ErrReadOnly = errors.New("kubeconfig is read-only")

// Write writes the kubeconfig New builds to path. path is replaced
// atomically, with mode 0600 when new (see Merge for an existing file);
// missing parent directories are created with mode 0700. Errors are New's
// and name the file that could not be written.
func Write(path, contextName, server string, caFile string, client pki.Pair) error {
	cfg, err := New(contextName, server, caFile, client)
	if err != nil {
		return fmt.Errorf("kubeconfig: write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return fmt.Errorf("kubeconfig: write %s: %w", path, err)
	}
	return save(path, cfg, nil)
}

// New builds a self-contained kubeconfig with one cluster, user and
// context, all named contextName, and current-context set to it. server is
// the apiserver URL (e.g. https://10.10.0.1:6443); the CA certificate in
// caFile and the client certificate and key of client are embedded as
// data, not referenced by path, so the kubeconfig stays valid wherever it
// is copied. Encode it with clientcmd.Write. The error says which input
// is empty or which file could not be read.
func New(contextName, server string, caFile string, client pki.Pair) (*clientcmdapi.Config, error) {
	if contextName == "" {
		return nil, errors.New("context name is empty")
	}
	if server == "" {
		return nil, errors.New("server is empty")
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	cert, err := os.ReadFile(client.Cert)
	if err != nil {
		return nil, fmt.Errorf("read client certificate: %w", err)
	}
	key, err := os.ReadFile(client.Key)
	if err != nil {
		return nil, fmt.Errorf("read client key: %w", err)
	}

	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = server
	cluster.CertificateAuthorityData = ca
	cfg.Clusters[contextName] = cluster
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData = cert
	user.ClientKeyData = key
	cfg.AuthInfos[contextName] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = contextName
	kctx.AuthInfo = contextName
	cfg.Contexts[contextName] = kctx
	cfg.CurrentContext = contextName
	return cfg, nil
}

// Merge copies the context named contextName from the kubeconfig at src,
// with the cluster and user it refers to, into the kubeconfig dst.Path,
// all three under the name contextName (replacing entries of that name),
// and sets its current-context to contextName. Everything else in the file
// is kept. Relative file references in src's entries are made absolute, as
// they would no longer resolve from dst.
//
// The file is replaced atomically (a crash leaves the old or the new file,
// never a part). An existing file keeps its mode, owner and group; if it
// is a symlink, its target is updated and the link kept. A missing file is
// created with mode 0600 and missing directories with mode 0700, both owned
// by dst.Owner when set.
//
// Merge holds the lock file kubectl uses (see lockFile) while it reads and
// writes the file; it waits up to LockTimeout for another writer and then
// fails with an error wrapping ErrLocked. A lock left by a kubernix that is
// gone (killed mid-merge) is removed, with a warning on log (nil: none). A file (or the directory that
// holds it) its owner may not write is refused with ErrReadOnly, a file
// that does not parse as a kubeconfig with clientcmd's error, and the file
// is left as it was. A src without the context, or whose context names a
// missing cluster or user, is an error.
func Merge(dst Target, src, contextName string, log *slog.Logger) error {
	return merge(dst, src, contextName, LockTimeout, log)
}

// merge is Merge waiting lockTimeout for the lock.
func merge(dst Target, src, contextName string, lockTimeout time.Duration, log *slog.Logger) (err error) {
	from, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return fmt.Errorf("kubeconfig: load %s: %w", src, err)
	}
	if err := clientcmd.ResolveLocalPaths(from); err != nil {
		return fmt.Errorf("kubeconfig: load %s: %w", src, err)
	}
	kctx, ok := from.Contexts[contextName]
	if !ok {
		return fmt.Errorf("kubeconfig: merge %s: context %q not in %s", dst.Path, contextName, src)
	}
	cluster, ok := from.Clusters[kctx.Cluster]
	if !ok {
		return fmt.Errorf("kubeconfig: merge %s: cluster %q of context %q not in %s", dst.Path, kctx.Cluster, contextName, src)
	}
	authInfo, ok := from.AuthInfos[kctx.AuthInfo]
	if !ok {
		return fmt.Errorf("kubeconfig: merge %s: user %q of context %q not in %s", dst.Path, kctx.AuthInfo, contextName, src)
	}
	kctx = kctx.DeepCopy()
	kctx.Cluster = contextName
	kctx.AuthInfo = contextName

	if err := mkdirOwned(filepath.Dir(dst.Path), dst.Owner); err != nil {
		return fmt.Errorf("kubeconfig: merge %s: %w", dst.Path, err)
	}
	unlock, err := lockFile(dst.Path, lockTimeout, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, unlock()) }()

	cfg, err := load(dst.Path)
	if err != nil {
		return err
	}
	cfg.Clusters[contextName] = cluster.DeepCopy()
	cfg.AuthInfos[contextName] = authInfo.DeepCopy()
	cfg.Contexts[contextName] = kctx
	cfg.CurrentContext = contextName
	return save(dst.Path, cfg, dst.Owner)
}

// Remove deletes the cluster, user and context named contextName from the
// kubeconfig at dst and clears current-context if it was contextName.
// Everything else is kept, and the file keeps its mode and owner. A missing
// dst or missing entries are not errors, and leave dst untouched. Remove
// locks dst, removing a stale lock, and refuses a read-only file like
// Merge.
func Remove(dst, contextName string, log *slog.Logger) error {
	return remove(dst, contextName, LockTimeout, log)
}

// remove is Remove waiting lockTimeout for the lock.
func remove(dst, contextName string, lockTimeout time.Duration, log *slog.Logger) (err error) {
	if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := lockFile(dst, lockTimeout, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, unlock()) }()

	if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	cfg, err := load(dst)
	if err != nil {
		return err
	}
	_, hadCluster := cfg.Clusters[contextName]
	_, hadUser := cfg.AuthInfos[contextName]
	_, hadContext := cfg.Contexts[contextName]
	wasCurrent := cfg.CurrentContext == contextName
	if !hadCluster && !hadUser && !hadContext && !wasCurrent {
		return nil
	}
	delete(cfg.Clusters, contextName)
	delete(cfg.AuthInfos, contextName)
	delete(cfg.Contexts, contextName)
	if wasCurrent {
		cfg.CurrentContext = ""
	}
	return save(dst, cfg, nil)
}

// load reads the kubeconfig at path; a missing file is an empty config.
func load(path string) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return clientcmdapi.NewConfig(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: load %s: %w", path, err)
	}
	return cfg, nil
}

// save writes cfg to path (or, if path is a symlink, to its target)
// atomically. An existing file keeps its mode, owner and group; a new one
// gets mode 0600 and owner (nil: the process's). A file or directory whose
// owner has no write permission is refused with ErrReadOnly: the atomic
// rename needs only the directory, and root passes every permission check,
// so the mode alone says that the user protected the file.
func save(path string, cfg *clientcmdapi.Config, owner *Owner) error {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: encode %s: %w", path, err)
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	mode, uid, gid := fileMode, -1, -1
	if owner != nil {
		uid, gid = owner.UID, owner.GID
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil:
		if fi.Mode().Perm()&0o200 == 0 {
			return fmt.Errorf("kubeconfig: write %s: %w (mode %v)", path, ErrReadOnly, fi.Mode().Perm())
		}
		st := fi.Sys().(*syscall.Stat_t)
		mode, uid, gid = fi.Mode().Perm(), int(st.Uid), int(st.Gid)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("kubeconfig: write %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	if di, err := os.Stat(dir); err == nil && di.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("kubeconfig: write %s: %w (directory %s has mode %v)", path, ErrReadOnly, dir, di.Mode().Perm())
	}
	if err := atomicfile.WriteOwned(target, data, mode, uid, gid); err != nil {
		return fmt.Errorf("kubeconfig: write %s: %w", path, err)
	}
	return nil
}

// mkdirOwned creates dir and its missing parents with mode 0700, the ones
// it creates owned by owner (nil: the process). Existing directories are
// left as they are.
func mkdirOwned(dir string, owner *Owner) error {
	if owner == nil {
		return os.MkdirAll(dir, dirMode)
	}
	return user.MkdirAllAndChown(dir, dirMode, owner.UID, owner.GID, user.WithOnlyNew)
}
