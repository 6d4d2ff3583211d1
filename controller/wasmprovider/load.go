// Loading: the spec's version into the Loader, and which loaded version
// serves.

package wasmprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// load loads the spec's version into the Loader under spec.cloudProvider.
func (r *Reconciler) load(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider, st *state) error {
	spec := &wp.Spec
	if err := checkSource(spec); err != nil {
		return err
	}
	policy, err := policyOf(spec)
	if err != nil {
		return err
	}
	cp := spec.CloudProvider
	switch src := spec.Source; {
	case src.Image != nil:
		c, err := r.ociClient(ctx, st, src.Image)
		if err != nil {
			return err
		}
		img := registry.Image{Ref: src.Image.Ref, PullPolicy: registry.PullPolicy(src.Image.PullPolicy), Policy: policy, Client: c}
		if spec.Verify != nil && len(spec.Verify.Raw) > 0 {
			img.Verify = append([]byte(nil), spec.Verify.Raw...)
		}
		return r.opts.Loader.RegisterImage(ctx, cp, img)
	case src.ConfigMap != nil:
		b, err := r.configMapModule(ctx, src.ConfigMap)
		if err != nil {
			return err
		}
		return r.opts.Loader.Register(ctx, cp, b, policy)
	default:
		fp := fmt.Sprintf("%s\x00%s\x00%s\x00%+v", cp, src.URL.URL, src.URL.SHA256, policy)
		r.mu.Lock()
		applied := st.urlApplied == fp
		r.mu.Unlock()
		if applied && r.servesSHA(cp, src.URL.SHA256) {
			return nil
		}
		b, err := r.urlModule(ctx, src.URL)
		if err != nil {
			return err
		}
		if err := r.opts.Loader.Register(ctx, cp, b, policy); err != nil {
			return err
		}
		r.mu.Lock()
		st.urlApplied = fp
		r.mu.Unlock()
		return nil
	}
}

func (r *Reconciler) servesSHA(cp, sha string) bool {
	want, err := hexSHA256(sha)
	if err != nil {
		return false
	}
	for _, s := range r.opts.Loader.Status() {
		if s.Name == cp {
			return s.Serving && s.SHA256 == want
		}
	}
	return false
}

// staleness is why the version serving cp is the last known good, or ""
// if it is what its source names now.
func (r *Reconciler) staleness(cp string) string {
	for _, s := range r.opts.Loader.Status() {
		if s.Name == cp && s.Stale {
			return s.StaleReason
		}
	}
	return ""
}

// ociClient returns the OCI client for an image source, made again only
// when its pull Secret's content changed.
func (r *Reconciler) ociClient(ctx context.Context, st *state, img *wasmprovv1alpha1.ImageSource) (*oci.Client, error) {
	dc, err := r.dockerConfig(ctx, img)
	if err != nil {
		return nil, err
	}
	if r.opts.NewOCIClient == nil {
		return nil, pullFailed(errors.New("no OCI client is configured for image sources"))
	}
	key := digest.FromBytes(dc).String()
	if dc == nil {
		key = "none"
	}
	r.mu.Lock()
	c := st.oci
	if st.ociKey != key {
		c = nil
	}
	r.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err = r.opts.NewOCIClient(dc)
	if err != nil {
		// The error may quote the Secret's content; say only what failed.
		return nil, pullFailed(errors.New("the pull secret's .dockerconfigjson could not be used for an OCI client"))
	}
	r.mu.Lock()
	st.oci, st.ociKey = c, key
	r.mu.Unlock()
	return c, nil
}

// serving returns the version serving cp if this WasmProvider loaded it;
// justLoaded records the serving version as loaded by it (the spec's
// version was just accepted).
func (r *Reconciler) serving(cp string, st *state, wp *wasmprovv1alpha1.WasmProvider, justLoaded bool) *wasmprovv1alpha1.Revision {
	var s *registry.Status
	for _, x := range r.opts.Loader.Status() {
		if x.Name == cp {
			s = &x
			break
		}
	}
	if s == nil || !s.Serving {
		return nil
	}
	d := s.ImageDigest
	if d == "" {
		d = "sha256:" + s.SHA256
	}
	since := metav1.NewTime(s.LoadedAt.Truncate(time.Second))
	r.mu.Lock()
	defer r.mu.Unlock()
	if justLoaded {
		ref := s.Image
		if ref == "" {
			ref = sourceRef(&wp.Spec.Source)
		}
		if old, ok := st.loaded[d]; !ok || old.Ref != ref || !old.Since.Equal(&since) {
			st.loaded[d] = wasmprovv1alpha1.Revision{Digest: d, Ref: ref, ModuleSHA256: s.SHA256, Since: since}
		}
	}
	rev, ok := st.loaded[d]
	if !ok {
		return nil
	}
	rev.Since = since
	return &rev
}
