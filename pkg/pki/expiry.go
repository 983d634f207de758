package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"k8s.io/client-go/util/cert"
)

// Expiry is a certificate that expires soon or has expired.
type Expiry struct {
	// Path is the certificate's PEM file.
	Path string
	// CommonName is the certificate's subject CN, e.g. "kubernix-admin".
	CommonName string
	// NotAfter is the end of its validity.
	NotAfter time.Time
}

// Certificates returns the path of every certificate file of b: the CAs,
// then the leaves, the kubelets' by node name.
func (b *Bundle) Certificates() []string {
	pairs := []Pair{
		b.CA, b.EtcdCA, b.FrontProxyCA,
		b.APIServer, b.APIServerKubeletClient, b.APIServerEtcdClient, b.FrontProxyClient,
		b.EtcdServer, b.EtcdPeer,
		b.ControllerManager, b.Scheduler, b.KubeProxy, b.CloudController, b.NetpolAgent, b.Admin, b.SuperAdmin,
		b.ControllerManagerServing, b.SchedulerServing,
	}
	for _, n := range slices.Sorted(maps.Keys(b.Kubelets)) {
		pairs = append(pairs, b.Kubelets[n].Serving, b.Kubelets[n].Client)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.Cert
	}
	return out
}

// Expiring reads the certificate files at paths and returns, in the order
// of paths, those that expire within the given duration of now, or have
// expired: with within = RenewBefore, exactly those the next Ensure
// renews. A missing file is skipped (Ensure writes it); a file that cannot
// be read or holds no certificate yields an error naming it, joined with
// the others', and the remaining files are still checked.
func Expiring(paths []string, now time.Time, within time.Duration) ([]Expiry, error) {
	var out []Expiry
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pki: %w", err))
			continue
		}
		certs, err := cert.ParseCertsPEM(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("pki: parse %s: %w", p, err))
			continue
		}
		if c := certs[0]; c.NotAfter.Sub(now) <= within {
			out = append(out, Expiry{Path: p, CommonName: c.Subject.CommonName, NotAfter: c.NotAfter})
		}
	}
	return out, errors.Join(errs...)
}
