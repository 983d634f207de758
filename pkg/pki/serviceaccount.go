package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"

	"k8s.io/client-go/util/keyutil"
)

// minRSAKeyBits is the smallest RSA service-account key kept from an
// earlier kubernix (which made 2048-bit RSA keys).
const minRSAKeyBits = 2048

// ensureServiceAccountKey keeps a valid key at keyPath or writes a new
// ECDSA P-256 one (the apiserver signs tokens with ES256: a new key costs
// microseconds where a 2048-bit RSA key took 50 to 300 ms of the cold
// start), then makes sure pubPath holds its public key. A valid RSA key of
// at least minRSAKeyBits bits is kept, so tokens issued with it stay
// valid.
func ensureServiceAccountKey(w *writer, keyPath, pubPath string) error {
	key, err := loadServiceAccountKey(keyPath)
	if err == nil {
		if err := os.Chmod(keyPath, keyMode); err != nil {
			return fmt.Errorf("pki: chmod %s: %w", keyPath, err)
		}
	} else {
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("pki: generate service-account key: %w", err)
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(ec)
		if err != nil {
			return fmt.Errorf("pki: encode %s: %w", keyPath, err)
		}
		if err := w.write(keyPath, keyPEM, keyMode); err != nil {
			return err
		}
		key = ec
	}

	der, err := x509.MarshalPKIXPublicKey(key.Public())
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

// loadServiceAccountKey reads a PEM private key: ECDSA P-256, or RSA of
// at least minRSAKeyBits bits. Other keys, and keys that fail their own
// validation, are errors.
func loadServiceAccountKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, err
	}
	switch key := k.(type) {
	case *ecdsa.PrivateKey:
		if key.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%s: ECDSA key on %s, want P-256", path, key.Curve.Params().Name)
		}
		if _, err := key.ECDH(); err != nil { // checks the point is on the curve
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return key, nil
	case *rsa.PrivateKey:
		if key.N.BitLen() < minRSAKeyBits {
			return nil, fmt.Errorf("%s: RSA key has %d bits, want at least %d", path, key.N.BitLen(), minRSAKeyBits)
		}
		if err := key.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%s: %T is neither an ECDSA P-256 nor an RSA key", path, k)
}
