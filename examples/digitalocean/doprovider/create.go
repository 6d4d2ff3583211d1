package doprovider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Create creates the Machine's droplet, unless it exists already (found
// as Get finds it: a Create interrupted after the droplet was made never
// makes a second one), with a throw-away SSH key as upstream (DigitalOcean
// mails a root password to a droplet created without one), and records the
// droplet's ID on the Machine.
func (p *Provider) Create(ctx context.Context, m *provider.Machine, userdata string) (*provider.Instance, error) {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return nil, err
	}
	if err := check(c); err != nil {
		return nil, err
	}
	tag, err := uidTag(m.UID)
	if err != nil {
		return nil, err
	}
	cl := newClient(ctx, c.Token)
	d, err := findDroplet(ctx, cl, m, tag)
	if err != nil {
		return nil, err
	}
	if d == nil {
		if d, err = createDroplet(ctx, cl, c, m, tag, userdata); err != nil {
			return nil, err
		}
	}
	id := strconv.Itoa(d.ID)
	if m.Annotations[DropletIDAnnotation] != id {
		if _, err := provider.SetAnnotation(ctx, DropletIDAnnotation, id); err != nil {
			return nil, fmt.Errorf("recording droplet %s on the machine: %w", id, err)
		}
	}
	return instance(d), nil
}

// createDroplet uploads a temporary SSH key, creates the droplet with it
// and deletes the key again, as upstream.
func createDroplet(ctx context.Context, cl *godo.Client, c *Config, m *provider.Machine, tag, userdata string) (*godo.Droplet, error) {
	slug, _ := slugForOS(c.OperatingSystem) // check accepted it
	log := provider.Logger(ctx)
	fingerprint, err := uploadRandomSSHPublicKey(ctx, cl, m.UID)
	if err != nil {
		return nil, err
	}
	defer func() {
		if _, err := cl.Keys.DeleteByFingerprint(ctx, fingerprint); err != nil && !isNotFound(err) {
			log.Warn("failed to remove the temporary ssh key; Delete removes it", "fingerprint", fingerprint, "error", err.Error())
		}
	}()
	d, _, err := cl.Droplets.Create(ctx, &godo.DropletCreateRequest{
		Name:              dropletName(m),
		Region:            c.Region,
		Size:              c.Size,
		Image:             godo.DropletCreateImage{Slug: slug},
		IPv6:              c.IPv6 || c.dualstack(),
		PrivateNetworking: c.PrivateNetworking,
		Backups:           c.Backups,
		Monitoring:        c.Monitoring,
		UserData:          userdata,
		SSHKeys:           []godo.DropletCreateSSHKey{{Fingerprint: fingerprint}},
		Tags:              append(slices.Clone(c.Tags), tag),
	})
	if err != nil {
		return nil, classify(err, "failed to create droplet")
	}
	if d == nil {
		return nil, fmt.Errorf("failed to create droplet: the answer has no droplet")
	}
	log.Info("droplet created", "id", d.ID, "name", d.Name)
	return d, nil
}

// uploadRandomSSHPublicKey generates a key pair, uploads its public half
// and returns its fingerprint; the private half is never kept. Upstream
// makes a 4096-bit RSA key; this is ed25519, which DigitalOcean takes too
// and which takes microseconds, not seconds, to generate in a sandbox.
// Upstream first asks for a key with the new key's fingerprint (which a
// fresh random key cannot have); that request's path would be random in
// every run, so it is left out: a recorded run replays (and the API would
// refuse a duplicate key with 422 anyway).
func uploadRandomSSHPublicKey(ctx context.Context, cl *godo.Client, uid string) (string, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("failed to generate ssh key: %w", err)
	}
	const typ = "ssh-ed25519"
	blob := binary.BigEndian.AppendUint32(nil, uint32(len(typ)))
	blob = append(blob, typ...)
	blob = binary.BigEndian.AppendUint32(blob, uint32(len(pub)))
	blob = append(blob, pub...)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	key, _, err := cl.Keys.Create(ctx, &godo.KeyCreateRequest{
		Name:      TempKeyPrefix + uid + "-" + hex.EncodeToString(suffix),
		PublicKey: typ + " " + base64.StdEncoding.EncodeToString(blob) + " wasmprov",
	})
	if err != nil {
		return "", classify(err, "failed to create ssh public key on digitalocean")
	}
	if key == nil || key.Fingerprint == "" {
		return "", fmt.Errorf("failed to create ssh public key on digitalocean: the answer has no key")
	}
	return key.Fingerprint, nil
}
