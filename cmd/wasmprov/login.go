package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

func init() {
	register("login", "check credentials against a registry and keep them in the Docker config", withHints(runLogin))
	register("logout", "remove a registry's credentials from the Docker config", runLogout)
}

func runLogin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	f := addOCIFlags(fs, readsRegistry)
	user := fs.String("u", "", "the user name (required)")
	password := fs.String("p", "", "the password or token (visible to other users in the process list: prefer --password-stdin)")
	fromStdin := fs.Bool("password-stdin", false, "read the password or token from stdin (one line)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov login REGISTRY -u USER (-p PASSWORD | --password-stdin)\n\n"+
			"Checks the credentials against the registry and, if it accepts them, writes\n"+
			"them to the Docker config (--docker-config, default $DOCKER_CONFIG/config.json or\n"+
			"~/.docker/config.json) as docker login does: through its credential helper if\n"+
			"it names one, else in the file. Every wasmprov command, docker, oras and cosign\n"+
			"then use them.\n\nflags:")
		printFlags(fs, f.hidden)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *user == "" || (*password != "") == *fromStdin {
		fs.Usage()
		return errors.New("want one registry, -u USER, and either -p PASSWORD or --password-stdin")
	}
	host := registryHost(pos[0])
	pw := *password
	if *fromStdin {
		if pw, err = readPassword(stdin); err != nil {
			return err
		}
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	config, err := c.Login(ctx, host, *user, pw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "logged in to %s as %s (credentials in %s)\n", host, *user, config)
	return nil
}

// readPassword reads the first line of r: what `echo $TOKEN |` and a
// file with a final newline give.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--password-stdin: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("--password-stdin: stdin held no password")
	}
	return line, nil
}

// registryHost is the host of a registry as docker login takes it: a
// URL's scheme and path dropped (https://ghcr.io/ is ghcr.io).
func registryHost(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	host, _, _ := strings.Cut(s, "/")
	return host
}

func runLogout(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("logout", flag.ContinueOnError)
	var f ociFlags
	fs.StringVar(&f.dockerConfig, "docker-config", "", "the Docker config.json (default $DOCKER_CONFIG/config.json or ~/.docker/config.json)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov logout REGISTRY\n\n"+
			"Removes the registry's credentials from the Docker config (or its credential\n"+
			"helper). Not logged in is no error.\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("want one registry")
	}
	host := registryHost(pos[0])
	c, err := oci.New(oci.Options{DockerConfig: f.dockerConfig})
	if err != nil {
		return err
	}
	config, had, err := c.Logout(ctx, host)
	if err != nil {
		return err
	}
	if !had {
		fmt.Fprintf(stdout, "not logged in to %s (%s)\n", host, config)
		return nil
	}
	fmt.Fprintf(stdout, "logged out of %s (%s)\n", host, config)
	return nil
}
