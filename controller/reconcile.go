package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/controller/internal/statusmsg"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// result tells the worker what to do with a key after a reconcile that
// returned no error.
type result struct {
	// requeueAfter > 0: look again after that long (instance being created
	// or deleted).
	requeueAfter time.Duration
	// terminal: a terminal error was written to the Machine's status; wait
	// for the Machine to change (or the resync) rather than retry.
	terminal bool
}

// reconcile brings one Machine closer to its desired state, following
// machine-controller's Reconcile:
//
//   - deleting: Cleanup; done → remove the finalizer; in progress → call
//     again later, with backoff.
//   - otherwise: Get; not found → add the finalizer, Validate, then Create;
//     found → set spec.providerID and status.addresses, clear errors.
//
// A TerminalError is written into status.errorReason/errorMessage and not
// retried; any other error is returned for a retry with backoff.
func (c *Controller) reconcile(ctx context.Context, key string) (result, error) {
	obj, exists, err := c.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return result{}, err
	}
	if !exists {
		c.metrics.forget(key)
		c.deleteBackoff.Forget(key)
		return result{}, nil
	}
	m := obj.(*clusterv1alpha1.Machine).DeepCopy()
	log := c.log.With("machine", key)

	if m.DeletionTimestamp != nil && !slices.Contains(m.Finalizers, FinalizerDeleteInstance) {
		return result{}, nil // not ours (any more): nothing to clean up
	}

	cfg, err := providerconfig.GetConfig(m.Spec.ProviderSpec.Value)
	if err != nil {
		if m.DeletionTimestamp != nil {
			return result{}, fmt.Errorf("cannot delete the instance: %w", err)
		}
		return c.terminal(ctx, m, clusterv1alpha1.InvalidConfigurationMachineError,
			fmt.Sprintf("invalid providerSpec: %v", err))
	}
	prov, err := c.opts.Providers.Provider(string(cfg.CloudProvider))
	if err != nil {
		// Retried with backoff, the finalizer untouched, deleting or not:
		// the provider may be loaded later (a module added to the
		// directory, a WasmProvider created or fixed), and only it can
		// say whether the instance is gone.
		if errors.Is(err, ErrUnknownProvider) {
			c.event(m, corev1.EventTypeWarning, ReasonProviderNotFound,
				fmt.Sprintf("cloud provider %q is not loaded; retrying", cfg.CloudProvider))
		}
		return result{}, fmt.Errorf("cloud provider %q: %w", cfg.CloudProvider, err)
	}
	// Create and Cleanup may persist changes of the Machine and list
	// PersistentVolumes, as machine-controller's MachineCreateDeleteData
	// lets them; the other methods get no call data, as there.
	data := c.callData(ctx)

	if m.DeletionTimestamp != nil {
		return c.cleanup(ctx, log, m, prov, data)
	}

	inst, err := prov.Get(ctx, m, nil)
	switch {
	case err == nil:
	case cloudprovidererrors.IsNotFound(err):
		return c.create(ctx, log, m, prov, string(cfg.CloudProvider), data)
	default:
		return c.fail(ctx, m, err)
	}
	return c.found(ctx, log, m, prov, string(cfg.CloudProvider), inst)
}

func (c *Controller) create(ctx context.Context, log logger, m *clusterv1alpha1.Machine,
	prov provider.Interface, provName string, data *provider.Data) (result, error) {
	// The finalizer goes on before the instance exists: whatever happens
	// next (a crash mid-Create included), deletion will look for it.
	if !slices.Contains(m.Finalizers, FinalizerDeleteInstance) {
		updated, err := c.updateMachine(ctx, m, func(m *clusterv1alpha1.Machine) {
			if !slices.Contains(m.Finalizers, FinalizerDeleteInstance) {
				m.Finalizers = append(m.Finalizers, FinalizerDeleteInstance)
			}
		})
		if err != nil {
			return result{}, fmt.Errorf("adding finalizer: %w", err)
		}
		m = updated
	}
	// There is no admission webhook here, so Validate runs before Create,
	// as machine-controller's webhook would have run it.
	if err := prov.Validate(provider.WithMachineNamespace(ctx, m.Namespace), m.Spec, nil); err != nil {
		return c.fail(ctx, m, fmt.Errorf("validating machine: %w", err))
	}
	userdata, err := c.opts.Userdata.Userdata(ctx, m, prov)
	if err != nil {
		return result{}, fmt.Errorf("rendering userdata: %w", err)
	}
	release, ok := c.caps.TryAcquire(provName, ownerOf(m))
	if !ok {
		c.metrics.createSlotWaits.Inc()
		log.Debug("waiting for a Create slot", "provider", provName)
		return result{requeueAfter: c.opts.PollInterval}, nil
	}
	log.Info("creating instance")
	inst, err := prov.Create(ctx, m, data, userdata)
	release()
	if err != nil {
		return c.fail(ctx, m, fmt.Errorf("creating instance: %w", err))
	}
	c.metrics.creates.Inc()
	log.Info("instance created", "id", inst.ID(), "providerID", inst.ProviderID())
	// Look again soon: Get reports the addresses once the instance runs.
	return result{requeueAfter: c.opts.PollInterval}, nil
}

