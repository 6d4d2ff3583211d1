package registry

import (
	"encoding/json"
	"log/slog"
	"os"
	"time"

	"github.com/wasmprov/wasmprov/runtime/oci"
	"k8s.io/utils/clock"
)

// Option configures New.
type Option func(*config)

type config struct {
	logger        *slog.Logger
	onEvent       func(Event)
	debounce      time.Duration
	smoke         SmokeTest
	smokeTimeout  time.Duration
	drainTimeout  time.Duration
	dirPoll       time.Duration
	readFile      func(string) ([]byte, error) // a seam for tests (export_test.go)
	prewarmToLoad bool
	clock         clock.WithTickerAndDelayedExecution

	oci              *oci.Client
	verifier         Verifier
	verifyCheck      func(json.RawMessage, string) error
	imagePoll        time.Duration
	imagePullTimeout time.Duration
}

func defaultConfig() config {
	return config{
		logger:        slog.Default(),
		debounce:      150 * time.Millisecond,
		smoke:         DefaultSmokeTest,
		smokeTimeout:  10 * time.Second,
		dirPoll:       time.Second,
		readFile:      os.ReadFile,
		prewarmToLoad: true,
		clock:         clock.RealClock{},

		imagePoll:        time.Minute,
		imagePullTimeout: 5 * time.Minute,
	}
}

// WithLogger sets the registry's logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithEventHandler installs fn, called for every Event. It runs on the
// registry's goroutines: it must be quick and must not call back into the
// registry's loading methods.
func WithEventHandler(fn func(Event)) Option {
	return func(c *config) { c.onEvent = fn }
}

// WithDebounce sets how long the watch waits for a file to stay quiet
// before loading it (default 150ms).
func WithDebounce(d time.Duration) Option { return func(c *config) { c.debounce = d } }

// WithSmokeTest replaces DefaultSmokeTest; nil disables the smoke call.
func WithSmokeTest(t SmokeTest) Option { return func(c *config) { c.smoke = t } }

// WithSmokeTimeout bounds the smoke call (default 10s). A module whose
// smoke call hangs is interrupted and rejected.
func WithSmokeTimeout(d time.Duration) Option {
	return func(c *config) { c.smokeTimeout = d }
}

// WithDrainTimeout bounds how long a replaced version may finish its calls
// before it is closed anyway (default: its policy's call timeout plus 10s,
// so no call that respects its deadline is cut short).
func WithDrainTimeout(d time.Duration) Option {
	return func(c *config) { c.drainTimeout = d }
}

// WithDirPollInterval sets how often a watched directory that disappeared
// is looked for again (default 1s).
func WithDirPollInterval(d time.Duration) Option {
	return func(c *config) { c.dirPoll = d }
}

// WithPrewarmToLoad controls whether a new version is pre-warmed with as
// many instances as the version it replaces has live (capped by its pool
// size), so a swap under load makes no caller wait for an instantiation
// (default true).
func WithPrewarmToLoad(on bool) Option {
	return func(c *config) { c.prewarmToLoad = on }
}

// WithOCIClient sets the client image entries ("<name>.provider.yaml") are
// pulled with; its store makes a digest pulled once load without the
// network. Without one, an image entry is refused (ErrNoOCIClient).
func WithOCIClient(c *oci.Client) Option { return func(cfg *config) { cfg.oci = c } }

// WithVerifier installs the hook that checks an image entry's artifact
// when the entry has a verify block. Without one, such an entry is refused
// (ErrNoVerifier): never served unverified.
func WithVerifier(v Verifier) Option { return func(c *config) { c.verifier = v } }

// WithVerifyCheck installs the check of a verify block as it is read —
// an image entry parsed, an Image registered — before anything is pulled:
// a block the Verifier could never accept (a misspelt field, a missing
// key file) is then an invalid entry (ErrInvalidImage), said at once,
// not a verification that fails after every pull. entry is the image
// entry's path ("" for an Image registered by code), for file names
// relative to it.
func WithVerifyCheck(check func(verify json.RawMessage, entry string) error) Option {
	return func(c *config) { c.verifyCheck = check }
}

// WithImagePollInterval sets how often the watch reads image entries
// again (default 1m): a tag with pullPolicy Always is resolved again, a
// failed pull retried. 0 or less disables polling.
func WithImagePollInterval(d time.Duration) Option { return func(c *config) { c.imagePoll = d } }

// WithImagePullTimeout bounds one resolve or pull of an image entry
// (default 5m), so an unresponsive registry cannot hold a reload forever.
func WithImagePullTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.imagePullTimeout = d
		}
	}
}

// WithClock sets the clock the registry's own timers run on (default
// clock.RealClock{}): the watch's debounce (WithDebounce), the poll for a
// watched directory that disappeared (WithDirPollInterval) and the image
// poll (WithImagePollInterval). A test passes a fake clock
// (k8s.io/utils/clock/testing) and steps it instead of waiting. Deadlines
// (smoke call, drain, pulls) and the times in Events and Status stay on
// the wall clock. nil keeps the default.
func WithClock(c clock.WithTickerAndDelayedExecution) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}
