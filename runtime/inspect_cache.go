package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
)

// The result cache: what an inspect learnt of a module that a later
// static inspect of the same bytes need not learn again, kept in the
// compilation cache directory: that the bytes passed precheck's limits
// (precheck is most of a static inspect's time on a large module: 60-90
// ms of the Hetzner guest's 11.5 MB), and what an InspectRun read by
// calling wasmprov_abi_version and wasmprov_capabilities. A Go guest's
// exports are not constant bodies (they are Go's wasmexport wrappers), so
// without the cache a static inspect of a Go guest cannot tell its ABI
// version or capabilities.
//
// Entries are keyed by the module's sha256 (the file name, and again in
// the content, so a file renamed or copied over another is a miss) and
// carry the host and ABI versions that wrote them: another host reads
// them as a miss; the limits precheck passed are recorded with the
// default limits they stood for, so a change of either checks again.
// Anything that does not read back exactly (a damaged, truncated,
// oversized or foreign file) is a miss too, never an error: the cache only
// saves work. The directory has the trust of the compiled code next to it:
// whoever can write there can change what runs.
const (
	resultCacheSubdir = "wasmprov-inspect-v1"
	// maxResultFile bounds what a read of a cache entry takes; a real
	// entry is about 300 bytes.
	maxResultFile = 4096
)

type cachedResult struct {
	SHA256 string `json:"sha256"`
	Host   string `json:"host"`
	ABI    int    `json:"abi"`
	// Prechecked is the precheck.Limits.Key of the limits the bytes passed, "" if none
	// is known.
	Prechecked      string `json:"prechecked,omitempty"`
	ABIVersion      int32  `json:"abiVersion"`
	ABIVersionKnown bool   `json:"abiVersionKnown"`
	Declared        uint64 `json:"declared"`
	DeclaredKnown   bool   `json:"declaredKnown"`
}

// loadLimits are the limits Load's precheck applies under policy.
func loadLimits(policy Policy) precheck.Limits {
	return precheck.Limits{MaxTableEntries: int(policy.MaxTableEntries)}
}

// resultPath is the cache entry of the module whose sha256 is sum ("" if
// the runtime has no cache directory or sum is not a sha256 in hex, which
// a ModuleInfo's always is).
func (r *Runtime) resultPath(sum string) string {
	if r.cfg.cacheDir == "" || len(sum) != 64 {
		return ""
	}
	for _, c := range sum {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return filepath.Join(r.cfg.cacheDir, resultCacheSubdir, sum+".json")
}

// cachedEntry is the cache entry of the module sum, nil on a miss.
func (r *Runtime) cachedEntry(sum string) *cachedResult {
	path := r.resultPath(sum)
	if path == "" {
		return nil
	}
	res, err := readResult(path, sum)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.cfg.logger.Debug("inspect: cached result ignored", "error", err)
		}
		return nil
	}
	return res
}

// remember keeps what info says of its module: that it passed the limits
// named prechecked (if not ""), and the values its export calls read,
// added to what the entry old (nil if none) holds. A failure to write is
// logged and otherwise ignored: the inspect itself succeeded.
func (r *Runtime) remember(info *ModuleInfo, prechecked string, old *cachedResult) {
	path := r.resultPath(info.SHA256)
	if path == "" {
		return
	}
	res := cachedResult{SHA256: info.SHA256, Host: Version, ABI: abi.Version, Prechecked: prechecked}
	if old != nil {
		res.ABIVersion, res.ABIVersionKnown = old.ABIVersion, old.ABIVersionKnown
		res.Declared, res.DeclaredKnown = old.Declared, old.DeclaredKnown
		if res.Prechecked == "" {
			res.Prechecked = old.Prechecked
		}
	}
	if info.ABIVersionFrom == FromExportCall {
		res.ABIVersion, res.ABIVersionKnown = info.ABIVersion, true
	}
	if info.DeclaredFrom == FromExportCall {
		res.Declared, res.DeclaredKnown = uint64(info.Declared), true
	}
	if old != nil && res == *old {
		return
	}
	if err := writeResult(path, &res); err != nil {
		r.cfg.logger.Debug("inspect: result not cached", "sha256", info.SHA256, "error", err)
	}
}

func writeResult(path string, res *cachedResult) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Written aside and renamed: a reader in another process sees the old
	// entry or the new one, never half of one.
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// readResult returns the cache entry at path for the module sum, or an
// error (a miss) if there is none or it is not one this host wrote for
// these bytes.
func readResult(path, sum string) (*cachedResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResultFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResultFile {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxResultFile)
	}
	var res cachedResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case res.SHA256 != sum:
		return nil, fmt.Errorf("%s: an entry for module %q", path, res.SHA256)
	case res.Host != Version || res.ABI != abi.Version:
		return nil, fmt.Errorf("%s: written by host %s (ABI %d)", path, res.Host, res.ABI)
	}
	return &res, nil
}

// recallResult fills in, from the cache entry res (nil: none), the values
// a static read could not: the exports must still be there with the ABI's
// signatures (they are, for the same bytes; checked all the same, as a
// call would be).
func (info *ModuleInfo) recallResult(res *cachedResult, st *staticModule) {
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
