// Package atomicfile replaces files so that readers see either the old or
// the new content, never a part: the one implementation the packages that
// write state, certificates and kubeconfigs share.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data with mode to a temporary file in path's directory,
// syncs it and renames it over path. The directory must exist. On error the
// temporary file is removed and path is unchanged.
func Write(path string, data []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
