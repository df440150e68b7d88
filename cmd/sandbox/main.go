// Command sandbox runs a whole local cluster on loopback that uses the CCM
// on the emulated cloud (control plane, kwok nodes, alicloud-emulator and
// cloud-controller-manager), and adds or removes its nodes.
//
//	sandbox up --dir DIR [--nodes N] [--exit-after-ready]
//	sandbox add-node --dir DIR
//	sandbox remove-node --dir DIR NAME
//	sandbox status --dir DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/alicloud-ccm/alicloud-ccm/internal/command"
	"github.com/alicloud-ccm/alicloud-ccm/internal/sandbox"
)

const usage = `usage:
  sandbox up --dir DIR [--nodes N] [--exit-after-ready]   run the sandbox until SIGINT/SIGTERM
  sandbox add-node --dir DIR                              create an ECS instance and register its Node
  sandbox remove-node --dir DIR NAME                      delete the Node's ECS instance and stop its heartbeat
  sandbox status --dir DIR                                print the summary of the running sandbox
`

func main() {
	command.Main("sandbox", 2, func(ctx context.Context, args []string) error {
		return run(ctx, args, os.Stdout, os.Stderr)
	})
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(errOut, usage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("sandbox "+args[0], flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() { fmt.Fprint(errOut, usage) }
	dir := fs.String("dir", ".sandbox", "directory holding the sandbox's binaries, logs, cloud state, kubeconfig and sandbox.env")
	switch args[0] {
	case "up":
		nodes := fs.Int("nodes", 3, "ECS instances (and Nodes) of a new cloud")
		exit := fs.Bool("exit-after-ready", false, "stop everything and exit 0 once ready")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("up: unexpected arguments %v", fs.Args())
		}
		return sandbox.Up(ctx, sandbox.Options{Dir: *dir, Nodes: *nodes, ExitAfterReady: *exit, Out: out})
	case "add-node":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		_, err := sandbox.AddNode(ctx, *dir, out)
		return err
	case "remove-node":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("remove-node: want exactly one Node name, got %v", fs.Args())
		}
		return sandbox.RemoveNode(ctx, *dir, fs.Arg(0), out)
	case "status":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return sandbox.Status(ctx, *dir, out)
	case "-h", "--help", "help":
		fmt.Fprint(out, usage)
		return nil
	default:
		fmt.Fprint(errOut, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
