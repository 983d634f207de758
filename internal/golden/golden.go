// Package golden compares test output with a golden file under testdata,
// or rewrites the file when the test runs with -update (each test package
// defines that flag and passes its value).
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check fails t when got differs from the file at path, showing both;
// with update it writes got to path instead (making its directory).
func Check(t *testing.T, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
