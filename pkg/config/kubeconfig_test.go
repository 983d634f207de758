package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateKubeconfig checks --kubeconfig: a file up can write (or
// create) is valid and made absolute; a directory, a read-only file or
// directory, or a path under a file is refused naming --kubeconfig, and
// nothing is created.
func TestValidateKubeconfig(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, mode os.FileMode, isDir bool) string {
		p := filepath.Join(dir, name)
		var err error
		if isDir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, nil, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := mk("kc", 0o600, false)
	readOnly := mk("kc-ro", 0o400, false)
	aDir := mk("dir", 0o700, true)
	roDir := mk("ro-dir", 0o500, true)
	t.Cleanup(func() { _ = os.Chmod(roDir, 0o700) })
	// Short: a long state dir makes socket paths too long.
	state, err := os.MkdirTemp("", "kx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(state) })
	tests := []struct {
		name string
		path string
		want string // substring of the error; "" means valid
	}{
		{"unset", "", ""},
		{"existing file", file, ""},
		{"new file in new directories", filepath.Join(dir, "new", "deeper", "kc"), ""},
		{"a directory", aDir, "--kubeconfig " + aDir + ": is a directory"},
		{"read-only file", readOnly, "--kubeconfig " + readOnly + ": is read-only (mode -r--------)"},
		{"in a read-only directory", filepath.Join(roDir, "kc"), "--kubeconfig " + filepath.Join(roDir, "kc") + ": directory " + roDir + " is read-only"},
		{"under a file", filepath.Join(file, "kc"), "--kubeconfig " + filepath.Join(file, "kc") + ": " + file + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, []string{"--state-dir", state, "--kubeconfig", tt.path}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, before := os.Lstat(tt.path)
			err = c.Validate()
			if _, after := os.Lstat(tt.path); tt.path != "" && (before == nil) != (after == nil) {
				t.Errorf("Validate changed %s (stat before: %v, after: %v)", tt.path, before, after)
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v\nwant ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

// TestKubeconfigAbsolute checks that a relative --kubeconfig is made
// absolute, as up may run its supervisor elsewhere.
func TestKubeconfigAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c, err := load(t, []string{"--kubeconfig", "kc"}, []string{EnvPrefix + "KUBECONFIG=ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "kc"); c.Kubeconfig != want {
		t.Errorf("Kubeconfig = %q, want %q", c.Kubeconfig, want)
	}
	c, err = load(t, nil, []string{EnvPrefix + "KUBECONFIG=/x/kc"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kubeconfig != "/x/kc" {
		t.Errorf("from %sKUBECONFIG: Kubeconfig = %q, want /x/kc", EnvPrefix, c.Kubeconfig)
	}
}
