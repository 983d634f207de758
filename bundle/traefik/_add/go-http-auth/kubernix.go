// This file is kubernix's addition to its copy of
// github.com/abbot/go-http-auth v0.4.0 (bundle/traefik/go.mod): the two
// names traefik takes from its fork of it (github.com/containous/
// go-http-auth, which the Go module proxy does not serve).

package auth

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// CheckSecret reports whether password matches secret, a hash as
// htpasswd writes them: bcrypt ($2a$, $2b$, $2x$, $2y$), {SHA}, or MD5
// crypt (anything else), compared as BasicAuth.CheckAuth compares them.
func CheckSecret(password, secret string) bool {
	compare := compareFuncs[0].compare
	for _, cmp := range compareFuncs[1:] {
		if strings.HasPrefix(secret, cmp.prefix) {
			compare = cmp.compare
			break
		}
	}
	return compare([]byte(secret), []byte(password)) == nil
}

// RequireAuthStale is RequireAuth with stale=true in the challenge
// (RFC 7616 section 3.3): the client's nonce was stale, so it may retry
// with the new one without asking its user again.
func (a *DigestAuth) RequireAuthStale(w http.ResponseWriter, r *http.Request) {
	if len(a.clients) > a.ClientCacheSize+a.ClientCacheTolerance {
		a.Purge(a.ClientCacheTolerance * 2)
	}
	nonce := RandomKey()
	a.clients[nonce] = &digest_client{nc: 0, last_seen: time.Now().UnixNano()}
	w.Header().Set(contentType, a.Headers.V().UnauthContentType)
	w.Header().Set(a.Headers.V().Authenticate,
		fmt.Sprintf(`Digest realm="%s", nonce="%s", opaque="%s", algorithm="MD5", qop="auth", stale=true`,
			a.Realm, nonce, a.Opaque))
	w.WriteHeader(a.Headers.V().UnauthCode)
	_, _ = w.Write([]byte(a.Headers.V().UnauthResponse))
}
