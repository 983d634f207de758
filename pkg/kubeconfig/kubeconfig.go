// Package kubeconfig writes the kubeconfig files of a kubernix cluster and
// merges a cluster's context into (or removes it from) the user's
// kubeconfig, so kubectl works at once after `kubernix up` and nothing is
// left behind after `kubernix down`.
//
// Every file is read and written through client-go's clientcmd; nothing here
// renders YAML by hand. Writes are atomic (temporary file and rename) with
// mode 0600, and changes to a shared kubeconfig take the same lock file
// (<file>.lock) kubectl takes, so kubernix and kubectl do not overwrite each
// other's edits.
package kubeconfig

import (
	"errors"
	"fmt"
	"github.com/kubernix/kubernix/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/pkg/pki"
)

const (
	// fileMode is the mode of every kubeconfig written here: it holds keys.
	fileMode os.FileMode = 0o600
	// dirMode is the mode of directories created for a kubeconfig.
	dirMode os.FileMode = 0o700
)

// Write writes a self-contained kubeconfig to path with one cluster, user
// and context, all named contextName, and current-context set to it.
// server is the apiserver URL (e.g. https://10.10.0.1:6443); the CA
// certificate in caFile and the client certificate and key of client are
// embedded as data, so the file stays valid wherever it is copied. path is
// replaced atomically with mode 0600; missing parent directories are created
// with mode 0700. Errors name the file that could not be read or written.
func Write(path, contextName, server string, caFile string, client pki.Pair) error {
	if contextName == "" {
		return errors.New("kubeconfig: write " + path + ": context name is empty")
	}
	if server == "" {
		return errors.New("kubeconfig: write " + path + ": server is empty")
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("kubeconfig: read CA: %w", err)
	}
	cert, err := os.ReadFile(client.Cert)
	if err != nil {
		return fmt.Errorf("kubeconfig: read client certificate: %w", err)
	}
	key, err := os.ReadFile(client.Key)
	if err != nil {
		return fmt.Errorf("kubeconfig: read client key: %w", err)
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
	return save(path, cfg)
}

// Merge copies the context named contextName from the kubeconfig at src,
// with the cluster and user it refers to, into the kubeconfig at dst, all
// three under the name contextName (replacing entries of that name), and
// sets dst's current-context to contextName. Everything else in dst is
// kept. dst and its directory are created if missing (directory mode 0700);
// dst is written atomically with mode 0600. If dst is a symlink, its target
// is updated and the link kept. Relative file references in src's entries
// are made absolute, as they would no longer resolve from dst.
//
// Merge holds dst+".lock", the lock file kubectl uses, while it reads and
// writes dst; it waits up to LockTimeout for another writer and then fails
// with an error wrapping ErrLocked. A src without the context, or whose
// context names a missing cluster or user, is an error.
func Merge(dst, src, contextName string) (err error) {
	from, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return fmt.Errorf("kubeconfig: load %s: %w", src, err)
	}
	if err := clientcmd.ResolveLocalPaths(from); err != nil {
		return fmt.Errorf("kubeconfig: load %s: %w", src, err)
	}
	kctx, ok := from.Contexts[contextName]
	if !ok {
		return fmt.Errorf("kubeconfig: merge %s: context %q not in %s", dst, contextName, src)
	}
	cluster, ok := from.Clusters[kctx.Cluster]
	if !ok {
		return fmt.Errorf("kubeconfig: merge %s: cluster %q of context %q not in %s", dst, kctx.Cluster, contextName, src)
	}
	user, ok := from.AuthInfos[kctx.AuthInfo]
	if !ok {
		return fmt.Errorf("kubeconfig: merge %s: user %q of context %q not in %s", dst, kctx.AuthInfo, contextName, src)
	}
	kctx = kctx.DeepCopy()
	kctx.Cluster = contextName
	kctx.AuthInfo = contextName

	unlock, err := lockFile(dst, LockTimeout)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, unlock()) }()

	cfg, err := load(dst)
	if err != nil {
		return err
	}
	cfg.Clusters[contextName] = cluster.DeepCopy()
	cfg.AuthInfos[contextName] = user.DeepCopy()
	cfg.Contexts[contextName] = kctx
	cfg.CurrentContext = contextName
	return save(dst, cfg)
}

// Remove deletes the cluster, user and context named contextName from the
// kubeconfig at dst and clears current-context if it was contextName.
// Everything else is kept. A missing dst or missing entries are not errors,
// and leave dst untouched. Remove locks dst like Merge.
func Remove(dst, contextName string) (err error) {
	if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := lockFile(dst, LockTimeout)
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
	return save(dst, cfg)
}

// DefaultPath returns the kubeconfig kubectl writes to: the first non-empty
// entry of $KUBECONFIG (a list separated by the OS's path list separator,
// ':' on Linux), else ~/.kube/config (clientcmd.RecommendedHomeFile).
func DefaultPath() string {
	for _, p := range filepath.SplitList(os.Getenv(clientcmd.RecommendedConfigPathEnvVar)) {
		if p != "" {
			return p
		}
	}
	return clientcmd.RecommendedHomeFile
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

// save writes cfg to path (or, if path is a symlink, to its target).
func save(path string, cfg *clientcmdapi.Config) error {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: encode %s: %w", path, err)
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	if err := writeFileAtomic(target, data, fileMode); err != nil {
		return fmt.Errorf("kubeconfig: write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic creates path's directory if needed and replaces path
// atomically (see atomicfile.Write).
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}
