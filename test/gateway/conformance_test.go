// Package gateway_test is upstream's Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, the release whose CRDs the
// ingress addon installs) built in a module of kubernix's: `make
// gateway-conformance` compiles this test (go test -c) and runs it with
// the suite's own flags against a cluster with the ingress addon
// (hack/gateway-conformance.sh).
package gateway_test

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

// TestConformance runs the suite as upstream's conformance_test.go does.
func TestConformance(t *testing.T) { conformance.RunConformance(t) }
