package assets

import _ "embed"

// ContainerdConfigTemplate is the text/template of a node's containerd
// config.toml, executed by pkg/components/containerd.Render with a containerd.Config.
//
//go:embed containerd.toml.tmpl
var ContainerdConfigTemplate string
