// Package hzprovider is machine-controller's Hetzner Cloud provider written
// against the wasmprov guest SDK. The cloud API is behind the API
// interface, so the same provider logic runs over a small encoding/json
// client (examples/hetzner) or over the official hcloud-go SDK
// (examples/hetzner-hcloudgo).
package hzprovider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

const (
	// MachineUIDLabel labels a server with the UID of its Machine, as
	// upstream does; Get finds servers by it.
	MachineUIDLabel = "machine-uid"
	// TemporaryKeyLabel marks the throw-away SSH keys Create makes.
	TemporaryKeyLabel = "wasmprov-temporary-key"
	// Finalizer is added before a server is created and removed once it
	// is gone, so a Machine cannot disappear while its server exists.
	Finalizer = "hetzner.wasmprov.io/delete-server"
	// ServerIDAnnotation records the server's ID on the Machine.
	ServerIDAnnotation = "hetzner.wasmprov.io/server-id"
	// PlacementGroupAnnotation records the placement group Create put the
	// server in, so that Delete can remove the group once it is empty.
	PlacementGroupAnnotation = "hetzner.wasmprov.io/placement-group-id"
	// PlacementGroupLimit is how many servers a spread placement group
	// holds.
	PlacementGroupLimit = 10
	// CSIDriver is the Hetzner CSI driver's name; its volume handles are
	// volume IDs.
	CSIDriver = "csi.hetzner.cloud"
)

// Capabilities the provider needs: HTTP for the API, config_var for the
// token, machine_update for the finalizer and annotation, pv_list for the
// volumes, clock to poll actions and random for the temporary SSH key.
var Capabilities = []abi.Capability{abi.CapHTTP, abi.CapConfigVar, abi.CapMachineUpdate,
	abi.CapPVList, abi.CapClock, abi.CapRandom}

// Provider is the Hetzner provider.
type Provider struct {
	NewAPI NewAPI
	// ActionTimeout bounds the wait for one action (default 60s).
	ActionTimeout time.Duration
}

// Register registers a Provider over newAPI with the capabilities it
// needs, and async_delete: Delete returns while the cloud deletes.
func Register(newAPI NewAPI) {
	provider.Register(&Provider{NewAPI: newAPI}, provider.Needs(Capabilities...), provider.AsyncDelete())
}

func (p *Provider) api(c *Config) API { return p.NewAPI(c.Endpoint, c.Token) }

