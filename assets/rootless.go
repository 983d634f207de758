package assets

import _ "embed"

// CrunRootlessTemplate is the text/template of the OCI runtime wrapper
// script of rootless clusters, executed by pkg/rootless.RenderWrapper with
// the kubernix binary and the real runtime's paths; its "sh" func quotes a
// value for the shell.
//
//go:embed crun-rootless.sh
var CrunRootlessTemplate string
