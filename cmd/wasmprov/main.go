// Command wasmprov loads machine-controller cloud providers compiled to
// WebAssembly and runs them: call one method, inspect a module, run the
// demo, serve a directory of providers, reconcile Machines.
//
// Each subcommand lives in a file of its own and registers itself in init.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

// stdout is where commands print results; tests replace it.
var stdout io.Writer = os.Stdout

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: wasmprov COMMAND [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'wasmprov COMMAND -h' for a command's flags, 'wasmprov --version' for the version.\n")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// runMain runs the command args name and returns the exit status: 0 on
// success and for help asked for (-h, --help, help), 1 when the command
// fails, 2 for a command line that names no known command.
func runMain(ctx context.Context, args []string) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "--version", "-version":
		printVersion()
		return 0
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		args = []string{args[1], "--help"} // wasmprov help COMMAND
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "wasmprov: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "wasmprov %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
