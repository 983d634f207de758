package registry

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/bcrypt"

	"github.com/kubernix/kubernix/internal/atomicfile"
)

// Username is the one account LocalName admits.
const Username = "kubernix"

// Credentials are the account LocalName admits (HTTP basic auth).
type Credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// CredentialsFile is where the account is kept in authDir (JSON, 0600):
// what `kubernix registry login` hands on.
func CredentialsFile(authDir string) string { return filepath.Join(authDir, "credentials.json") }

// HTPasswdFile is LocalName's htpasswd file in authDir: the account's
// bcrypt hash (0600).
func HTPasswdFile(authDir string) string { return filepath.Join(authDir, "htpasswd") }

// EnsureCredentials returns the account kept in authDir, generating one
// (Username, a random password of 128 bits) when there is none, and
// rewrites the htpasswd file unless it holds exactly that account. The
// dir is made 0700 and both files are 0600, for the owner alone. An
// unreadable credentials file is an error naming it, not replaced: tools
// may be logged in with it.
func EnsureCredentials(authDir string) (Credentials, error) {
	if err := os.MkdirAll(authDir, 0o700); err != nil {
		return Credentials{}, err
	}
	if err := os.Chmod(authDir, 0o700); err != nil {
		return Credentials{}, err
	}
	cred, err := ReadCredentials(authDir)
	if errors.Is(err, fs.ErrNotExist) {
		cred = Credentials{Username: Username, Password: rand.Text()}
		b, err := json.MarshalIndent(cred, "", "  ")
		if err != nil {
			return Credentials{}, err
		}
		if err := atomicfile.Write(CredentialsFile(authDir), append(b, '\n'), 0o600); err != nil {
			return Credentials{}, err
		}
	} else if err != nil {
		return Credentials{}, err
	}
	if htpasswdHolds(HTPasswdFile(authDir), cred) {
		return cred, nil
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(cred.Password), bcrypt.DefaultCost)
	if err != nil {
		return Credentials{}, fmt.Errorf("hash the registry password: %w", err)
	}
	line := cred.Username + ":" + string(hash) + "\n"
	if err := atomicfile.Write(HTPasswdFile(authDir), []byte(line), 0o600); err != nil {
		return Credentials{}, err
	}
	return cred, nil
}

// ReadCredentials returns the account kept in authDir. The error wraps
// fs.ErrNotExist when there is none yet (the registry has not started);
// a file that does not hold an account is an error naming it.
func ReadCredentials(authDir string) (Credentials, error) {
	file := CredentialsFile(authDir)
	b, err := os.ReadFile(file)
	if err != nil {
		return Credentials{}, err
	}
	var cred Credentials
	if err := json.Unmarshal(b, &cred); err != nil {
		return Credentials{}, fmt.Errorf("%s: %w", file, err)
	}
	if cred.Username == "" || cred.Password == "" {
		return Credentials{}, fmt.Errorf("%s: no username and password", file)
	}
	return cred, nil
}

// htpasswdHolds reports whether the htpasswd file at path is the one
// line of cred's account with a hash of its password.
func htpasswdHolds(path string, cred Credentials) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	hash, ok := bytes.CutPrefix(bytes.TrimSuffix(b, []byte("\n")), []byte(cred.Username+":"))
	return ok && !bytes.ContainsAny(hash, "\n") && bcrypt.CompareHashAndPassword(hash, []byte(cred.Password)) == nil
}