func (c *Controller) found(ctx context.Context, log logger, m *clusterv1alpha1.Machine,
	prov provider.Interface, provName string, inst instance.Instance) (result, error) {
	pid := inst.ProviderID()
	addrs := addresses(inst.Addresses())
	needSpec := pid != "" && (m.Spec.ProviderID == nil || *m.Spec.ProviderID != pid)
	needStatus := m.Status.ErrorReason != nil || m.Status.ErrorMessage != nil ||
		!equality.Semantic.DeepEqual(m.Status.Addresses, addrs)
	if needSpec || needStatus {
		updated, err := c.updateMachine(ctx, m, func(m *clusterv1alpha1.Machine) {
			if pid != "" {
				m.Spec.ProviderID = &pid
			}
			m.Status.Addresses = addrs
			m.Status.ErrorReason = nil
			m.Status.ErrorMessage = nil
		})
		if err != nil {
			return result{}, fmt.Errorf("updating machine: %w", err)
		}
		m = updated
		log.Info("machine updated from instance", "providerID", pid, "addresses", len(addrs))
	}
	c.metrics.observeLabels(ctx, log, m, prov, provName)
	if inst.Status() != instance.StatusRunning {
		return result{requeueAfter: c.opts.PollInterval}, nil
	}
	return result{}, nil
}

// fail turns a provider error into a result: terminal errors go into the
// status and are not retried; the others are retried with backoff.
func (c *Controller) fail(ctx context.Context, m *clusterv1alpha1.Machine, err error) (result, error) {
	if ok, reason, msg := cloudprovidererrors.IsTerminalError(err); ok {
		return c.terminal(ctx, m, reason, msg)
	}
	return result{}, err
}

func (c *Controller) terminal(ctx context.Context, m *clusterv1alpha1.Machine, reason clusterv1alpha1.MachineStatusError, msg string) (result, error) {
	msg = clipStatusMessage(msg)
	c.log.Warn("terminal error", "machine", keyOf(m), "reason", reason, "message", msg)
	if m.Status.ErrorReason != nil && *m.Status.ErrorReason == reason &&
		m.Status.ErrorMessage != nil && *m.Status.ErrorMessage == msg {
		return result{terminal: true}, nil
	}
	if _, err := c.updateMachine(ctx, m, func(m *clusterv1alpha1.Machine) {
		m.Status.ErrorReason = &reason
		m.Status.ErrorMessage = &msg
	}); err != nil {
		return result{}, fmt.Errorf("recording terminal error %s: %w", reason, err)
	}
	return result{terminal: true}, nil
}

// ownerOf names m's controller (its MachineSet), the unit of the
// per-owner Create cap; "" if none.
func ownerOf(m *clusterv1alpha1.Machine) string {
	if ref := metav1.GetControllerOf(m); ref != nil {
		return m.Namespace + "/" + ref.Kind + "/" + ref.Name
	}
	return ""
}

// addresses turns an instance's address map into a sorted list, so that the
// same instance always yields the same status.
func addresses(in map[string]corev1.NodeAddressType) []corev1.NodeAddress {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.NodeAddress, 0, len(in))
	for a, t := range in {
		out = append(out, corev1.NodeAddress{Type: t, Address: a})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Address < out[j].Address
	})
	return out
}

func keyOf(m *clusterv1alpha1.Machine) string {
	k, _ := cache.MetaNamespaceKeyFunc(m)
	return k
}

func retryAfter(err error) (time.Duration, bool) {
	if d, ok := cloudprovidererrors.RetryAfter(err); ok {
		return d, true
	}
	return 0, false
}

var errUIDChanged = errors.New("machine was replaced (UID changed)")

// ReasonProviderNotFound is the reason of the Warning Event a Machine gets
// while its cloudProvider names no loaded provider. The message names the
// provider and nothing that changes between retries, so that the
// recorder aggregates the repeats.
const ReasonProviderNotFound = "ProviderNotFound"

// event records an Event on m when Options.Recorder is set.
func (c *Controller) event(m *clusterv1alpha1.Machine, eventType, reason, msg string) {
	if c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Event(m, eventType, reason, msg)
}

// MaxStatusMessageBytes is the longest status.errorMessage the controller
// writes: a provider's terminal message is cut to it, whatever the
// provider (a wasm provider's is already cut to 64 KiB by the host, after
// it is made printable). An object of megabytes would fail its write
// (etcd's limit is ~1.5 MiB) or bloat every watch of Machines.
const MaxStatusMessageBytes = 64 << 10

// clipStatusMessage cuts msg to MaxStatusMessageBytes on a rune
// boundary, ending in "…" if it was cut.
func clipStatusMessage(msg string) string { return statusmsg.Clip(msg, MaxStatusMessageBytes) }
