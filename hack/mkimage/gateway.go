package main

import (
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/images"
)

// echoBasicRef is the reference of the Gateway API conformance suite's
// backend image under the tag most of its manifests run
// (sigs.k8s.io/gateway-api/conformance v1.6.1, base/manifests.yaml and
// tests/*.yaml); the tags the others name are made from it with -refs.
const echoBasicRef = "registry.k8s.io/gateway-api/echo-basic:v1.5.1"

// gatewayImages returns the gateway set: the images of the Gateway API
// conformance suite that are not built-in images, made from the work dir
// workDir (goBinaries in bin/). Upstream's echo-basic is
// conformance/echo-basic alone on distroless, run as its entrypoint.
func gatewayImages(workDir string) []images.Builtin {
	return []images.Builtin{{
		Name:       "echo-basic",
		Ref:        echoBasicRef,
		Entrypoint: []string{"/echo-basic"},
		Extra:      []images.File{{Path: "/echo-basic", Source: filepath.Join(workDir, "bin", "echo-basic")}},
	}}
}
