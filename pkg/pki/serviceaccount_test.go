package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

// TestServiceAccountKeyKept checks which existing service-account keys
// ensureServiceAccountKey keeps (tokens signed with them stay valid) and
// which it replaces with a new ECDSA P-256 key.
func TestServiceAccountKeyKept(t *testing.T) {
	newKey := func(t *testing.T, kind string) crypto.Signer {
		t.Helper()
		var (
			k   crypto.Signer
			err error
		)
		switch kind {
		case "rsa-2048":
			k, err = rsa.GenerateKey(rand.Reader, 2048)
		case "rsa-1024":
			k, err = rsa.GenerateKey(rand.Reader, 1024)
		case "p256":
			k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		case "p384":
			k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		}
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	tests := []struct {
		name     string
		existing string // "" for none, "garbage" for an unparsable file
		wantKept bool
	}{
		{"none: a new P-256 key", "", false},
		{"RSA 2048 from an older kubernix is kept", "rsa-2048", true},
		{"P-256 is kept", "p256", true},
		{"RSA 1024 is replaced", "rsa-1024", false},
		{"P-384 is replaced", "p384", false},
		{"garbage is replaced", "garbage", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			keyPath, pubPath := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
			var before crypto.Signer
			switch tt.existing {
			case "":
			case "garbage":
				if err := os.WriteFile(keyPath, []byte("not a key"), 0o600); err != nil {
					t.Fatal(err)
				}
			default:
				before = newKey(t, tt.existing)
				pemBytes, err := keyutil.MarshalPrivateKeyToPEM(before)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(keyPath, pemBytes, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := ensureServiceAccountKey(&writer{}, keyPath, pubPath); err != nil {
				t.Fatal(err)
			}
			after, err := loadServiceAccountKey(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			kept := before != nil && after.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(before.Public())
			if kept != tt.wantKept {
				t.Errorf("key kept = %v, want %v", kept, tt.wantKept)
			}
			if !tt.wantKept {
				if ec, ok := after.(*ecdsa.PrivateKey); !ok || ec.Curve != elliptic.P256() {
					t.Errorf("new key is %T, want ECDSA P-256", after)
				}
			}
			pubs, err := keyutil.PublicKeysFromFile(pubPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(pubs) != 1 || !pubs[0].(interface{ Equal(crypto.PublicKey) bool }).Equal(after.Public()) {
				t.Errorf("%s does not hold the key's public key", pubPath)
			}
		})
	}
}