// AddDefaults migrates the legacy datacenter field to location (Hetzner
// datacenters are named "<location>-dc<N>") and fills in the default image
// of the operating system. It makes no API call.
func (p *Provider) AddDefaults(_ context.Context, spec provider.MachineSpec) (provider.MachineSpec, error) {
	pc, raw, err := decodeRaw(spec)
	if err != nil {
		return spec, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(pc.CloudProviderSpec, &fields); err != nil {
		return spec, provider.Terminal(provider.InvalidConfiguration, "failed to decode cloudProviderSpec: %v", err)
	}
	changed := false
	var dc, loc string
	_ = json.Unmarshal(raw.Datacenter, &dc)
	_ = json.Unmarshal(raw.Location, &loc)
	if err := checkDatacenter(dc, loc); err != nil {
		return spec, err
	}
	if dc != "" && loc == "" {
		if l, ok := locationOfDatacenter(dc); ok {
			fields["location"], _ = json.Marshal(l)
			delete(fields, "datacenter")
			changed = true
		}
	}
	if len(raw.Image) == 0 || string(raw.Image) == "null" || string(raw.Image) == `""` {
		if img, err := imageForOS(pc.OperatingSystem); err == nil {
			fields["image"], _ = json.Marshal(img)
			changed = true
		}
	}
	if !changed {
		return spec, nil
	}
	cps, err := json.Marshal(fields)
	if err != nil {
		return spec, err
	}
	var value map[string]json.RawMessage
	if err := json.Unmarshal(spec.ProviderSpec.Value, &value); err != nil {
		return spec, provider.Terminal(provider.InvalidConfiguration, "failed to decode providerSpec.value: %v", err)
	}
	value["cloudProviderSpec"] = cps
	if spec.ProviderSpec.Value, err = json.Marshal(value); err != nil {
		return spec, err
	}
	return spec, nil
}

// Validate checks the configuration, then that the location (or
// datacenter), server type and image exist.
func (p *Provider) Validate(ctx context.Context, spec provider.MachineSpec) error {
	c, err := getConfig(ctx, spec, true)
	if err != nil {
		return err
	}
	if err := check(c); err != nil {
		return err
	}
	_, err = p.lookups(ctx, p.api(c), c)
	return err
}

// check is what Validate and Create check without an API call.
func check(c *Config) error {
	if c.Token == "" {
		return provider.Terminal(provider.InvalidConfiguration, "token is missing: set cloudProviderSpec.token (a Secret reference) or HZ_TOKEN")
	}
	if !c.OperatingSystemSpecSet {
		// As upstream: the OS's provisioning settings must be explicit.
		return provider.Terminal(provider.InvalidConfiguration, "operatingSystemSpec is missing: set providerSpec.value.operatingSystemSpec (e.g. {distUpgradeOnBoot: false})")
	}
	if c.Image == "" {
		if _, err := imageForOS(c.OperatingSystem); err != nil {
			return provider.Terminal(provider.InvalidConfiguration, "invalid/not supported operating system specified %q: %v", c.OperatingSystem, err)
		}
	}
	if err := checkDatacenter(c.Datacenter, c.Location); err != nil {
		return err
	}
	if c.ServerType == "" {
		return provider.Terminal(provider.InvalidConfiguration, "serverType is missing")
	}
	if !c.AssignPublicIPv4 && !c.AssignPublicIPv6 && len(c.Networks) == 0 {
		return provider.Terminal(provider.InvalidConfiguration,
			"assignPublicIPv4 and assignPublicIPv6 are both false and no networks are set: the server would be unreachable")
	}
	return nil
}

// resolved is what lookups found.
type resolved struct {
	serverType *ServerType
	image      *Image
	// location is the location, or the datacenter's location: servers
	// are created by location, as upstream does.
	location  string
	networks  []int64
	firewalls []int64
}

// lookups resolves location or datacenter, server type and image; a
// missing one is an invalid configuration.
func (p *Provider) lookups(ctx context.Context, api API, c *Config) (*resolved, error) {
	r := &resolved{location: c.Location}
	if c.Location != "" {
		l, err := api.Location(ctx, c.Location)
		if err != nil {
			return nil, classify(err, "failed to get location")
		}
		if l == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "location %q does not exist", c.Location)
		}
	}
	if c.Datacenter != "" {
		d, err := api.Datacenter(ctx, c.Datacenter)
		if err != nil {
			return nil, classify(err, "failed to get datacenter")
		}
		if d == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "datacenter %q does not exist", c.Datacenter)
		}
		r.location = d.Location
	}
	st, err := api.ServerType(ctx, c.ServerType)
	if err != nil {
		return nil, classify(err, "failed to get server type")
	}
	if st == nil {
		return nil, provider.Terminal(provider.InvalidConfiguration, "server type %q does not exist", c.ServerType)
	}
	name := c.Image
	if name == "" {
		if name, err = imageForOS(c.OperatingSystem); err != nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "%v", err)
		}
	}
	img, err := api.Image(ctx, name, st.Architecture)
	if err != nil {
		return nil, classify(err, "failed to get image")
	}
	if img == nil {
		return nil, provider.Terminal(provider.InvalidConfiguration, "image %q does not exist for architecture %s", name, st.Architecture)
	}
	r.serverType, r.image = st, img
	for _, name := range c.Networks {
		n, err := api.Network(ctx, name)
		if err != nil {
			return nil, classify(err, "failed to get network")
		}
		if n == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "network %q does not exist", name)
		}
		r.networks = append(r.networks, n.ID)
	}
	for _, name := range c.Firewalls {
		f, err := api.Firewall(ctx, name)
		if err != nil {
			return nil, classify(err, "failed to get firewall")
		}
		if f == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "firewall %q does not exist", name)
		}
		r.firewalls = append(r.firewalls, f.ID)
	}
	return r, nil
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

