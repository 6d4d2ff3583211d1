package runtime

import (
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime/internal/resultcache"
)

// What load and inspect learn of a module is kept in the result cache
// (runtime/internal/resultcache): this file is the runtime's side of it,
// between a ModuleInfo and an entry.

// cachedEntry is the cache entry of the module sum, nil on a miss; an
// entry that does not read back is a miss too (logged: the cache only
// saves work).
func (r *Runtime) cachedEntry(sum string) *resultcache.Entry {
	e, err := r.results.Get(sum)
	if err != nil {
		r.cfg.logger.Debug("inspect: cached result ignored", "sha256", sum, "error", err)
		return nil
	}
	return e
}

// remember keeps what info says of its module: that it passed the limits
// named prechecked (if not ""), and the values its export calls read,
// added to what the entry old (nil if none) holds. A failure to write is
// logged and otherwise ignored: the inspect or load itself succeeded.
func (r *Runtime) remember(info *ModuleInfo, prechecked string, old *resultcache.Entry) {
	if !r.results.Enabled() {
		return
	}
	e := resultcache.Entry{SHA256: info.SHA256, Prechecked: prechecked}
	if old != nil {
		e.ABIVersion, e.ABIVersionKnown = old.ABIVersion, old.ABIVersionKnown
		e.Declared, e.DeclaredKnown = old.Declared, old.DeclaredKnown
		if e.Prechecked == "" {
			e.Prechecked = old.Prechecked
		}
	}
	if info.ABIVersionFrom == FromExportCall {
		e.ABIVersion, e.ABIVersionKnown = info.ABIVersion, true
	}
	if info.DeclaredFrom == FromExportCall {
		e.Declared, e.DeclaredKnown = uint64(info.Declared), true
	}
	if old != nil {
		same := *old
		same.Host, same.ABI = "", 0 // the cache's, which Put fills in
		if e == same {
			return // nothing new
		}
	}
	if err := r.results.Put(e); err != nil {
		r.cfg.logger.Debug("inspect: result not cached", "sha256", info.SHA256, "error", err)
	}
}

// recallResult fills in, from the cache entry res (nil: none), the values
// a static read could not: the exports must still be there with the ABI's
// signatures (they are, for the same bytes; checked all the same, as a
// call would be).
func (info *ModuleInfo) recallResult(res *resultcache.Entry, st *staticModule) {
	if res == nil {
		return
	}
	if res.ABIVersionKnown && !info.ABIVersionKnown && st.sound(abi.ExportABIVersion) {
		info.ABIVersion, info.ABIVersionKnown, info.ABIVersionFrom = res.ABIVersion, true, FromCache
	}
	if res.DeclaredKnown && !info.DeclaredKnown && st.sound(abi.ExportCapabilities) {
		info.Declared, info.DeclaredKnown, info.DeclaredFrom = abi.Capability(res.Declared), true, FromCache
	}
}
