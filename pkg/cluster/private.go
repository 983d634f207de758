package cluster

import (
	"fmt"
	"os"

	"github.com/kubernix/kubernix/pkg/config"
)

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
