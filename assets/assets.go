// Package assets embeds the files kubernix renders or ships: the pinned
// upstream versions, configuration templates and addon manifests.
package assets

import (
	"bufio"
	_ "embed"
	"strings"
)

//go:embed versions.env
var versionsEnv string

// Versions returns the pinned upstream versions from versions.env, keyed by
// name (e.g. "KUBERNETES_VERSION" -> "v1.37.2"). The Makefile builds exactly
// these.
func Versions() map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(versionsEnv))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// Version returns the pinned version named key, or "" if none.
func Version(key string) string { return Versions()[key] }
