package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// A journal remembers, in a file, every Machine a run may have made an
// instance for and has not seen deleted: the Machine is written before
// its first Create (a run killed during the call may leave an instance),
// again after every Create as the provider left it (what a keyed provider
// needs to find the instance: an annotation, a providerID) and after a
// MigrateUID, and removed once Delete returned OK. The journal keeps no
// provider spec (it may hold a token; the file is the user's only, 0600):
// a sweep runs with the spec it is given. What a run could not
// delete stays there for the next run to report and for a sweep
// (Config.Sweep) to delete, with the provider's own Delete.

// Leftover is a Machine a run made an instance for and did not see
// deleted.
type Leftover struct {
	// Check is the check that created it.
	Check string `json:"check"`
	// Machine is its name, UID its UID as the provider last saw it.
	Machine string `json:"machine"`
	UID     string `json:"uid"`
	// Error is why it was not deleted ("" for an earlier run's, not
	// swept yet).
	Error string `json:"error,omitempty"`
}

type journalEntry struct {
	Check   string                   `json:"check"`
	Machine *clusterv1alpha1.Machine `json:"machine"`
}

// journalFile is the file's content.
type journalFile struct {
	// Provider is the module's name; Cloud where its instances are.
	Provider string         `json:"provider"`
	Cloud    string         `json:"cloud"`
	Machines []journalEntry `json:"machines"`
}

// journal is safe for concurrent use. A nil journal records nothing (a
// replay creates nothing real).
type journal struct {
	path string

	mu      sync.Mutex
	file    journalFile
	saveErr error
}

// openJournal reads the journal at path (a missing file is empty); with
// no path, it is kept in memory only, for this run's report.
func openJournal(path, provider, cloud string) (*journal, error) {
	j := &journal{path: path, file: journalFile{Provider: provider, Cloud: cloud}}
	if path == "" {
		return j, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return j, nil
	case err != nil:
		return nil, fmt.Errorf("conformance journal: %w", err)
	}
	if err := json.Unmarshal(b, &j.file); err != nil {
		return nil, fmt.Errorf("conformance journal %s: %w (it lists the Machines earlier runs may have left instances for: "+
			"look at it, sweep by hand, and remove it)", path, err)
	}
	return j, nil
}

func journalKey(check, name string) string { return check + "/" + name }

// record writes m's current version, created by check.
func (j *journal) record(check string, m *clusterv1alpha1.Machine) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// Without its provider spec, which may hold a token: a sweep gives
	// the Machine the spec it runs with.
	mm := m.DeepCopy()
	mm.Spec.ProviderSpec.Value = nil
	e := journalEntry{Check: check, Machine: mm}
	if i := j.index(check, m.Name); i >= 0 {
		j.file.Machines[i] = e
	} else {
		j.file.Machines = append(j.file.Machines, e)
	}
	j.save()
}

// forget removes check's Machine name: its instance is gone.
func (j *journal) forget(check, name string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if i := j.index(check, name); i >= 0 {
		j.file.Machines = slices.Delete(j.file.Machines, i, i+1)
		j.save()
	}
}

func (j *journal) index(check, name string) int {
	return slices.IndexFunc(j.file.Machines, func(e journalEntry) bool { return journalKey(e.Check, e.Machine.Name) == journalKey(check, name) })
}

// entries returns what the journal holds.
func (j *journal) entries() []journalEntry {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.file.Machines)
}

// save writes the file (j.mu held); an empty journal is removed. The
// first error is kept (err) and later saves still try.
func (j *journal) save() {
	if j.path == "" {
		return
	}
	var err error
	if len(j.file.Machines) == 0 {
		if err = os.Remove(j.path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = writeFileAtomic(j.path, j.file)
	}
	if err != nil && j.saveErr == nil {
		j.saveErr = fmt.Errorf("conformance journal: %w", err)
	}
}

func (j *journal) err() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.saveErr
}

func writeFileAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func leftoverOf(e journalEntry, err error) Leftover {
	l := Leftover{Check: e.Check, Machine: e.Machine.Name, UID: string(e.Machine.UID)}
	if err != nil {
		l.Error = err.Error()
	}
	return l
}
