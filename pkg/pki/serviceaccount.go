package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"

	"k8s.io/client-go/util/keyutil"
)

// serviceAccountKeyBits is the size of the service-account signing key.
const serviceAccountKeyBits = 2048

// ensureServiceAccountKey keeps a valid RSA key at keyPath or writes a new
// one, then makes sure pubPath holds its public key.
func ensureServiceAccountKey(w *writer, keyPath, pubPath string) error {
	key, err := loadRSAKey(keyPath)
	if err == nil {
		if err := os.Chmod(keyPath, keyMode); err != nil {
			return fmt.Errorf("pki: chmod %s: %w", keyPath, err)
		}
	} else {
		key, err = rsa.GenerateKey(rand.Reader, serviceAccountKeyBits)
		if err != nil {
			return fmt.Errorf("pki: generate service-account key: %w", err)
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
		if err != nil {
			return fmt.Errorf("pki: encode %s: %w", keyPath, err)
		}
		if err := w.write(keyPath, keyPEM, keyMode); err != nil {
			return err
		}
	}

	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("pki: encode %s: %w", pubPath, err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: der})
	if have, err := os.ReadFile(pubPath); err == nil && bytes.Equal(have, pubPEM) {
		if err := os.Chmod(pubPath, certMode); err != nil {
			return fmt.Errorf("pki: chmod %s: %w", pubPath, err)
		}
		return nil
	}
	return w.write(pubPath, pubPEM, certMode)
}

// loadRSAKey reads a PEM RSA private key of at least
// serviceAccountKeyBits bits.
func loadRSAKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, err
	}
	key, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: %T is not an RSA key", path, k)
	}
	if key.N.BitLen() < serviceAccountKeyBits {
		return nil, fmt.Errorf("%s: RSA key has %d bits, want at least %d", path, key.N.BitLen(), serviceAccountKeyBits)
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
