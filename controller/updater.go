package controller

import (
	"context"
	"fmt"
	"log/slog"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
)

type logger = *slog.Logger

// callData is what Create and Cleanup get: the Updater, and the
// PersistentVolumes of the informer's cache (none without a Kubernetes
// clientset: pv_list answers UNAVAILABLE).
func (c *Controller) callData(ctx context.Context) *provider.Data {
	d := &provider.Data{Update: c.Updater(ctx)}
	if l := c.pvLister; l != nil {
		d.ListPersistentVolumes = provider.FromLister(l)
	}
	return d
}

// Updater returns the provider.MachineUpdater handed to providers in
// Create's and Cleanup's Data: it applies modify to the Machine and persists
// it, re-reading the Machine and re-applying modify on a conflict.
func (c *Controller) Updater(ctx context.Context) provider.MachineUpdater {
	return func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		return c.updateMachine(ctx, m, modify)
	}
}

// updateMachine is machine-controller's updateMachine: apply modify to m and
// write it; on a conflict fetch the Machine afresh and try again (modify
// must be idempotent). Spec and metadata go through Update, status through
// the status subresource; an object that modify leaves unchanged is not
// written at all.
func (c *Controller) updateMachine(ctx context.Context, m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
	cur := m.DeepCopy()
	var out *clusterv1alpha1.Machine
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := c.opts.Machines.Get(ctx, m.Namespace, m.Name)
			if err != nil {
				return err
			}
			if fresh.UID != m.UID {
				return fmt.Errorf("%w: %s", errUIDChanged, keyOf(m))
			}
			cur = fresh
		}
		first = false
		before := cur.DeepCopy()
		next := cur.DeepCopy()
		modify(next)
		out = next
		specChanged := !equality.Semantic.DeepEqual(before.ObjectMeta, next.ObjectMeta) ||
			!equality.Semantic.DeepEqual(before.Spec, next.Spec)
		statusChanged := !equality.Semantic.DeepEqual(before.Status, next.Status)
		if specChanged {
			updated, err := c.opts.Machines.Update(ctx, next)
			if err != nil {
				return err
			}
			out = updated
		}
		if statusChanged {
			withStatus := out.DeepCopy()
			withStatus.Status = next.Status
			updated, err := c.opts.Machines.UpdateStatus(ctx, withStatus)
			if err != nil {
				return err
			}
			out = updated
		}
		return nil
	})
	if err != nil {
		if apierrors.IsConflict(err) {
			c.metrics.conflicts.Inc()
		}
		return nil, err
	}
	return out, nil
}
