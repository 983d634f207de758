// kubernix's: v0.4.0 of github.com/abbot/go-http-auth predates modules;
// its copy (bundle/traefik/go.mod) needs this file to replace a module.
module github.com/abbot/go-http-auth

go 1.22

require (
	golang.org/x/crypto v0.56.0
	golang.org/x/net v0.58.0
)
