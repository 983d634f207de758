// Command pause is the process that holds a pod sandbox's namespaces open.
//
// kubernix packs it as the registry.k8s.io/pause image (see pkg/images),
// because no registry is reachable to pull the upstream one. As PID 1 of a
// sandbox it blocks until SIGINT or SIGTERM and then exits 0, and it reaps
// every zombie that is reparented to it, on each SIGCHLD.
//
// Build it static and small:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o _output/bin/pause ./images/pause
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	// SIGTERM before SIGINT: once SIGINT is caught, SIGTERM is too. The
	// test's readiness check relies on this order.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	reap() // zombies that arrived before the handler was installed
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking. Signals coalesce, so
// one SIGCHLD may stand for many children.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return // ECHILD: no children; 0: none has exited yet
		}
	}
}
