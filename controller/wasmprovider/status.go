package wasmprovider

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/guesttext"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// outcome is what a reconcile found: what status and Events are made of.
type outcome struct {
	now metav1.Time
	// conflictWith names the WasmProvider serving the cloud provider when
	// this one lost the claim.
	conflictWith string
	// err is why the spec's version was refused; nil: it serves.
	err error
	// ref is the spec's source as status names it; verify whether the
	// spec asks for a signature.
	ref    string
	verify bool
	// serving is this WasmProvider's version serving, if any.
	serving *wasmprovv1alpha1.Revision
	// stale, when set, is why serving is the last known good rather than
	// what the spec's tag names now (registry.Status.StaleReason).
	stale string
}

// maxMessage bounds condition, rejection and Event messages.
const maxMessage = 1024

// trim makes s printable and cuts it to maxMessage bytes on a rune
// boundary. Refusal messages quote what a module names (the runtime makes
// its own text printable; this holds for every cause): kubectl prints
// conditions and Events as they are.
func trim(s string) string {
	s = guesttext.Printable(s)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// refused is an outcome's error in status terms.
type refused struct {
	stage        registry.Stage // "" when refused before any fetch
	reason       string
	message      string
	digest, sha  string
	eventReason  string
	wasRefusal   bool
	verifyFailed bool
}

// classify maps a refusal to its stage, condition reason and Event reason.
func classify(err error) refused {
	out := refused{message: trim(err.Error()), wasRefusal: true}
	var re *refusal
	var ve *registry.VersionError
	switch {
	case errors.As(err, &re):
		out.stage, out.reason = re.stage, re.reason
	case errors.Is(err, registry.ErrDuplicateProvider):
		// The name is served from elsewhere (the controller's provider
		// directory, or code): a claim lost, like one to another
		// WasmProvider.
		out.reason = wasmprovv1alpha1.ReasonConflict
	case errors.Is(err, registry.ErrInvalidImage):
		// Refused as it was read, before anything was fetched.
		out.reason = wasmprovv1alpha1.ReasonInvalidSpec
	case errors.As(err, &ve):
		out.stage, out.digest, out.sha = ve.Stage, ve.Digest, ve.ModuleSHA256
		if ve.Digest == "" && ve.ModuleSHA256 != "" {
			out.digest = "sha256:" + ve.ModuleSHA256
		}
		switch ve.Stage {
		case registry.StagePull:
			out.reason = wasmprovv1alpha1.ReasonPullFailed
		case registry.StageVerify:
			out.reason = wasmprovv1alpha1.ReasonVerifyFailed
		case registry.StageLoad:
			out.reason = wasmprovv1alpha1.ReasonInvalidModule
			if errors.Is(err, metadata.ErrIncompatible) {
				out.reason = wasmprovv1alpha1.ReasonIncompatible
			}
		case registry.StageSmoke:
			out.reason = wasmprovv1alpha1.ReasonSmokeTestFailed
		default:
			out.reason = wasmprovv1alpha1.ReasonLoadFailed
		}
	default:
		out.reason = wasmprovv1alpha1.ReasonLoadFailed
	}
	switch {
	case out.reason == wasmprovv1alpha1.ReasonInvalidSpec, out.reason == wasmprovv1alpha1.ReasonConflict:
		out.eventReason = out.reason
	case out.stage == registry.StagePull:
		out.eventReason = wasmprovv1alpha1.ReasonPullFailed
	case out.stage == registry.StageVerify:
		out.eventReason = wasmprovv1alpha1.ReasonVerifyFailed
	default:
		out.eventReason = "Rejected"
	}
	return out
}

// desiredStatus is wp's status once o is taken into account. It is a
// function of wp's current status and o alone, so a retry of the same
// refusal yields the same status and writes nothing.
func desiredStatus(wp *wasmprovv1alpha1.WasmProvider, o outcome) wasmprovv1alpha1.WasmProviderStatus {
	st := *wp.Status.DeepCopy()
	gen := wp.Generation
	st.ObservedGeneration = gen
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason,
			Message: trim(msg), ObservedGeneration: gen, LastTransitionTime: o.now})
	}
	if o.conflictWith != "" || o.err == nil && o.serving == nil && o.ref == "" {
		msg := fmt.Sprintf("cloud provider %q is served by WasmProvider %q, the older claim", wp.Spec.CloudProvider, o.conflictWith)
		if o.conflictWith == "" {
			msg = fmt.Sprintf("cloud provider %q is not claimed", wp.Spec.CloudProvider)
		}
		meta.RemoveStatusCondition(&st.Conditions, wasmprovv1alpha1.ConditionPulled)
		meta.RemoveStatusCondition(&st.Conditions, wasmprovv1alpha1.ConditionVerified)
		set(wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonConflict, msg)
		set(wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonConflict, msg)
		st.Serving = nil
		return st
	}
	notRequired := func() {
		set(wasmprovv1alpha1.ConditionVerified, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNotRequired, "the spec asks for no signature")
	}
	verified := func() {
		if o.verify {
			set(wasmprovv1alpha1.ConditionVerified, metav1.ConditionTrue, wasmprovv1alpha1.ReasonVerified, "the artifact satisfies spec.verify")
		} else {
			notRequired()
		}
	}
	var rf refused
	if o.err != nil {
		rf = classify(o.err)
	}
	switch {
	case o.err == nil && o.stale != "" && o.serving != nil:
		set(wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonStale,
			o.stale+"; serving "+o.serving.Digest+", what the tag last resolved to, from the local store")
		verified()
	case o.err == nil:
		msg := "fetched " + o.ref
		if o.serving != nil {
			msg += " (" + o.serving.Digest + ")"
		}
		set(wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled, msg)
		verified()
	case rf.stage == registry.StagePull:
		set(wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, rf.reason, rf.message)
		if o.verify {
			set(wasmprovv1alpha1.ConditionVerified, metav1.ConditionUnknown, rf.reason, "not verified: the artifact was not fetched")
		} else {
			notRequired()
		}
	case rf.stage == registry.StageVerify:
		set(wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled, "fetched "+o.ref+digestNote(rf.digest))
		set(wasmprovv1alpha1.ConditionVerified, metav1.ConditionFalse, wasmprovv1alpha1.ReasonVerifyFailed, rf.message)
	case rf.stage == registry.StageLoad || rf.stage == registry.StageSmoke:
		set(wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled, "fetched "+o.ref+digestNote(rf.digest))
		verified()
	default:
		// Refused before anything was fetched (an invalid spec), or for a
		// cause with no stage: what Pulled and Verified said of an
		// earlier spec no longer holds.
		set(wasmprovv1alpha1.ConditionPulled, metav1.ConditionUnknown, rf.reason, "not fetched: "+rf.message)
		set(wasmprovv1alpha1.ConditionVerified, metav1.ConditionUnknown, rf.reason, "not verified: "+rf.message)
	}

	st.Serving = nil
	if o.serving != nil {
		rev := *o.serving
		st.Serving = &rev
	}
	if o.serving != nil {
		set(wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing, o.serving.Digest+" serves "+o.serving.Ref)
		st.Revisions = addRevision(st.Revisions, *o.serving, int(wp.Spec.RevisionHistoryLimit))
	}
	switch {
	case o.err == nil && o.serving != nil && o.stale != "":
		set(wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonStale,
			"the last known good "+o.serving.Digest+" serves; the tag cannot be resolved now: "+o.stale)
	case o.err == nil && o.serving != nil:
		set(wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse, wasmprovv1alpha1.ReasonUpToDate, "the spec's version serves")
	case o.err == nil:
		set(wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonNotLoaded, "the spec's version was accepted but does not serve")
		set(wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNotLoaded, "the spec's version was accepted but does not serve")
	case o.serving != nil:
		set(wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPreviousServing, rf.reason+": "+rf.message)
	default:
		set(wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, rf.reason, rf.message)
		set(wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNothingServing, rf.reason+": "+rf.message)
	}
	if o.err != nil {
		rej := &wasmprovv1alpha1.Rejection{Digest: rf.digest, Ref: o.ref, Reason: rf.reason, Message: rf.message, Time: o.now}
		if old := st.LastRejected; old != nil && old.Digest == rej.Digest && old.Ref == rej.Ref && old.Reason == rej.Reason && old.Message == rej.Message {
			// The same refusal again (a retry): its time stays the first
			// one's, so the retry writes nothing.
			rej.Time = old.Time
		}
		st.LastRejected = rej
	}
	return st
}

