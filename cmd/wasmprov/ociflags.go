package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

// imageFlags are the flags of the commands that serve a provider
// directory (serve, controller) for its image entries
// ("NAME.provider.yaml"): the store and registry access of the OCI
// commands (addOCIFlags, whose names and defaults they share) and how
// often tags are resolved again.
type imageFlags struct {
	oci         ociFlags // its log and timeout are unused: the command's logger and pullTimeout apply
	poll        time.Duration
	pullTimeout time.Duration
}

func addImageFlags(fs *flag.FlagSet) *imageFlags {
	f := &imageFlags{}
	f.oci.registerAccess(fs, "image entries: ")
	fs.DurationVar(&f.poll, "image-poll-interval", time.Minute, "image entries: how often tags (pullPolicy Always) are resolved again and failed pulls retried; 0 disables")
	fs.DurationVar(&f.pullTimeout, "image-pull-timeout", 5*time.Minute, "image entries: bound on one resolve or pull")
	return f
}

// registryOptions returns the registry options that let image entries
// load, and verify: an entry's verify block is a signature policy
// (runtime/signature; relative key and trusted-root files are relative to
// dir, the provider directory) checked against the artifact's manifest
// digest before the module may load. A store that cannot be opened is logged and image entries then
// pull without one (a digest is fetched again, and cannot load offline):
// a directory of files alone must not fail for it.
func (f *imageFlags) registryOptions(logger *slog.Logger, dir string) ([]registry.Option, error) {
	o := f.oci
	opts, err := o.options(logger, f.pullTimeout)
	if err != nil {
		return nil, err
	}
	if o.store != "" {
		if opts.Store, err = oci.OpenStore(o.store, o.storeBytes); err != nil {
			logger.Error("cannot open the OCI store; image entries are pulled without it", "store", o.store, "error", err)
		}
	}
	c, err := oci.New(opts)
	if err != nil {
		return nil, err
	}
	return []registry.Option{registry.WithOCIClient(c), registry.WithImagePollInterval(f.poll),
		registry.WithImagePullTimeout(f.pullTimeout), registry.WithVerifier(signatureVerifier(c, dir, logger))}, nil
}

// signatureVerifier checks an image entry's artifact against the
// signature policy of its verify block.
func signatureVerifier(c *oci.Client, dir string, logger *slog.Logger) registry.Verifier {
	return func(ctx context.Context, name, ref, dgst string, doc json.RawMessage) error {
		p, err := signature.ParsePolicy(doc, dir)
		if err != nil {
			return fmt.Errorf("provider %s: verify: %w", name, err)
		}
		res, err := signature.Verify(ctx, c, repoOf(ref)+"@"+dgst, p)
		if err != nil {
			return err
		}
		logger.Info("signature verified", "provider", name, "digest", dgst, "result", fmt.Sprint(res))
		return nil
	}
}
