// Package atomicfile replaces files so that readers see either the old or
// the new content, never a part: the one implementation the packages that
// write state, certificates and kubeconfigs share.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write writes data with mode to a temporary file in path's directory,
// syncs it and renames it over path. The directory must exist. On error the
// temporary file is removed and path is unchanged.
//
// The new file is owned by the calling process, whoever owned path before:
// see WriteOwned to choose.
func Write(path string, data []byte, mode os.FileMode) error {
	return WriteOwned(path, data, mode, -1, -1)
}

// WriteFunc is Write with the content streamed into the temporary file by
// write, for content too large to hold in memory. An error from write is
// returned as is, with the temporary file removed and path unchanged.
func WriteFunc(path string, mode os.FileMode, write func(io.Writer) error) error {
	return writeOwned(path, mode, -1, -1, write)
}

// WriteOwned is Write with the new file owned by uid and gid (each -1
// keeps the process's own), set on the temporary file before the rename,
// so path never has another owner or mode, not even for a moment. Changing
// the owner needs CAP_CHOWN; without it the error wraps fs.ErrPermission
// and path is unchanged.
func WriteOwned(path string, data []byte, mode os.FileMode, uid, gid int) error {
	return writeOwned(path, mode, uid, gid, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeOwned is WriteOwned with the content written by write.
func writeOwned(path string, mode os.FileMode, uid, gid int, write func(io.Writer) error) (err error) {
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
	if uid != -1 || gid != -1 {
		// Before the chmod: a chown may clear set-id bits.
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := write(f); err != nil {
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
