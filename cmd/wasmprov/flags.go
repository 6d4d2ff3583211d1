package main

import (
	"errors"
	"flag"
	"io"
	"os"
)

// stderr is where commands print diagnostics and usage after a mistake;
// tests replace it.
var stderr io.Writer = os.Stderr

// parseFlags parses args into fs. Asked for help (-h, -help, --help), it
// prints the usage to stdout and returns flag.ErrHelp, which main turns
// into exit status 0: help that was asked for is a result, not an error.
// After a mistake it prints the usage to stderr and returns the error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package prints the usage itself, to one writer, whatever
	// the cause: silence it and print to the writer the cause calls for.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
	case err != nil:
		fs.SetOutput(stderr)
		fs.Usage()
	default:
		fs.SetOutput(stderr)
	}
	return err
}

// stdoutName is the output file name that means standard output, as it
// does for oras, cosign, tar and curl.
const stdoutName = "-"

// writeOutput writes b to the file name (atomically: writeFileAtomic),
// or to stdout for "-".
func writeOutput(name string, b []byte) error {
	if name == stdoutName {
		_, err := stdout.Write(b)
		return err
	}
	return writeFileAtomic(name, b)
}

// resultWriter is where a command that writes its output to the file
// name prints its result lines: stderr when the output itself goes to
// stdout, which must carry nothing else to be piped.
func resultWriter(name string) io.Writer {
	if name == stdoutName {
		return stderr
	}
	return stdout
}

// stdin is what --password-stdin reads; tests replace it.
var stdin io.Reader = os.Stdin
