package hzprovider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

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
