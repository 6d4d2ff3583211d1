package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/oci"
)

// Image is a provider served from an OCI artifact and registered by code
// (RegisterImage), as a Kubernetes controller does for a WasmProvider
// resource: the same resolve, pull, verify, prepare and swap as an image
// entry file, with the fields of one.
type Image struct {
	// Ref is registry/repository:tag or registry/repository@sha256:….
	Ref string
	// PullPolicy: "" means PullAlways for a tag, PullIfNotPresent for a
	// digest.
	PullPolicy PullPolicy
	// Policy the version runs under (nil: the runtime's default).
	Policy *runtime.Policy
	// Verify is the signature policy (an image entry's verify block) as
	// JSON, handed to the registry's Verifier; nil: no verification.
	Verify json.RawMessage
	// Client pulls the artifact, for per-provider credentials; nil: the
	// registry's WithOCIClient. Clients sharing one oci.Store share its
	// content.
	Client *oci.Client
}

// Stage says which step refused a version.
type Stage string

// The steps a version goes through, in order.
const (
	StagePull   Stage = "pull"   // resolving the reference, fetching the artifact
	StageVerify Stage = "verify" // the Verifier
	StageLoad   Stage = "load"   // metadata, compile, ABI checks, instantiation
	StageSmoke  Stage = "smoke"  // the smoke call
)

// VersionError is the error RegisterImage (and Register) return when a
// version was refused: which step refused it and what it was. The
// previous version, if any, keeps serving.
type VersionError struct {
	Provider string
	Stage    Stage
	// Ref is the image as given; Digest the manifest digest it resolved
	// to (empty when the pull failed before resolving); ModuleSHA256 the
	// module's digest (hex), once known.
	Ref, Digest, ModuleSHA256 string
	Err                       error
}

// Error names the provider once (the runtime's load errors name it
// already) and then the cause; it holds no timestamp or duration, so the
// same refusal reads the same every time, and nothing of a credential
// (the OCI client never puts one in an error).
func (e *VersionError) Error() string {
	prefix := fmt.Sprintf("provider %q: ", e.Provider)
	msg := e.Err.Error()
	if strings.HasPrefix(msg, prefix) {
		return msg
	}
	return prefix + msg
}
func (e *VersionError) Unwrap() error { return e.Err }

// ErrPull: the artifact could not be resolved or fetched.
var ErrPull = errors.New("pull failed")

// RegisterImage loads (or hot-replaces) the provider name from img. A
// name registered by code (Register, RegisterFS, RegisterImage) may be
// re-registered with another source; a name from a directory may not.
// Calling it again with the same Image is cheap: a digest already serving
// is not reloaded, a tag is resolved again only with PullAlways. A refused
// version returns a *VersionError and leaves the previous one serving.
//
// img goes through the same path as an image entry (pullImage): Client
// nil means the registry's WithOCIClient (neither: ErrNoOCIClient), a
// Verify block needs WithVerifier (ErrNoVerifier), and an artifact this
// name verified before, under the same block, is taken again (a
// rollback) without the Verifier, nor the network if the store holds it.
// An invalid reference or pull policy is refused before anything changes:
// a *VersionError at StagePull wrapping ErrInvalidImage.
func (r *Registry) RegisterImage(ctx context.Context, name string, img Image) error {
	// The source Reload reads must not change when the caller reuses its
	// Image: the verify block is copied, the policy's fields too (its
	// slices and maps are shared, as Register shares them).
	img.Verify = slices.Clone(img.Verify)
	if img.Policy != nil {
		p := *img.Policy
		img.Policy = &p
	}
	norm, _, err := checkImage(img)
	if err != nil {
		verr := &VersionError{Provider: name, Stage: StagePull, Ref: img.Ref, Err: fmt.Errorf("%w: %w", ErrInvalidImage, err)}
		r.mu.Lock()
		e := r.entries[name]
		r.mu.Unlock()
		r.reject(e, name, source{kind: fromImage, img: img}, "", verr, time.Now())
		return verr
	}
	return r.register(ctx, name, source{kind: fromImage, img: norm})
}
