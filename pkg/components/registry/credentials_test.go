package registry

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestEnsureCredentials: the first call makes an account and its
// htpasswd line, owner-only; later calls keep the account, and rewrite
// the htpasswd file only when it no longer holds exactly it. A damaged
// credentials file is an error naming it, and is kept.
func TestEnsureCredentials(t *testing.T) {
	tests := []struct {
		name string
		// edit changes the htpasswd line after the first call; nil
		// keeps it, a nil result removes the file.
		edit    func(line string) []byte
		wantNew bool // the htpasswd file is rewritten
	}{
		{"unchanged", nil, false},
		{"htpasswd removed", func(string) []byte { return nil }, true},
		{"another hash", func(string) []byte {
			return []byte(Username + ":$2a$10$abcdefghijklmnopqrstuuAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n")
		}, true},
		{"another user", func(line string) []byte { return []byte("other:" + strings.TrimPrefix(line, Username+":")) }, true},
		{"a second account", func(line string) []byte { return []byte(line + "mallory:x\n") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "registry-auth")
			first, err := EnsureCredentials(dir)
			if err != nil {
				t.Fatal(err)
			}
			if first.Username != Username || len(first.Password) < 20 {
				t.Fatalf("account %+v, want user %s and a long password", first, Username)
			}
			hp := HTPasswdFile(dir)
			if tt.edit != nil {
				line, err := os.ReadFile(hp)
				if err != nil {
					t.Fatal(err)
				}
				if b := tt.edit(string(line)); b == nil {
					err = os.Remove(hp)
				} else {
					err = os.WriteFile(hp, b, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(hp)
			again, err := EnsureCredentials(dir)
			if err != nil {
				t.Fatal(err)
			}
			if again != first {
				t.Errorf("second call: account %+v, want the first %+v", again, first)
			}
			after, _ := os.ReadFile(hp)
			if rewritten := string(after) != string(before); rewritten != tt.wantNew {
				t.Errorf("htpasswd rewritten = %v, want %v:\n%s", rewritten, tt.wantNew, after)
			}
			hash, ok := strings.CutPrefix(strings.TrimSuffix(string(after), "\n"), Username+":")
			if !ok || strings.Contains(hash, "\n") || bcrypt.CompareHashAndPassword([]byte(hash), []byte(first.Password)) != nil {
				t.Errorf("htpasswd %q is not the account's one bcrypt line", after)
			}
			for path, want := range map[string]fs.FileMode{dir: fs.ModeDir | 0o700, hp: 0o600, CredentialsFile(dir): 0o600} {
				if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
					t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
				}
			}
		})
	}
}

func TestReadCredentials(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadCredentials(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no account yet: err = %v, want fs.ErrNotExist", err)
	}
	for content, want := range map[string]string{"garbage": "invalid character", `{"username": "kubernix"}`: "no username and password"} {
		if err := os.WriteFile(CredentialsFile(dir), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadCredentials(dir)
		if err == nil || !strings.Contains(err.Error(), CredentialsFile(dir)) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one naming the file and %q", content, err, want)
		}
		if _, err := EnsureCredentials(dir); err == nil {
			t.Errorf("%s: EnsureCredentials replaced a damaged account", content)
		}
	}
}
