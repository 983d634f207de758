// Command kubernix brings up a real, local, multi-node Kubernetes cluster
// from upstream binaries. See pkg/cli for the verbs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubernix/kubernix/pkg/cli"
	"github.com/kubernix/kubernix/pkg/cli/common"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, common.DefaultStreams(), os.Args[1:], os.Environ())
	stop()
	os.Exit(code)
}
