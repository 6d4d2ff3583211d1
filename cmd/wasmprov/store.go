package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

func init() {
	register("store", "list (ls) or remove (rm) the artifacts of the local content store", runStore)
}

const storeUsage = "usage: wasmprov store ls [--store DIR] [-q]\n" +
	"       wasmprov store rm [--store DIR] DIGEST...\n\n" +
	"ls lists the Wasm artifacts of the local content store, most recently used first:\n" +
	"the manifest digest (what pull, pins and rm take), the module's title and version,\n" +
	"the module's sha256 (what inspect, annotate and policies show), its size, the\n" +
	"referrers (signatures) kept with it for verifying offline, and when the store\n" +
	"last wrote or served it. -q prints the manifest digests only.\n\n" +
	"rm removes manifests (DIGEST, or REPOSITORY@DIGEST); the module and config only\n" +
	"they referenced go at the next garbage collection of the store (any pull, push\n" +
	"or load that stores something), once a minute old."

func runStore(ctx context.Context, args []string) error {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "ls", "list":
		return runStoreList(args)
	case "rm", "remove":
		return runStoreRemove(args)
	case "-h", "-help", "--help":
		fmt.Fprintln(stdout, storeUsage)
		return flag.ErrHelp
	}
	fmt.Fprintln(stderr, storeUsage)
	if sub == "" {
		return errors.New("want ls or rm")
	}
	return fmt.Errorf("unknown subcommand %q: want ls or rm", sub)
}

// storeFlags parses the flags of a store subcommand: the store only.
func storeFlags(name string, args []string, extra func(fs *flag.FlagSet)) (*oci.Store, []string, error) {
	fs := flag.NewFlagSet("store "+name, flag.ContinueOnError)
	var f ociFlags
	f.registerStoreDir(fs, "")
	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), storeUsage+"\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if f.store == "" {
		return nil, nil, errors.New("--store: want the store's directory")
	}
	// Opening creates an empty store where there was none, which lists
	// as empty: what a user who has pulled nothing yet expects.
	s, err := oci.OpenStore(f.store, 0)
	return s, pos, err
}

func runStoreList(args []string) error {
	var quiet bool
	s, pos, err := storeFlags("ls", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&quiet, "q", false, "print the manifest digests only")
	})
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fmt.Fprintln(stderr, storeUsage)
		return errors.New("store ls: want no arguments")
	}
	list, err := s.List()
	if err != nil {
		return err
	}
	if quiet {
		for _, a := range list {
			fmt.Fprintln(stdout, a.Digest)
		}
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "MANIFEST DIGEST\tTITLE\tVERSION\tMODULE SHA256\tSIZE\tREFERRERS\tLAST USED")
	for _, a := range list {
		size := humanBytes(a.Size)
		if !a.Complete {
			size += " (blobs missing: pulled again on use)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", a.Digest, orDash(a.Title), orDash(a.Version), a.Module, size,
			a.Referrers, a.LastUsed.Local().Format("2006-01-02 15:04:05"))
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func runStoreRemove(args []string) error {
	s, pos, err := storeFlags("rm", args, nil)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, storeUsage)
		return errors.New("store rm: want one or more manifest digests")
	}
	var errs []error
	for _, arg := range pos {
		d, err := oci.ParseDigest(arg)
		if err == nil {
			err = s.Remove(d)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "removed %s\n", d)
	}
	return errors.Join(errs...)
}
