package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
)

// GenerateKey returns a new ECDSA P-256 key pair in PEM: the private key
// as PKCS #8 ("PRIVATE KEY", unencrypted: keep the file 0600 or in a
// secret store), the public key as PKIX ("PUBLIC KEY"). sigstore-go has
// no such helper; its keypairs are ephemeral.
func GenerateKey() (private, public []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

// keypair is sigstore-go's sign.Keypair over a long-lived ECDSA P-256
// key (sigstore-go only has ephemeral ones).
type keypair struct {
	key  *ecdsa.PrivateKey
	hint []byte
}

// ParsePrivateKey reads an ECDSA P-256 private key in PEM (PKCS #8, or
// SEC 1 "EC PRIVATE KEY").
func ParsePrivateKey(b []byte) (*Key, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block in the private key")
	}
	var k any
	var err error
	switch blk.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not an unencrypted private key", blk.Type)
	}
	if err != nil {
		return nil, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("the private key is a %T, not ECDSA P-256", k)
	}
	return newKey(ec)
}

// Key is a signing key.
type Key struct{ kp *keypair }

func newKey(k *ecdsa.PrivateKey) (*Key, error) {
	id, err := keyID(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Key{kp: &keypair{key: k, hint: []byte(id)}}, nil
}

// ID is the key's identifier: sha256: and the hex SHA-256 of its public
// key in PKIX DER, what errors and results name it by.
func (k *Key) ID() string { return string(k.kp.hint) }

func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}
func (k *keypair) GetHint() []byte                { return k.hint }
func (k *keypair) GetKeyAlgorithm() string        { return "ECDSA" }
func (k *keypair) GetPublicKey() crypto.PublicKey { return &k.key.PublicKey }
func (k *keypair) GetPublicKeyPem() (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// SignData signs SHA-256(data) and returns the signature and the digest.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	sum := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, sum[:])
	return sig, sum[:], err
}

// shortID shortens a key ID for messages.
func shortID(id string) string {
	if len(id) > len("sha256:")+12 {
		return id[:len("sha256:")+12] + "…"
	}
	return id
}
