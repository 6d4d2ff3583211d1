package main

import (
	"context"
	"fmt"
	"strings"
)

func init() {
	register("tag", "point a tag at a manifest already in the registry (no upload)", withHints(runTag))
}

var tagCommand = ociCommand{name: "tag", reads: readsRegistry, ok: argCount(2), want: "a source reference and a tag",
	refs: func(pos []string) []string { return []string{pos[0], tagTarget(pos[0], pos[1])} },
	usage: "usage: wasmprov tag REGISTRY/REPOSITORY(:TAG|@sha256:DIGEST) TAG\n" +
		"       wasmprov tag REGISTRY/REPOSITORY(:TAG|@sha256:DIGEST) REGISTRY/REPOSITORY:TAG\n\n" +
		"Points TAG at the manifest the source names, in the same repository: the manifest\n" +
		"is fetched, checked against its digest and put again under TAG, no blob is sent\n" +
		"and the digest stays, so its signatures hold for the new tag too. A tag in\n" +
		"another repository is refused: copying is a pull and a push. Prints the new tag\n" +
		"pinned to the digest."}

// tagTarget is the full reference of the tag argument dst: a bare tag is
// one in src's repository.
func tagTarget(src, dst string) string {
	if strings.Contains(dst, "/") {
		return dst
	}
	return repoOf(src) + ":" + dst
}

func runTag(ctx context.Context, args []string) error {
	c, pos, _, err := tagCommand.parse(args)
	if err != nil {
		return err
	}
	dst := tagTarget(pos[0], pos[1])
	d, err := c.Tag(ctx, pos[0], dst)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s\n", dst, d)
	return nil
}
