package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// clockSkew backdates NotBefore so a certificate issued now is accepted by
// a peer whose clock is slightly behind.
const clockSkew = 5 * time.Minute

// authority is a loaded CA able to sign leaves.
type authority struct {
	cn   string
	cert *x509.Certificate
	key  crypto.Signer
	pool *x509.CertPool
}

// ensureCA loads the CA at p if it is usable, or creates a new one.
func ensureCA(w *writer, p Pair, cn string, now time.Time) (*authority, error) {
	c, key, err := loadPair(p)
	if err == nil {
		err = checkCA(c, cn, now)
	}
	if err == nil {
		if err := fixModes(p); err != nil {
			return nil, err
		}
	} else {
		c, key, err = newCA(cn, now)
		if err != nil {
			return nil, err
		}
		if err := w.writePair(p, c, key); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return &authority{cn: cn, cert: c, key: key, pool: pool}, nil
}

// checkCA says why c is not a usable CA named cn at now, or nil.
func checkCA(c *x509.Certificate, cn string, now time.Time) error {
	switch {
	case !c.BasicConstraintsValid || !c.IsCA:
		return errors.New("not a CA certificate")
	case c.KeyUsage&x509.KeyUsageCertSign == 0:
		return errors.New("CA certificate may not sign certificates")
	case c.Subject.CommonName != cn:
		return fmt.Errorf("CA common name is %q, want %q", c.Subject.CommonName, cn)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		return fmt.Errorf("CA certificate is not self-signed: %w", err)
	}
	return checkTimes(c, now)
}

// checkTimes says why c is not valid for more than RenewBefore from now.
func checkTimes(c *x509.Certificate, now time.Time) error {
	if now.Before(c.NotBefore) {
		return fmt.Errorf("not valid before %s", c.NotBefore)
	}
	if c.NotAfter.Sub(now) <= RenewBefore {
		return fmt.Errorf("expires %s, less than %s away", c.NotAfter, RenewBefore)
	}
	return nil
}

func newCA(cn string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	c, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: create CA %q: %w", cn, err)
	}
	return c, key, nil
}

// ensureLeaf keeps id's certificate if it is still good, else issues a new
// certificate and key for it.
func ensureLeaf(w *writer, ca *authority, id identity, now time.Time, validity time.Duration) error {
	c, _, err := loadPair(id.pair)
	if err == nil {
		err = checkLeaf(c, ca, id, now)
	}
	if err == nil {
		return fixModes(id.pair)
	}
	c, key, err := issue(ca, id, now, validity)
	if err != nil {
		return err
	}
	return w.writePair(id.pair, c, key)
}

// checkLeaf says why c does not serve as id's certificate at now, or nil.
func checkLeaf(c *x509.Certificate, ca *authority, id identity, now time.Time) error {
	if c.IsCA {
		return errors.New("is a CA certificate")
	}
	if _, err := c.Verify(x509.VerifyOptions{
		Roots:       ca.pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return fmt.Errorf("not signed by the current %s: %w", ca.cn, err)
	}
	if err := checkTimes(c, now); err != nil {
		return err
	}
	if c.Subject.CommonName != id.cn {
		return fmt.Errorf("common name is %q, want %q", c.Subject.CommonName, id.cn)
	}
	have, want := slices.Sorted(slices.Values(c.Subject.Organization)), slices.Sorted(slices.Values(id.orgs))
	if !slices.Equal(have, want) {
		return fmt.Errorf("organizations are %q, want %q", have, want)
	}
	for _, u := range id.usages {
		if !slices.Contains(c.ExtKeyUsage, u) {
			return fmt.Errorf("extended key usage %v missing", u)
		}
	}
	for _, ip := range id.ips {
		if !containsIP(c.IPAddresses, ip) {
			return fmt.Errorf("IP SAN %s missing", ip)
		}
	}
	for _, name := range id.dns {
		if !slices.Contains(c.DNSNames, name) {
			return fmt.Errorf("DNS SAN %s missing", name)
		}
	}
	return nil
}

// issue creates a new key and a certificate for id signed by ca, valid for
// validity but not beyond the CA.
func issue(ca *authority, id identity, now time.Time, validity time.Duration) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate key for %s: %w", id.cn, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: id.cn, Organization: id.orgs},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           id.usages,
		BasicConstraintsValid: true,
		IPAddresses:           id.ips,
		DNSNames:              id.dns,
	}
	c, err := sign(tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign certificate for %s: %w", id.cn, err)
	}
	return c, key, nil
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("pki: generate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// loadPair reads the certificate and key of p and checks that they belong
// together. The first certificate of the file is returned.
func loadPair(p Pair) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(p.Cert)
	if err != nil {
		return nil, nil, err
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", p.Cert, err)
	}
	keyPEM, err := os.ReadFile(p.Key)
	if err != nil {
		return nil, nil, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", p.Key, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %T is not a signing key", p.Key, k)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(certs[0].PublicKey) {
		return nil, nil, fmt.Errorf("%s does not match %s", p.Key, p.Cert)
	}
	return certs[0], signer, nil
}

// fixModes restores the modes of a reused pair, e.g. after a user copied it.
func fixModes(p Pair) error {
	if err := os.Chmod(p.Key, keyMode); err != nil {
		return fmt.Errorf("pki: chmod %s: %w", p.Key, err)
	}
	if err := os.Chmod(p.Cert, certMode); err != nil {
		return fmt.Errorf("pki: chmod %s: %w", p.Cert, err)
	}
	return nil
}

// writePair writes key then certificate, so a crash in between leaves a
// mismatched pair that the next Ensure replaces.
func (w *writer) writePair(p Pair, c *x509.Certificate, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("pki: encode %s: %w", p.Key, err)
	}
	if err := w.write(p.Key, keyPEM, keyMode); err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: c.Raw})
	return w.write(p.Cert, certPEM, certMode)
}
