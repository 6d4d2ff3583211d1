// Package signature signs provider modules shipped as OCI artifacts and
// verifies them against a policy, with Sigstore: a signature is a Sigstore
// bundle (protobuf-specs bundle v0.3 JSON, media type BundleMediaType)
// attached to the artifact as an OCI referrer whose subject is the
// artifact's manifest.
//
// What is signed is the manifest's digest, not the module's: the manifest
// names the module by its digest and also carries the config and the
// metadata annotations (name, version, source), so signing it covers all
// three, and it is the digest a pinned reference, the referrers API and
// cosign all use. Pull already checks the module against the layer digest
// of the manifest, so a verified manifest digest vouches for the module.
//
// The bundle's message signature is over the manifest bytes (SHA-256),
// its messageDigest the manifest digest, so a verifier needs only the
// digest, never the module, to check it.
//
// Key-based signatures (an ECDSA P-256 key in PEM, GenerateKey) carry
// the public key's hint; keyless ones carry a Fulcio-style certificate
// naming an OIDC issuer and subject, and are verified against a Sigstore
// trusted root (trusted_root.json) with at least one trusted timestamp.
// Signing keylessly needs a Fulcio and an OIDC token and is not done
// here; such bundles (cosign's, sigstore-go's) are verified.
package signature

// BundleMediaType is the media type of a Sigstore bundle v0.3, and the
// artifact type of the referrer that carries it.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
