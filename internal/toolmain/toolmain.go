// Package toolmain is the main function of the developer commands under
// hack/ (bench, mkimage, pushimages): each is a function run(ctx, stdout,
// stderr, args) that a test can call, and Main runs it as the program.
package toolmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Run is a command: it parses args and does its work, writing to stdout
// and stderr, until ctx is cancelled. It returns flag.ErrHelp after -h.
type Run func(ctx context.Context, stdout, stderr io.Writer, args []string) error

// Main runs run with the program's arguments and a context cancelled by
// SIGINT or SIGTERM, and exits: 0 on success, 1 on an error, which it
// prints after "<name>: " (but for flag.ErrHelp, whose usage the flag set
// printed).
func Main(name string, run Run) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		os.Exit(1)
	}
}
