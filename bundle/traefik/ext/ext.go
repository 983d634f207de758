// Package ext stands in for traefik's dynamic configuration extension
// module (github.com/traefik/traefik/dynamic/ext, a nested module of the
// traefik repository that traefik's go.mod replaces with its own
// directory, and that the Go module proxy does not serve). Open-source
// traefik extends nothing with it: its types are empty, and so are these.
package ext

// HTTP is the extension of traefik's dynamic.HTTP configuration: none.
type HTTP struct{}

// Router is the extension of traefik's dynamic.Router: none.
type Router struct{}

// RouterIng is the extension of a router made from Ingress annotations:
// none.
type RouterIng struct{}

// ToRouter returns the Router of r: an empty one.
func (RouterIng) ToRouter() Router { return Router{} }
