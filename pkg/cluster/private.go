package cluster

import (
	"fmt"
	"os"

	"github.com/kubernix/kubernix/pkg/config"
)

// superAdmin names the kubeconfig of the super-admin credential
// (pki.Bundle.SuperAdmin, system:masters): the supervisor's own, for the
// boot before RBAC has bindings. It stays in the state dir (0600) and is
// never merged into the user's kubeconfig, which gets the admin's.
const superAdmin = "super-admin"

// SuperAdminKubeconfig is the path of the super-admin kubeconfig.
func SuperAdminKubeconfig(paths config.Paths) string { return paths.Kubeconfig(superAdmin) }

// privateDirs makes sure each directory exists with config.StateDirMode,
// also when an older kubernix made it readable by everyone: the logs
// (which can hold tokens, URLs, object names of every namespace, the
// audit log) and the images are only the cluster owner's. In a rootless
// cluster the owner is the user who runs it, inside and outside the user
// namespace alike.
func privateDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, config.StateDirMode); err != nil {
			return err
		}
		if err := os.Chmod(d, config.StateDirMode); err != nil {
			return fmt.Errorf("make %s private: %w", d, err)
		}
	}
	return nil
}
