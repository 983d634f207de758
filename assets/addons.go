package assets

import _ "embed"

// CoreDNSManifest is the text/template of the CoreDNS addon; its data has
// ClusterDomain, DNSIP, Image and Replicas.
//
//go:embed coredns.yaml.tmpl
var CoreDNSManifest string
