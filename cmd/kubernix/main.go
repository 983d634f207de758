// Command kubernix brings up a real, local, multi-node Kubernetes cluster
// from upstream binaries. See pkg/cli for the verbs.
//
// KUBERNIX_CPUPROFILE=<file> writes a Go CPU profile of each kubernix
// process (the detached supervisor too) to <file>.<pid>, for `go tool
// pprof`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cli"
	"github.com/kubernix/kubernix/pkg/cli/common"
)

func main() {
	profile := os.Getenv("KUBERNIX_CPUPROFILE")
	if len(os.Args) > 1 && os.Args[1] == "sandbox-init" {
		profile = ""
	}
	stopProfile := startProfile(profile)
	// kubernix runs iptables, nft and ip itself (go-iptables, knftables)
	// and through its children; a PATH without the sbin dirs (an
	// ordinary user's on Debian, root's in some services) gets them.
	_ = os.Setenv("PATH", bins.SystemPath(os.Getenv("PATH")))
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	code := cli.Run(ctx, common.DefaultStreams(), os.Args[1:], os.Environ())
	stop()
	stopProfile()
	os.Exit(code)
}

// stopSignals are the signals that cancel the command's context: SIGINT,
// SIGTERM and SIGHUP (its terminal closed), so that a foreground `up`
// brings its cluster down in order whichever way it is ended. SIGHUP is
// left out when kubernix was started with it ignored (nohup), as the user
// asked.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// startProfile starts a CPU profile to path.<pid> when path is set, and
// returns the function that ends it. A profile that cannot start is
// reported on stderr and skipped.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubernix: CPU profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
