package rootless

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/kubernix/kubernix/assets"
)

// WrapperName is the file name of the rendered runtime wrapper script.
const WrapperName = "crun-rootless"

// RenderWrapper returns the runtime wrapper script (assets/crun-rootless.sh)
// that execs `<kubernix> oci-runtime-wrap --runtime <runtime> -- "$@"`.
// Both paths must be absolute.
func RenderWrapper(kubernix, runtime string) ([]byte, error) {
	for _, p := range []string{kubernix, runtime} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("render runtime wrapper: %q is not an absolute path", p)
		}
	}
	tmpl, err := template.New(WrapperName).Option("missingkey=error").
		Funcs(template.FuncMap{"sh": shellQuote}).Parse(assets.CrunRootlessTemplate)
	if err != nil {
		return nil, fmt.Errorf("render runtime wrapper: %w", err)
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, struct{ Kubernix, Runtime string }{kubernix, runtime})
	if err != nil {
		return nil, fmt.Errorf("render runtime wrapper: %w", err)
	}
	return buf.Bytes(), nil
}

// shellQuote quotes s as one POSIX shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
