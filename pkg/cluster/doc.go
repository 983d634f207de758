// Package cluster runs a plan that pkg/preflight's Prepare checked: Up
// prepares the host (network, PKI, kubeconfigs), starts the components
// through the boot sequence (pkg/boot) with the live hooks their
// describers gave them, and Down and Cleanup stop them in reverse and
// remove every trace from the host, also after the supervisor was killed.
// What a cluster records on disk is pkg/state's.
package cluster
