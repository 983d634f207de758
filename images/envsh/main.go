// Command envsh is /bin/sh of the conformance busybox image
// (registry.k8s.io/e2e-test-images/busybox, see hack/mkimage). It runs
// busybox's ash, as upstream's image does, except when the environment
// holds a variable whose name is not a shell name (e.g. "data-1", from a
// ConfigMap key): Debian's busybox 1.35 ash drops those where upstream's
// 1.37 passes them on to the commands it runs, so envsh runs zsh, which
// passes them on too, for such an environment. The conformance specs need
// both: `sh -c env` must print "data-1=value-1", and a failed redirection
// must read "/bin/sh: can't create /file: Read-only file system", as ash
// words it.
//
// It execs the shell with its own arguments and argv[0], so busybox picks
// its sh applet and zsh emulates sh. Build it static:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" ./images/envsh
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// The shells envsh runs, at their paths in the image.
const (
	ash = "/bin/busybox"
	zsh = "/bin/zsh"
)

func main() {
	shell := shellFor(os.Environ())
	err := syscall.Exec(shell, os.Args, os.Environ())
	fmt.Fprintf(os.Stderr, "%s: exec %s: %v\n", os.Args[0], shell, err)
	os.Exit(127)
}

// shellFor returns the shell to run in the environment env ("NAME=value"
// each): zsh if a name is not a shell name, else ash.
func shellFor(env []string) string {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isName(name) {
			return zsh
		}
	}
	return ash
}

// isName reports whether s is a shell variable name (POSIX: a letter or
// underscore, then letters, digits and underscores), which ash keeps.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}
