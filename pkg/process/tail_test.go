package process

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	// numbered returns "prefix1\n...prefixN\n" and its lines.
	numbered := func(prefix string, n int) (string, []string) {
		var b strings.Builder
		var lines []string
		for i := 1; i <= n; i++ {
			l := fmt.Sprintf("%s%d", prefix, i)
			b.WriteString(l + "\n")
			lines = append(lines, l)
		}
		return b.String(), lines
	}
	many, manyLines := numbered("a fairly long log line, to cross 64 KiB chunk boundaries: ", 5000)
	long := strings.Repeat("x", 3*tailMax)

	tests := []struct {
		name    string
		content string
		n       int
		want    []string
	}{
		{"empty file", "", 20, nil},
		{"fewer lines than n", "a\nb\nc\n", 20, []string{"a", "b", "c"}},
		{"exactly n", "a\nb\nc\n", 3, []string{"a", "b", "c"}},
		{"more than n", "a\nb\nc\nd\n", 2, []string{"c", "d"}},
		{"no trailing newline", "a\nb\nc", 2, []string{"b", "c"}},
		{"no trailing newline, fewer than n", "a\nb\nc", 5, []string{"a", "b", "c"}},
		{"single line without newline", "only", 20, []string{"only"}},
		{"empty lines count", "a\n\n\n", 2, []string{"", ""}},
		{"n is 0", "a\n", 0, nil},
		{"across chunks", many, 20, manyLines[len(manyLines)-20:]},
		{"whole file across chunks", many[len(many)-3*tailChunk:], 100000, strings.Split(strings.TrimSuffix(many[len(many)-3*tailChunk:], "\n"), "\n")},
		{"line longer than the read limit", "first\n" + long + "\nlast\n", 3, []string{long[len(long)-tailMax+len("\nlast\n"):], "last"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			writeFile(t, path, tt.content)
			got, err := Tail(path, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Tail(%d) = %d lines %.200q, want %d lines %.200q", tt.n, len(got), got, len(tt.want), tt.want)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		if _, err := Tail(filepath.Join(t.TempDir(), "nope"), 20); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Tail = %v, want fs.ErrNotExist", err)
		}
	})
}
