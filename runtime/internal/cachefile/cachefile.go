// Package cachefile writes files of the on-disk caches (compiled and
// instrumented modules) so that a reader — possibly another process —
// never sees a torn file: the bytes go to a temporary file in the same
// directory, which is renamed into place.
package cachefile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes b to path atomically, creating path's directory.
func Write(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
