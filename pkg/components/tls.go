package components

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/kubernix/kubernix/pkg/pki"
)

// ClientTLS returns a TLS config that trusts the CA at caFile and presents
// the client pair, for probing the components' secure endpoints. An empty
// client pair presents no certificate. Errors name the file that failed.
func ClientTLS(caFile string, client pki.Pair) (*tls.Config, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("CA file %s holds no certificate", caFile)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if client.Cert != "" {
		cert, err := tls.LoadX509KeyPair(client.Cert, client.Key)
		if err != nil {
			return nil, fmt.Errorf("load client certificate %s: %w", client.Cert, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
