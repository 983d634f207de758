package pki

import (
	"fmt"
	"github.com/kubernix/kubernix/internal/atomicfile"
	"os"
	"path/filepath"
)

// writer writes files atomically and remembers what it wrote.
type writer struct {
	written []string
}

// write replaces path with data at mode, creating parent directories with
// mode 0700.
func (w *writer) write(path string, data []byte, mode os.FileMode) error {
	if err := writeFileAtomic(path, data, mode); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	w.written = append(w.written, path)
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