// findServer returns the Machine's server, found by its UID label; with
// several (which Create never makes), the oldest.
func findServer(ctx context.Context, api API, uid string) (*Server, error) {
	servers, err := api.Servers(ctx, MachineUIDLabel+"=="+uid)
	if err != nil {
		return nil, classify(err, "failed to list servers")
	}
	var found []*Server
	for _, s := range servers {
		if s.Labels[MachineUIDLabel] == uid {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	if len(found) > 1 {
		provider.Logger(ctx).Warn("several servers carry the machine's UID", "uid", uid, "count", len(found))
	}
	return found[0], nil
}

// Get finds the Machine's server by the machine-uid label.
func (p *Provider) Get(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return nil, err
	}
	api := p.api(c)
	s, err := findServer(ctx, api, m.UID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, provider.ErrInstanceNotFound
	}
	inst := instance(s)
	for _, id := range s.FloatingIPs {
		ip, err := api.FloatingIP(ctx, id)
		if err != nil {
			return nil, classify(err, "failed to get floating ip")
		}
		if ip != "" {
			inst.Addresses[ip] = "ExternalIP"
		}
	}
	return inst, nil
}

func instance(s *Server) *provider.Instance {
	addrs := map[string]string{}
	if s.PublicIPv4 != "" {
		addrs[s.PublicIPv4] = "ExternalIP"
	}
	if s.PublicIPv6 != "" {
		// The server's address is ::1 of its /64, as Hetzner configures it.
		if ip, _, err := net.ParseCIDR(s.PublicIPv6); err == nil && ip.To16() != nil {
			ip = ip.To16()
			ip[15] |= 1
			addrs[ip.String()] = "ExternalIP"
		}
	}
	for _, ip := range s.PrivateIPs {
		addrs[ip] = "InternalIP"
	}
	id := strconv.FormatInt(s.ID, 10)
	return &provider.Instance{Name: s.Name, ID: id, ProviderID: "hcloud://" + id, Addresses: addrs, Status: status(s.Status)}
}

func status(s string) provider.InstanceStatus {
	switch s {
	case "initializing", "starting":
		return provider.StatusCreating
	case "running":
		return provider.StatusRunning
	case "deleting":
		return provider.StatusDeleting
	}
	return provider.StatusUnknown
}

// GetCloudConfig returns no cloud config, as upstream: the Hetzner cloud
// controller manager is configured on its own, not through the kubelet.
func (p *Provider) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

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

// DeleteRetryAfter is when Delete asks to be called again while the
// server is being deleted: Hetzner deletes a server in a few seconds.
const DeleteRetryAfter = 2 * time.Second

// Delete detaches the volumes of the Machine's PersistentVolumes, starts
// the server's deletion and returns provider.DeletionInProgress while the
// server still exists (the provider declares async_delete, so the
// controller calls again rather than this call waiting for the cloud).
// Once no server carries the Machine's UID, it removes the temporary SSH
// keys and the finalizer and returns nil.
func (p *Provider) Delete(ctx context.Context, m *provider.Machine) error {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return err
	}
	api := p.api(c)
	log := provider.Logger(ctx)
	for {
		s, err := findServer(ctx, api, m.UID)
		if err != nil {
			return err
		}
		if s == nil {
			break
		}
		if s.Status == "deleting" {
			return provider.DeletionInProgress(DeleteRetryAfter, "server %d is still being deleted", s.ID)
		}
		if err := p.detachVolumes(ctx, api, s); err != nil {
			return err
		}
		if _, err := api.DeleteServer(ctx, s.ID); err != nil && !IsNotFound(err) {
			return classify(err, "failed to delete the server")
		}
		log.Info("server deletion started", "id", s.ID)
		// A cloud that deletes at once lets this call finish the job (and
		// look for another server with the UID); otherwise, call again.
		left, err := api.Server(ctx, s.ID)
		if err != nil {
			return classify(err, "failed to get server")
		}
		if left != nil {
			return provider.DeletionInProgress(DeleteRetryAfter, "server %d: delete requested, status %s", s.ID, left.Status)
		}
	}
	// Keys a crashed Create could not remove.
	if keys, err := api.SSHKeys(ctx, TemporaryKeyLabel+"=true,"+MachineUIDLabel+"=="+m.UID); err == nil {
		for _, k := range keys {
			if err := api.DeleteSSHKey(ctx, k); err != nil && !IsNotFound(err) {
				return classify(err, "failed to delete a temporary ssh key")
			}
		}
	} else {
		return classify(err, "failed to list temporary ssh keys")
	}
	if err := deleteEmptyGroup(ctx, api, m); err != nil {
		return err
	}
	if m.HasFinalizer(Finalizer) {
		if _, err := provider.RemoveFinalizer(ctx, Finalizer); err != nil {
			return fmt.Errorf("removing finalizer: %w", err)
		}
	}
	return nil
}

// deleteEmptyGroup removes the placement group Create put the Machine's
// server in, once no server is in it (upstream's Cleanup does the same);
// a group other servers still use stays.
func deleteEmptyGroup(ctx context.Context, api API, m *provider.Machine) error {
	id, err := strconv.ParseInt(m.Annotations[PlacementGroupAnnotation], 10, 64)
	if err != nil || id == 0 {
		return nil
	}
	g, err := api.PlacementGroup(ctx, id)
	if err != nil {
		return classify(err, "failed to get placement group")
	}
	if g == nil || g.Servers > 0 {
		return nil
	}
	if err := api.DeletePlacementGroup(ctx, id); err != nil && !IsNotFound(err) {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == 422 {
			return nil // a server joined it meanwhile: it is theirs now
		}
		return classify(err, "failed to delete placement group")
	}
	provider.Logger(ctx).Info("placement group deleted", "id", id, "name", g.Name)
	return nil
}

