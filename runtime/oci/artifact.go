package oci

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// Artifact is a pulled module.
type Artifact struct {
	// Ref is the reference pinned to the manifest's digest:
	// registry/repository@sha256:….
	Ref string
	// Digest is the manifest's digest, LayerDigest the module's.
	Digest, LayerDigest digest.Digest
	Wasm                []byte
	// Annotations are the manifest's.
	Annotations map[string]string

	manifest, config []byte
}

// config is the artifact's config blob (TAG-Runtime's wasm config, the
// fields that apply to a core module).
type config struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	LayerDigests []digest.Digest `json:"layerDigests"`
}

// build returns the manifest and config of an artifact holding wasm, with
// the module's metadata as annotations. The same module gives the same
// manifest (no timestamp), hence the same digest.
func build(wasm []byte) (manifest, cfg []byte, layer ocispec.Descriptor, err error) {
	if !bytes.HasPrefix(wasm, []byte(wasmbin.Magic)) {
		return nil, nil, layer, fmt.Errorf("%w: not a WebAssembly module", ErrRefused)
	}
	md, err := metadata.Read(wasm)
	if err != nil {
		return nil, nil, layer, err
	}
	layer = ocispec.Descriptor{MediaType: MediaTypeLayer, Digest: digest.FromBytes(wasm), Size: int64(len(wasm))}
	cfg, err = json.Marshal(config{Architecture: "wasm", OS: "wasip1", LayerDigests: []digest.Digest{layer.Digest}})
	if err != nil {
		return nil, nil, layer, err
	}
	m := ocispec.Manifest{
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: MediaTypeConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		Layers:    []ocispec.Descriptor{layer},
	}
	m.SchemaVersion = 2
	if md != nil {
		m.Annotations = map[string]string{}
		set := func(k, v string) {
			if v != "" {
				m.Annotations[k] = v
			}
		}
		set(ocispec.AnnotationTitle, md.Name)
		set(ocispec.AnnotationVersion, md.Version)
		set(ocispec.AnnotationDescription, md.Description)
		set(ocispec.AnnotationSource, md.Source)
		set(ocispec.AnnotationLicenses, md.License)
	}
	manifest, err = json.Marshal(m)
	return manifest, cfg, layer, err
}

// parseManifest checks that raw is the manifest of a Wasm artifact and
// returns its module's descriptor.
func parseManifest(raw []byte, maxBlob int64) (ocispec.Manifest, ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: manifest is not JSON: %v", ErrRefused, err)
	}
	if m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: %s is not an OCI image manifest", ErrRefused, m.MediaType)
	}
	if len(m.Layers) != 1 {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: a Wasm artifact has one layer, this manifest has %d", ErrRefused, len(m.Layers))
	}
	l := m.Layers[0]
	if l.MediaType != MediaTypeLayer && l.MediaType != MediaTypeLayerLegacy {
		return m, l, fmt.Errorf("%w: not a Wasm artifact: its layer is %q, not %s", ErrRefused, l.MediaType, MediaTypeLayer)
	}
	if l.Size < 0 || l.Size > maxBlob {
		return m, l, fmt.Errorf("%w: the module is %d bytes, over the limit of %d", ErrRefused, l.Size, maxBlob)
	}
	if err := l.Digest.Validate(); err != nil || l.Digest.Algorithm() != digest.SHA256 {
		return m, l, fmt.Errorf("%w: layer digest %q is not a sha256 digest", ErrRefused, l.Digest)
	}
	if m.Config.Size < 0 || m.Config.Size > maxManifestSize || m.Config.Digest.Validate() != nil {
		return m, l, fmt.Errorf("%w: config descriptor %s of %d bytes", ErrRefused, m.Config.Digest, m.Config.Size)
	}
	return m, l, nil
}

// checkModule checks that the layer is WebAssembly.
func checkModule(wasm []byte) error {
	if !bytes.HasPrefix(wasm, []byte(wasmbin.Magic)) {
		return fmt.Errorf("%w: the layer is not a WebAssembly module", ErrRefused)
	}
	return nil
}
