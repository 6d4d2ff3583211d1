package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/runtime"
)

// sourceKind says where an entry's module comes from.
type sourceKind int

const (
	fromDir sourceKind = iota + 1
	fromFS
	fromBytes
	fromImage // RegisterImage: an OCI artifact named by code
)

type source struct {
	kind   sourceKind
	dir    string
	fsys   fs.FS
	wasm   []byte
	policy *runtime.Policy
	img    Image // fromImage, normalised (checkImage)
}

func (s source) String(name string) string {
	switch s.kind {
	case fromDir:
		return filepath.Join(s.dir, name+".wasm")
	case fromFS:
		return "fs:" + name + ".wasm"
	case fromImage:
		return "image:" + s.img.Ref
	}
	return "code"
}

func (s source) same(o source) bool {
	switch {
	case s.kind != o.kind:
		return false
	case s.kind == fromDir:
		return s.dir == o.dir
	}
	return false
}

// contentKey identifies a version by what it is made of: the module and
// the policy it runs under. Equal keys mean nothing to reload.
type contentKey struct {
	module, policy [sha256.Size]byte
}

// moduleSHA256 is the module's digest as runtime.Provider.SHA256 spells it.
func (k contentKey) moduleSHA256() string { return hex.EncodeToString(k.module[:]) }

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9_.-]*[a-z0-9])?$`)

// ValidName reports whether name may name a provider: lower-case letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit
// (machine-controller's provider names are lower case), at most 63 long.
func ValidName(name string) bool { return len(name) <= 63 && nameRE.MatchString(name) }

// listDir returns the provider names of the "<name>.wasm" files and
// "<name>.provider.yaml" image entries in dir.
func listDir(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if de.IsDir() {
			continue
		}
		if name, ok := strings.CutSuffix(de.Name(), ".wasm"); ok && ValidName(name) {
			names = append(names, name)
		}
	}
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ImageEntrySuffix)
		if !ok || de.IsDir() || !ValidName(name) || slices.Contains(names, name) {
			continue
		}
		if _, ok := imageEntryPath(dir, name); ok {
			names = append(names, name)
		}
	}
	return names, nil
}

// read returns the module, policy and content key of e from src, and
// for an image entry the artifact it came from.
func (r *Registry) read(ctx context.Context, e *entry, src source) (wasm []byte, policy *runtime.Policy, key contentKey, img imageInfo, err error) {
	name := e.name
	var polBytes []byte
	switch src.kind {
	case fromDir:
		if path, ok := imageEntryPath(src.dir, name); ok {
			e.isImage.Store(true)
			if _, err := os.Stat(filepath.Join(src.dir, name+".wasm")); err == nil {
				return nil, nil, contentKey{}, img, fmt.Errorf("both %s and %s exist: remove one", filepath.Join(src.dir, name+".wasm"), path)
			}
			b, err := r.cfg.readFile(path)
			if err != nil {
				return nil, nil, contentKey{}, img, err
			}
			ie, err := parseImageEntry(b)
			if err != nil {
				return nil, nil, contentKey{}, img, fmt.Errorf("%s: %w", path, err)
			}
			return r.pullImage(ctx, e, ie, path)
		}
		e.isImage.Store(false)
		wasm, err = r.cfg.readFile(filepath.Join(src.dir, name+".wasm"))
		if err != nil {
			return nil, nil, contentKey{}, img, err
		}
		polPath := filepath.Join(src.dir, name+runtime.PolicyFileSuffix)
		polBytes, err = r.cfg.readFile(polPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			polBytes, err = nil, nil
		case err != nil:
			return nil, nil, contentKey{}, img, err
		default:
			p, perr := runtime.ParsePolicy(polBytes)
			if perr != nil {
				return nil, nil, contentKey{}, img, fmt.Errorf("%s: %w", polPath, perr)
			}
			policy = &p
		}
	case fromFS:
		wasm, err = fs.ReadFile(src.fsys, name+".wasm")
		if err != nil {
			return nil, nil, contentKey{}, img, err
		}
		policy, polBytes, err = readPolicyFS(src.fsys, name+runtime.PolicyFileSuffix)
		if err != nil {
			return nil, nil, contentKey{}, img, err
		}
	case fromImage:
		return r.pullImage(ctx, e, src.img, "")
	case fromBytes:
		wasm, policy = src.wasm, src.policy
		polBytes = policyBytes(policy)
	}
	return wasm, policy, contentKey{module: sha256.Sum256(wasm), policy: sha256.Sum256(polBytes)}, img, nil
}

// policyBytes is what a policy given as a value contributes to a content
// key: its JSON encoding, nil for the default policy.
func policyBytes(p *runtime.Policy) []byte {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p)
	return b
}

// readPolicyFS reads name from fsys. It returns (nil, nil, nil) when the
// file does not exist: the provider then gets the runtime's default policy.
func readPolicyFS(fsys fs.FS, name string) (*runtime.Policy, []byte, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	p, err := runtime.ParsePolicy(b)
	if err != nil {
		return nil, b, fmt.Errorf("%s: %w", name, err)
	}
	return &p, b, nil
}