// detachVolumes detaches the server's volumes that back PersistentVolumes
// of the Hetzner CSI driver (volume handle = volume ID), so the data
// outlives the server.
func (p *Provider) detachVolumes(ctx context.Context, api API, s *Server) error {
	if len(s.Volumes) == 0 {
		return nil
	}
	pvs, err := provider.ListPersistentVolumes(ctx, "")
	if err != nil {
		return fmt.Errorf("listing persistent volumes: %w", err)
	}
	attached := map[int64]bool{}
	for _, v := range s.Volumes {
		attached[v] = true
	}
	var actions []int64
	for _, pv := range pvs {
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != CSIDriver {
			continue
		}
		id, err := strconv.ParseInt(pv.Spec.CSI.VolumeHandle, 10, 64)
		if err != nil || !attached[id] {
			continue
		}
		attached[id] = false // once per volume, however many PVs name it
		a, err := api.DetachVolume(ctx, id)
		if err != nil && !IsNotFound(err) {
			return classify(err, fmt.Sprintf("failed to detach volume %d of persistent volume %s", id, pv.Name))
		}
		provider.Logger(ctx).Info("detaching volume", "volume", id, "persistentVolume", pv.Name, "server", s.ID)
		if err == nil {
			actions = append(actions, a)
		}
	}
	for _, a := range actions {
		if err := p.wait(ctx, api, a); err != nil {
			return classify(err, "failed to detach volume")
		}
	}
	return nil
}

func (p *Provider) wait(ctx context.Context, api API, action int64) error {
	d := p.ActionTimeout
	if d <= 0 {
		d = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return api.WaitForAction(ctx, action)
}

// MigrateUID relabels the Machine's server with the new UID. Servers made
// before labels were used are found by name, as upstream does.
func (p *Provider) MigrateUID(ctx context.Context, m *provider.Machine, newUID string) error {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return err
	}
	api := p.api(c)
	s, err := findServer(ctx, api, m.UID)
	if err != nil {
		return err
	}
	if s == nil {
		name := m.Spec.Name
		if name == "" {
			name = m.Name
		}
		if s, err = api.ServerByName(ctx, name); err != nil {
			return classify(err, "failed to get server")
		}
	}
	if s == nil {
		provider.Logger(ctx).Info("no server to migrate")
		return nil
	}
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[MachineUIDLabel] = newUID
	if err := api.SetServerLabels(ctx, s.ID, labels); err != nil {
		return classify(err, "failed to update UID label")
	}
	return nil
}

// MachineMetricsLabels reports size and location (a datacenter's location
// when the spec names a datacenter), as upstream, with no API call.
func (p *Provider) MachineMetricsLabels(ctx context.Context, m *provider.Machine) (map[string]string, error) {
	c, err := getConfig(ctx, m.Spec, false)
	if err != nil {
		return nil, err
	}
	loc := c.Location
	if l, ok := locationOfDatacenter(c.Datacenter); loc == "" && ok {
		loc = l
	}
	return map[string]string{"size": c.ServerType, "location": loc}, nil
}

// classify turns an API failure into the error class machine-controller
// acts on: bad credentials or a refused request are terminal, a rate limit
// or server error is transient with a retry hint, anything else (network,
// garbage answers) is transient.
func classify(err error, msg string) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	switch {
	case ae.Status == 401:
		return provider.Terminal(provider.InvalidConfiguration,
			"%s: a request has been rejected due to invalid credentials which were taken from the MachineSpec (%v)", msg, ae)
	case ae.Status == 403 && ae.Code == "resource_limit_exceeded":
		return provider.Terminal(provider.InsufficientResources, "%s: %v", msg, ae)
	case ae.Status == 403:
		return provider.Terminal(provider.InvalidConfiguration, "%s: %v", msg, ae)
	case ae.Status == 400 || ae.Status == 422:
		return provider.Terminal(provider.InvalidConfiguration, "%s: %v", msg, ae)
	case ae.Status == 429:
		d := ae.RetryAfter
		if d <= 0 {
			d = time.Second // Hetzner refills one request per second
		}
		return &provider.RetryableError{RetryAfter: d, Err: fmt.Errorf("%s: %w", msg, ae)}
	case ae.Status >= 500:
		d := ae.RetryAfter
		if d <= 0 {
			d = 5 * time.Second
		}
		return &provider.RetryableError{RetryAfter: d, Err: fmt.Errorf("%s: %w", msg, ae)}
	}
	return fmt.Errorf("%s: %w", msg, ae)
}
