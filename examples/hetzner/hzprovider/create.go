package hzprovider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Create adds the finalizer, then creates the server (unless one with the
// Machine's UID exists already) with a temporary SSH key, and records the
// server's ID in an annotation.
func (p *Provider) Create(ctx context.Context, m *provider.Machine, userdata string) (*provider.Instance, error) {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return nil, err
	}
	if err := check(c); err != nil {
		return nil, err
	}
	log := provider.Logger(ctx)
	// Before anything exists in the cloud: a crash from here on can leave a
	// server, but never one whose Machine can vanish without a Delete.
	if !m.HasFinalizer(Finalizer) {
		if _, err := provider.AddFinalizer(ctx, Finalizer); err != nil {
			return nil, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	api := p.api(c)
	// A previous Create may have created the server and died before it
	// could tell: never make a second one.
	s, err := findServer(ctx, api, m.UID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		r, err := p.lookups(ctx, api, c)
		if err != nil {
			return nil, err
		}
		var group int64
		if c.PlacementGroupPrefix != "" {
			if group, err = placementGroup(ctx, api, c.PlacementGroupPrefix, c.Labels); err != nil {
				return nil, err
			}
			// Before the server exists: Delete then finds the group to
			// remove even if this call dies right after the create.
			if _, err := provider.SetAnnotation(ctx, PlacementGroupAnnotation, strconv.FormatInt(group, 10)); err != nil {
				return nil, fmt.Errorf("recording placement group %d on the machine: %w", group, err)
			}
		}
		keyID, err := tempSSHKey(ctx, api, m.UID)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := api.DeleteSSHKey(ctx, keyID); err != nil && !IsNotFound(err) {
				log.Warn("failed to delete the temporary ssh key; Delete removes it", "id", keyID, "error", err.Error())
			}
		}()
		labels := map[string]string{}
		for k, v := range c.Labels {
			labels[k] = v
		}
		labels[MachineUIDLabel] = m.UID
		name := m.Spec.Name
		if name == "" {
			name = m.Name
		}
		s, err = api.CreateServer(ctx, CreateServerOpts{
			Name: name, ServerType: r.serverType.Name, Image: r.image.ID, Location: r.location,
			SSHKeys: []int64{keyID}, UserData: userdata, Labels: labels,
			EnableIPv4: c.AssignPublicIPv4, EnableIPv6: c.AssignPublicIPv6,
			Networks: r.networks, Firewalls: r.firewalls, PlacementGroup: group,
		})
		if err != nil {
			if group != 0 {
				// Another Machine's Delete may have removed the empty group
				// between the pick and the create: pick again, no mistake
				// in the Machine.
				if g, gerr := api.PlacementGroup(ctx, group); gerr == nil && g == nil {
					return nil, fmt.Errorf("placement group %d vanished before the server was created: %w", group, err)
				}
			}
			return nil, classify(err, "failed to create server")
		}
		log.Info("server created", "id", s.ID, "name", s.Name)
	}
	id := strconv.FormatInt(s.ID, 10)
	if m.Annotations[ServerIDAnnotation] != id {
		if _, err := provider.SetAnnotation(ctx, ServerIDAnnotation, id); err != nil {
			return nil, fmt.Errorf("recording server %s on the machine: %w", id, err)
		}
	}
	return instance(s), nil
}

// placementGroup returns a spread group named with the prefix that has
// room for one more server, or creates "<prefix>-<random>", as upstream.
func placementGroup(ctx context.Context, api API, prefix string, machineLabels map[string]string) (int64, error) {
	groups, err := api.PlacementGroups(ctx)
	if err != nil {
		return 0, classify(err, "failed to list placement groups")
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].ID < groups[j].ID })
	for _, g := range groups {
		if strings.HasPrefix(g.Name, prefix) && g.Servers < PlacementGroupLimit {
			return g.ID, nil
		}
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	// Labelled as the servers, without the UID: the group is shared.
	labels := map[string]string{}
	for k, v := range machineLabels {
		if k != MachineUIDLabel {
			labels[k] = v
		}
	}
	g, err := api.CreatePlacementGroup(ctx, prefix+"-"+hex.EncodeToString(suffix), labels)
	if err != nil {
		return 0, classify(err, "failed to create placement group")
	}
	provider.Logger(ctx).Info("placement group created", "id", g.ID, "name", g.Name)
	return g.ID, nil
}

// tempSSHKey uploads a fresh ed25519 key whose private half is thrown
// away: with a key, Hetzner does not e-mail a root password.
func tempSSHKey(ctx context.Context, api API, uid string) (int64, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return 0, fmt.Errorf("generating ssh key: %w", err)
	}
	const typ = "ssh-ed25519"
	blob := binary.BigEndian.AppendUint32(nil, uint32(len(typ)))
	blob = append(blob, typ...)
	blob = binary.BigEndian.AppendUint32(blob, uint32(len(pub)))
	blob = append(blob, pub...)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "wasmprov-" + uid + "-" + hex.EncodeToString(suffix)
	id, err := api.CreateSSHKey(ctx, name, typ+" "+base64.StdEncoding.EncodeToString(blob)+" wasmprov",
		map[string]string{TemporaryKeyLabel: "true", MachineUIDLabel: uid})
	if err != nil {
		return 0, classify(err, "creating temporary ssh key failed")
	}
	return id, nil
}
