// Package dns is what kubernix's build of traefik has in place of lego's
// package of the same path (github.com/go-acme/lego/v5/providers/dns),
// which links the SDK of every ACME DNS-01 provider: the Go module proxy
// serves several of those SDKs at none of the versions lego requires, and
// an offline local cluster has no ACME server to answer a challenge
// anyway. hack/modcopy.sh copies lego's module into bundle/traefik/_mod/lego
// with this file as that package's only one (bundle/traefik/go.mod
// replaces lego with the copy). It keeps the one function traefik calls
// (github.com/traefik/traefik/v3/pkg/provider/acme).
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v5/challenge"
)

// NewDNSChallengeProviderByName returns an error naming the provider:
// kubernix's traefik has no ACME DNS-01 providers.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("ACME DNS challenge provider %q: kubernix's traefik is built without ACME DNS providers", name)
}