func digestNote(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// addRevision puts rev first in revs, dropping an older entry of the same
// digest, and keeps at most limit (0: 5).
func addRevision(revs []wasmprovv1alpha1.Revision, rev wasmprovv1alpha1.Revision, limit int) []wasmprovv1alpha1.Revision {
	if limit <= 0 {
		limit = 5
	}
	if len(revs) > 0 && revs[0].Digest == rev.Digest && revs[0].Ref == rev.Ref && revs[0].ModuleSHA256 == rev.ModuleSHA256 {
		// Already the newest: keep its time, the one it first served at.
		if len(revs) > limit {
			revs = revs[:limit]
		}
		return revs
	}
	out := []wasmprovv1alpha1.Revision{rev}
	for _, r := range revs {
		if r.Digest != rev.Digest && len(out) < limit {
			out = append(out, r)
		}
	}
	return out
}

func statusEqual(a, b *wasmprovv1alpha1.WasmProviderStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func equalSpec(a, b *wasmprovv1alpha1.WasmProviderSpec) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// inRevisions reports whether d is one of revs' digests.
func inRevisions(revs []wasmprovv1alpha1.Revision, d string) bool {
	for _, r := range revs {
		if r.Digest == d {
			return true
		}
	}
	return false
}

// events records, as the leader, what changed between wp's status and
// want: a version loaded, swapped or rolled back, a new refusal, a new
// conflict.
func (r *Reconciler) events(wp *wasmprovv1alpha1.WasmProvider, want *wasmprovv1alpha1.WasmProviderStatus, o outcome) {
	old := &wp.Status
	if o.conflictWith != "" {
		if c := meta.FindStatusCondition(old.Conditions, wasmprovv1alpha1.ConditionReady); c == nil || c.Reason != wasmprovv1alpha1.ReasonConflict {
			r.recorder.Eventf(wp, corev1.EventTypeWarning, wasmprovv1alpha1.ReasonConflict,
				"cloud provider %q is served by WasmProvider %q, the older claim", wp.Spec.CloudProvider, o.conflictWith)
		}
		return
	}
	if o.err != nil {
		rej, prev := want.LastRejected, old.LastRejected
		if prev == nil || prev.Digest != rej.Digest || prev.Ref != rej.Ref || prev.Reason != rej.Reason || prev.Message != rej.Message {
			r.recorder.Event(wp, corev1.EventTypeWarning, classify(o.err).eventReason, rej.Message)
		}
	}
	if want.Serving == nil {
		return
	}
	switch oldD, newD := servingDigest(old), want.Serving.Digest; {
	case oldD == "":
		r.recorder.Eventf(wp, corev1.EventTypeNormal, "Loaded", "%s serves %s", newD, want.Serving.Ref)
	case oldD == newD:
	case inRevisions(old.Revisions, newD):
		r.recorder.Eventf(wp, corev1.EventTypeNormal, "RolledBack", "%s -> %s (a previous revision)", oldD, newD)
	default:
		r.recorder.Eventf(wp, corev1.EventTypeNormal, "Swapped", "%s -> %s", oldD, newD)
	}
}

func servingDigest(s *wasmprovv1alpha1.WasmProviderStatus) string {
	if s.Serving == nil {
		return ""
	}
	return s.Serving.Digest
}

// finish pins the revisions, writes status and Events as the leader, and
// turns the outcome into a result.
func (r *Reconciler) finish(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider, st *state, o outcome) (string, error) {
	want := desiredStatus(wp, o)
	r.pin(wp.Name, st, want.Revisions)
	if r.opts.IsLeader() {
		// Events after the write: a write that fails is retried with the
		// old status still in place, and the retry records them then,
		// once.
		if err := r.writeStatus(ctx, wp, st, o); err != nil {
			return resultError, err
		}
		r.events(wp, &want, o)
	}
	switch {
	case o.conflictWith != "":
		return resultConflict, nil
	case o.err != nil:
		return resultRefused, o.err
	}
	return resultOK, nil
}

// writeStatus writes the status o gives wp if it differs from the one
// the API server has, re-reading the object on a conflict.
func (r *Reconciler) writeStatus(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider, st *state, o outcome) error {
	cur := wp
	seen := []string{wp.ResourceVersion}
	for attempt := 0; ; attempt++ {
		want := desiredStatus(cur, o)
		if statusEqual(&cur.Status, &want) {
			return nil
		}
		upd := cur.DeepCopy()
		upd.Status = want
		out, err := r.opts.Client.UpdateStatus(ctx, upd)
		if err == nil {
			r.metrics.statusWrites.Inc()
			r.mu.Lock()
			st.written = out.DeepCopy()
			for _, rv := range seen {
				st.stale[rv] = struct{}{}
			}
			r.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return fmt.Errorf("writing the status of WasmProvider %s: %w", wp.Name, err)
		}
		cur, err = r.opts.Client.Get(ctx, wp.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("re-reading WasmProvider %s after a conflict: %w", wp.Name, err)
		}
		seen = append(seen, cur.ResourceVersion)
	}
}
