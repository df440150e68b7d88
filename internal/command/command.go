// Package command runs the main function of the project's commands the
// same way: a context that SIGINT or SIGTERM cancels, so a command stops
// cleanly under Ctrl-C and under a process manager, and one exit status
// per outcome.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main runs run with the command-line arguments and exits: 0 on success,
// helpStatus when run returns flag.ErrHelp (the usage was printed), and 1
// on any other error, which goes to stderr after the command's name.
func Main(name string, helpStatus int, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(helpStatus)
	default:
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
