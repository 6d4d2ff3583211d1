package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	goruntime "runtime"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime"
)

func init() {
	register("version", "print the host's version, the ABI versions it accepts and the engines compiled in", runVersion)
}

func runVersion(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov version (or wasmprov --version)\n\n"+
			"Prints what decides which modules this binary runs: the host version (a module's\n"+
			"minHostVersion is checked against it), the ABI version a module must implement,\n"+
			"and the engines compiled in ($"+runtime.EngineEnv+" chooses among them).")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errors.New("want no arguments")
	}
	printVersion()
	return nil
}

func printVersion() {
	engines := make([]string, 0, 2)
	for _, e := range runtime.Engines() {
		name := string(e)
		if e == runtime.EngineWazero {
			name += " (default)"
		}
		engines = append(engines, name)
	}
	// One ABI version today; the import module's name carries it, so a
	// host accepting more would list each with its module.
	fmt.Fprintf(stdout, "wasmprov %s\nabi:     %d (import module %s)\nengines: %s\ngo:      %s %s/%s\n",
		runtime.Version, abi.Version, abi.ModuleName, strings.Join(engines, ", "),
		goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}
