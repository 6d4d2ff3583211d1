package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
)

func init() {
	register("discover", "list what is attached to an artifact in its registry: signatures and other referrers", withHints(runDiscover))
}

func runDiscover(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	f := addSignFlags(fs, readsRegistry)
	artifactType := fs.String("artifact-type", "", "list only referrers of this artifact type (e.g. application/vnd.dev.sigstore.bundle.v0.3+json)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov discover REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]\n\n"+
			"Prints the artifact's manifest digest, then each referrer the registry lists for\n"+
			"it (through the referrers API, or the sha256-<hex> tag of registries without one):\n"+
			"its manifest digest, artifact type and size. Signatures made by 'wasmprov sign'\n"+
			"are of type application/vnd.dev.sigstore.bundle.v0.3+json. Nothing is fetched\n"+
			"or verified: 'wasmprov verify' does that.\n\nflags:")
		printFlags(fs, f.hidden)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("want one reference")
	}
	if err := needTagOrDigest(pos[0]); err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	attached, subject, err := c.Discover(ctx, pos[0], *artifactType)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s\n", repoOf(pos[0]), subject)
	if len(attached) == 0 {
		fmt.Fprintln(stdout, "(no referrers)")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "REFERRER DIGEST\tARTIFACT TYPE\tSIZE")
	for _, a := range attached {
		fmt.Fprintf(w, "%s\t%s\t%d\n", a.Digest, orDash(a.ArtifactType), a.Size)
	}
	return w.Flush()
}
