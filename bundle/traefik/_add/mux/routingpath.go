// This file is kubernix's addition to its copy of github.com/gorilla/mux
// v1.8.1 (bundle/traefik/go.mod): the two names traefik takes from its
// fork of it (github.com/containous/mux, which the Go module proxy does
// not serve).

package mux

// routingPathKey is the type of RoutingPathKey.
type routingPathKey struct{}

// RoutingPathKey is the request context key under which traefik stores a
// request's routing path (its path with the non-reserved characters
// percent-decoded). traefik's rule matchers (rule syntax v3, the
// default) read it back themselves; here it is only the key.
var RoutingPathKey = routingPathKey{}

// UseRoutingPath returns r. In traefik's fork it makes r match paths
// against the routing path; here r matches the request's decoded path, as
// gorilla/mux does, which differs only for rules of the deprecated syntax
// v2 on paths holding percent-encoded reserved characters.
func (r *Router) UseRoutingPath() *Router { return r }
