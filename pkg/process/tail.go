package process

import (
	"bytes"
	"io"
	"os"
	"strings"
)

// Tail sizes: the file is read backwards in tailChunk pieces, and at most
// tailMax bytes from its end are read however long the lines are.
const (
	tailChunk = 64 << 10
	tailMax   = 1 << 20
)

// Tail returns the last n lines of the file at path, oldest first, without
// their newlines. A final line without a newline counts as a line; an empty
// file gives no lines. Only the last 1 MiB is read, so with very long lines
// the first returned line may be cut at its start. n <= 0 returns nil. The
// error is from opening or reading the file (fs.ErrNotExist when missing).
func Tail(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if n <= 0 {
		return nil, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()

	var buf []byte // the file from off to size
	off := size
	for off > 0 && size-off < tailMax {
		chunk := min(int64(tailChunk), off)
		off -= chunk
		b := make([]byte, chunk, chunk+int64(len(buf)))
		m, err := f.ReadAt(b, off)
		if err != nil && err != io.EOF {
			return nil, err
		}
		buf = append(b[:m], buf...)
		// n newlines before the final line terminator mean the last n
		// lines are complete.
		if bytes.Count(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) >= n {
			break
		}
	}
	if len(buf) == 0 {
		return nil, nil
	}
	lines := strings.Split(strings.TrimSuffix(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}
