// Pinning: a WasmProvider's status.revisions kept in the content store.

package wasmprovider

import (
	"github.com/opencontainers/go-digest"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
)

// pin pins revs' digests under the WasmProvider's owner, when they
// changed.
func (r *Reconciler) pin(name string, st *state, revs []wasmprovv1alpha1.Revision) {
	if r.opts.Store == nil {
		return
	}
	var ds []string
	for _, rv := range revs {
		// A ConfigMap or URL version is named by its module's digest and
		// is no manifest of the store: nothing to keep for it.
		if rv.Digest != "sha256:"+rv.ModuleSHA256 {
			ds = append(ds, rv.Digest)
		}
	}
	r.mu.Lock()
	same := equalStrings(st.pinned, ds)
	st.pinned = ds
	r.mu.Unlock()
	if same {
		return
	}
	var dd []digest.Digest
	for _, d := range ds {
		dd = append(dd, digest.Digest(d))
	}
	r.opts.Store.Pin(pinOwner(name), dd...)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func pinOwner(name string) string { return "wasmprovider/" + name }
