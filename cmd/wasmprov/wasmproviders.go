package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// eventComponent is the source component of the controller's Events, on
// Machines and on WasmProviders alike.
const eventComponent = "wasmprov-controller"

// wasmProviderFlags switch on the WasmProvider reconciler of `wasmprov
// controller`.
type wasmProviderFlags struct {
	enabled bool
	poll    time.Duration
}

func addWasmProviderFlags(fs *flag.FlagSet) *wasmProviderFlags {
	f := &wasmProviderFlags{}
	fs.BoolVar(&f.enabled, "wasmproviders", false,
		"also serve the providers of wasmprov.io/v1alpha1 WasmProvider resources (the CRD must be installed); -providers becomes optional")
	fs.DurationVar(&f.poll, "wasmprovider-poll-interval", time.Minute,
		"WasmProviders: how often image tags (pullPolicy Always) are resolved again and every WasmProvider reconciled")
	return f
}

// validate checks the WasmProvider flags against -providers: the
// controller needs at least one source of providers.
func (f *wasmProviderFlags) validate(providersDir string) error {
	if !f.enabled {
		if providersDir == "" {
			return errors.New("-providers DIR is required (or -wasmproviders)")
		}
		return nil
	}
	if f.poll <= 0 {
		return fmt.Errorf("-wasmprovider-poll-interval must be positive, got %v", f.poll)
	}
	return nil
}

// eventRecorder returns a recorder writing core/v1 Events to the API
// server (create, and patch for repeats the correlator folds into one
// Event), for Machines and WasmProviders. stop flushes and stops it.
func eventRecorder(ctx context.Context, kube kubernetes.Interface) (record.EventRecorder, func(), error) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return b.NewRecorder(controller.Scheme, corev1.EventSource{Component: eventComponent}), b.Shutdown, nil
}

// ociClients builds the OCI clients of WasmProvider image sources: one
// per pull Secret (its docker config's credentials), all with the access
// flags' CA, plain HTTP, redirect hosts, module size cap and pull
// timeout, all sharing the store of image entries — an artifact pulled
// with any credentials is in the store for every client, and pinning a
// digest back needs no pull.
type ociClients struct {
	opts oci.Options
	mu   sync.Mutex
	// byConfig caches a client per docker config (by its sha256, the
	// empty key being the controller's own credentials): the reconciler
	// asks at every reconcile, and a client keeps its connections.
	byConfig map[[sha256.Size]byte]*oci.Client
}

// maxCachedOCIClients bounds ociClients' cache; past it, the cache is
// emptied (rotated Secrets leave entries behind).
const maxCachedOCIClients = 64

// newOCIClients returns the client factory of the image flags. A store
// that cannot be opened is logged, and clients then pull without one, as
// for image entries.
func newOCIClients(f *imageFlags, logger *slog.Logger) (*ociClients, error) {
	opts, err := f.oci.options(logger, f.pullTimeout)
	if err != nil {
		return nil, err
	}
	if f.oci.store != "" {
		if opts.Store, err = oci.OpenStore(f.oci.store, f.oci.storeBytes); err != nil {
			logger.Error("cannot open the OCI store; image entries and WasmProvider images are pulled without it", "store", f.oci.store, "error", err)
		}
	}
	return &ociClients{opts: opts, byConfig: map[[sha256.Size]byte]*oci.Client{}}, nil
}

// New implements wasmprovider.Options.NewOCIClient. dockerConfig nil is
// the controller's own credentials (-docker-config); otherwise only the
// "auths" of the pull Secret's config are used. Its credsStore and
// credHelpers are dropped: they name programs the controller would run,
// and whoever writes a Secret must not choose what the controller
// executes.
func (c *ociClients) New(dockerConfig []byte) (*oci.Client, error) {
	var key [sha256.Size]byte
	var auths []byte
	if dockerConfig != nil {
		var cfg struct {
			Auths json.RawMessage `json:"auths"`
		}
		if err := json.Unmarshal(dockerConfig, &cfg); err != nil {
			return nil, fmt.Errorf("pull secret: .dockerconfigjson: %w", err)
		}
		if t := bytes.TrimSpace(cfg.Auths); len(t) == 0 || string(t) == "null" {
			cfg.Auths = json.RawMessage("{}")
		}
		var err error
		if auths, err = json.Marshal(map[string]json.RawMessage{"auths": cfg.Auths}); err != nil {
			return nil, fmt.Errorf("pull secret: %w", err)
		}
		key = sha256.Sum256(auths)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byConfig[key]; ok {
		return cl, nil
	}
	opts := c.opts
	if dockerConfig != nil {
		// oci.Options takes a file; it is read once, in oci.New.
		dir, err := os.MkdirTemp("", "wasmprov-pull-secret-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		opts.DockerConfig = filepath.Join(dir, "config.json")
		if err := os.WriteFile(opts.DockerConfig, auths, 0o600); err != nil {
			return nil, err
		}
	}
	cl, err := oci.New(opts)
	if err != nil {
		return nil, fmt.Errorf("pull secret: %w", err)
	}
	if len(c.byConfig) >= maxCachedOCIClients {
		clear(c.byConfig)
	}
	c.byConfig[key] = cl
	return cl, nil
}

// registryOptions are the registry options that let image entries (and,
// in `wasmprov controller`, WasmProviders) load and verify: the client of
// the controller's own credentials from c, so that every client shares one
// Store value — its pins (what serves, what may be rolled back to) live in
// that value, and a GC run by one client must see the pins of all — and
// the signature verifier of verify blocks.
func (c *ociClients) registryOptions(f *imageFlags, logger *slog.Logger) ([]registry.Option, error) {
	own, err := c.New(nil)
	if err != nil {
		return nil, err
	}
	return []registry.Option{registry.WithOCIClient(own), registry.WithImagePollInterval(f.poll),
		registry.WithImagePullTimeout(f.pullTimeout), registry.WithVerifier(signatureVerifier(own, logger)),
		registry.WithVerifyCheck(func(verify json.RawMessage, entry string) error {
			_, err := signaturePolicy(verify, entry)
			return err
		})}, nil
}

// wasmProviderReconciler builds the WasmProvider reconciler of `wasmprov
// controller`.
func wasmProviderReconciler(opts wasmprovider.Options, clients *ociClients, maxModuleBytes int64, poll time.Duration) (*wasmprovider.Reconciler, error) {
	opts.NewOCIClient = clients.New
	if clients.opts.Store != nil { // a nil *oci.Store in the interface would be called
		opts.Store = clients.opts.Store
	}
	opts.MaxModuleBytes = maxModuleBytes
	opts.PollInterval = poll
	r, err := wasmprovider.New(opts)
	if err != nil {
		return nil, fmt.Errorf("-wasmproviders: %w", err)
	}
	return r, nil
}
