// Package fileinfo answers questions about paths on this machine.
package fileinfo

import (
	"errors"
	"os"
)

// Exists reports whether path exists (os.Stat does not report
// fs.ErrNotExist). A path that cannot be examined for another reason,
// e.g. permission denied on a parent, counts as existing.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
