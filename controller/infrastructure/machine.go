package infrastructure

import (
	"context"
	"fmt"
	"sort"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/controller/internal/statusmsg"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Event reasons on WasmMachines.
const (
	EventInstanceCreated    = "InstanceCreated"
	EventInstanceDeleted    = "InstanceDeleted"
	EventInstanceGone       = "InstanceGone"
	EventProviderNotServing = "ProviderNotServing"
	EventTerminalError      = "TerminalError"
)

func (r *MachineReconciler) reconcile(ctx context.Context, s *scope) (reconcile.Result, error) {
	wm := s.wm
	machine, err := ownerMachine(ctx, r.opts.Client, wm)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the owner Machine: %w", err)
	}
	var cluster *capiCluster
	if machine != nil && machine.clusterName() != "" {
		if cluster, err = getCluster(ctx, r.opts.Client, wm.Namespace, machine.clusterName()); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("reading Cluster %s: %w", machine.clusterName(), err)
		}
	}
	_, annotated := wm.Annotations[PausedAnnotation]
	if annotated || (cluster != nil && cluster.paused()) {
		s.set(infrav1.ConditionPaused, metav1.ConditionTrue, infrav1.ReasonPaused, "the Cluster or the WasmMachine is paused")
		return reconcile.Result{}, nil
	}
	s.set(infrav1.ConditionPaused, metav1.ConditionFalse, infrav1.ReasonNotPaused, "")
	if wm.DeletionTimestamp != nil {
		kubelet := ""
		if machine != nil {
			kubelet = machine.kubeletVersion()
		}
		return r.reconcileDelete(ctx, s, kubelet)
	}
	switch {
	case machine == nil:
		s.notReady(infrav1.ReasonWaitingForMachineOwner, "waiting for a Cluster API Machine to own this WasmMachine")
		return reconcile.Result{}, nil
	case cluster == nil:
		s.notReady(infrav1.ReasonWaitingForCluster, fmt.Sprintf("Cluster %q not found", machine.clusterName()))
		return reconcile.Result{}, nil
	}
	if !cluster.infrastructureProvisioned() {
		s.notReady(infrav1.ReasonWaitingForCluster, fmt.Sprintf("waiting for Cluster %q's infrastructure to be provisioned", machine.clusterName()))
		return reconcile.Result{}, nil
	}
	return r.reconcileNormal(ctx, s, machine)
}

// reconcileNormal finds the instance, creating it if there is none yet.
func (r *MachineReconciler) reconcileNormal(ctx context.Context, s *scope, machine *capiMachine) (reconcile.Result, error) {
	wm := s.wm
	if s.terminalFailure() != nil {
		return reconcile.Result{}, nil // the provider refused this spec for good: wait for a new one
	}
	cfg, err := providerconfig.GetConfig(&wm.Spec.ProviderSpec)
	if err != nil {
		return r.terminal(s, "InvalidConfiguration", fmt.Sprintf("invalid providerSpec: %v", err))
	}
	name := string(cfg.CloudProvider)
	prov, err := r.provider(s, name)
	if err != nil {
		return reconcile.Result{}, err
	}
	kubelet := machine.kubeletVersion()
	inst, err := prov.Get(ctx, machineView(wm, kubelet), nil)
	switch {
	case err == nil:
		return r.found(ctx, s, prov, name, inst)
	case !cloudprovidererrors.IsNotFound(err):
		return r.fail(s, fmt.Errorf("getting instance: %w", err))
	}
	if ptr.Deref(initialized(wm), false) {
		// Cluster API machines are immutable: one that lost its instance
		// is replaced (a MachineHealthCheck remediates it), not mended.
		s.notReady(infrav1.ReasonInstanceGone, "the instance was provisioned and no longer exists; it is not recreated")
		r.event(wm, corev1.EventTypeWarning, EventInstanceGone, "the instance no longer exists")
		return reconcile.Result{}, nil
	}
	return r.create(ctx, s, machine, prov, name, kubelet)
}

func initialized(wm *infrav1.WasmMachine) *bool {
	if wm.Status.Initialization == nil {
		return nil
	}
	return wm.Status.Initialization.Provisioned
}

// create calls AddDefaults, Validate and Create, once the bootstrap data
// is ready.
func (r *MachineReconciler) create(ctx context.Context, s *scope, machine *capiMachine, prov provider.Interface, provName, kubelet string) (reconcile.Result, error) {
	wm := s.wm
	secret := machine.bootstrapSecret()
	if secret == "" {
		s.notReady(infrav1.ReasonWaitingForBootstrapData, "waiting for the Machine's bootstrap data (spec.bootstrap.dataSecretName)")
		return reconcile.Result{}, nil
	}
	userdata, err := r.bootstrapData(ctx, wm.Namespace, secret)
	if err != nil {
		s.notReady(infrav1.ReasonWaitingForBootstrapData, err.Error())
		return reconcile.Result{}, err
	}
	// The finalizer goes on before the provider is asked for anything
	// that may make an instance: whatever happens next (a crash
	// mid-Create included), deletion looks for it. Not earlier: a
	// WasmMachine whose provider never served it has nothing to clean up,
	// and is deleted without one.
	if !controllerutil.ContainsFinalizer(wm, infrav1.FinalizerWasmMachine) {
		if err := r.patchSpec(ctx, s, func(wm *infrav1.WasmMachine) {
			controllerutil.AddFinalizer(wm, infrav1.FinalizerWasmMachine)
		}); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	// The namespace lets the provider resolve the spec's Secret and
	// ConfigMap references, as in a machine-controller Machine's.
	nsCtx := provider.WithMachineNamespace(ctx, wm.Namespace)
	view := machineView(wm, kubelet)
	spec, err := prov.AddDefaults(nsCtx, view.Spec, nil)
	if err != nil {
		return r.fail(s, fmt.Errorf("defaulting the providerSpec: %w", err))
	}
	// The defaults are stored, as machine-controller's webhook stores
	// them: every later call sees the spec Create saw.
	if v := spec.ProviderSpec.Value; v != nil && !sameJSON(*v, wm.Spec.ProviderSpec) {
		if err := r.patchSpec(ctx, s, func(wm *infrav1.WasmMachine) { wm.Spec.ProviderSpec = *v.DeepCopy() }); err != nil {
			return reconcile.Result{}, fmt.Errorf("storing the providerSpec's defaults: %w", err)
		}
		view = machineView(s.wm, kubelet)
	}
	if err := prov.Validate(nsCtx, view.Spec, nil); err != nil {
		return r.fail(s, fmt.Errorf("validating the providerSpec: %w", err))
	}
	release, ok := r.caps.TryAcquire(provName, machine.owner())
	if !ok {
		s.notReady(infrav1.ReasonWaitingForCreateSlot, fmt.Sprintf("as many Creates as allowed are running for provider %q or this MachineSet", provName))
		return reconcile.Result{RequeueAfter: r.opts.PollInterval}, nil
	}
	s.log.Info("creating instance")
	inst, err := prov.Create(ctx, view, r.callData(ctx, kubelet), userdata)
	release()
	if err != nil {
		return r.fail(s, fmt.Errorf("creating instance: %w", err))
	}
	r.metrics.creates.Inc()
	s.log.Info("instance created", "id", inst.ID(), "providerID", inst.ProviderID())
	r.event(s.wm, corev1.EventTypeNormal, EventInstanceCreated, "created instance "+statusmsg.Clip(inst.ID(), 256))
	s.notReady(infrav1.ReasonProvisioning, "instance created")
	s.clearFailure()
	return reconcile.Result{RequeueAfter: r.opts.PollInterval}, nil
}

// bootstrapData reads the bootstrap Secret's value: Create's userdata.
func (r *MachineReconciler) bootstrapData(ctx context.Context, namespace, name string) (string, error) {
	var sec corev1.Secret
	if err := r.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sec); err != nil {
		return "", fmt.Errorf("reading bootstrap data Secret %s: %w", name, err)
	}
	v, ok := sec.Data["value"]
	if !ok {
		return "", fmt.Errorf("bootstrap data Secret %s has no key \"value\"", name)
	}
	return string(v), nil
}

// found records what the provider reports of an existing instance; it is
// provisioned once it runs.
func (r *MachineReconciler) found(ctx context.Context, s *scope, prov provider.Interface, provName string, inst instance.Instance) (reconcile.Result, error) {
	pid := inst.ProviderID()
	if pid == "" {
		// Cluster API links the Node by it: a provider that reports none
		// gets one naming the provider and the instance.
		pid = fmt.Sprintf("wasmprov://%s/%s", provName, inst.ID())
	}
	if s.wm.Spec.ProviderID != pid {
		if err := r.patchSpec(ctx, s, func(wm *infrav1.WasmMachine) { wm.Spec.ProviderID = pid }); err != nil {
			return reconcile.Result{}, fmt.Errorf("setting spec.providerID: %w", err)
		}
	}
	st := &s.wm.Status
	st.Addresses = addresses(inst.Addresses())
	st.InstanceID = statusmsg.Clip(inst.ID(), 256)
	st.InstanceStatus = string(inst.Status())
	s.clearFailure()
	r.metrics.observeLabels(ctx, s, prov, provName)
	if inst.Status() != instance.StatusRunning {
		s.notReady(infrav1.ReasonProvisioning, fmt.Sprintf("instance %s is %s", st.InstanceID, st.InstanceStatus))
		return reconcile.Result{RequeueAfter: r.opts.PollInterval}, nil
	}
	st.Initialization = &infrav1.WasmMachineInitialization{Provisioned: ptr.To(true)}
	s.set(infrav1.ConditionReady, metav1.ConditionTrue, infrav1.ReasonProvisioned, "")
	return reconcile.Result{}, nil
}

// reconcileDelete calls Cleanup until it is done, then removes the
// finalizer.
func (r *MachineReconciler) reconcileDelete(ctx context.Context, s *scope, kubelet string) (reconcile.Result, error) {
	wm := s.wm
	if !controllerutil.ContainsFinalizer(wm, infrav1.FinalizerWasmMachine) {
		s.gone = true
		return reconcile.Result{}, nil
	}
	s.notReady(infrav1.ReasonDeleting, "deleting the instance")
	cfg, err := providerconfig.GetConfig(&wm.Spec.ProviderSpec)
	if err != nil {
		// Only the provider can say whether the instance is gone.
		return reconcile.Result{}, fmt.Errorf("cannot delete the instance: invalid providerSpec: %w", err)
	}
	prov, err := r.provider(s, string(cfg.CloudProvider))
	if err != nil {
		return reconcile.Result{}, err
	}
	done, err := prov.Cleanup(ctx, machineView(wm, kubelet), r.callData(ctx, kubelet))
	if err != nil {
		return r.fail(s, fmt.Errorf("deleting instance: %w", err))
	}
	if !done {
		after := r.deleteBackoff.When(s.req)
		s.log.Info("deletion in progress", "attempt", r.deleteBackoff.NumRequeues(s.req), "next", after)
		return reconcile.Result{RequeueAfter: after}, nil
	}
	// Not found: a reconcile of a stale cached copy, after the one that
	// removed the finalizer; the WasmMachine is gone, as it should be.
	if err := r.patchSpec(ctx, s, func(wm *infrav1.WasmMachine) {
		controllerutil.RemoveFinalizer(wm, infrav1.FinalizerWasmMachine)
	}); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	s.gone = true
	r.deleteBackoff.Forget(s.req)
	r.metrics.deletes.Inc()
	r.metrics.forget(s.req.String())
	r.event(wm, corev1.EventTypeNormal, EventInstanceDeleted, "the instance is deleted")
	s.log.Info("instance deleted, finalizer removed")
	return reconcile.Result{}, nil
}

// provider returns the provider name, or says on the WasmMachine that it
// is not serving and returns an error to retry with backoff: a module may
// be added to the directory, a WasmProvider created or fixed.
func (r *MachineReconciler) provider(s *scope, name string) (provider.Interface, error) {
	prov, err := r.opts.Providers.Provider(name)
	if err != nil {
		s.notReady(infrav1.ReasonProviderNotServing, fmt.Sprintf("provider %q is not serving: %v", name, err))
		// The message names the provider only, so that the recorder
		// folds the repeats into one Event with a count.
		r.event(s.wm, corev1.EventTypeWarning, EventProviderNotServing, fmt.Sprintf("provider %q is not serving; retrying", statusmsg.Clip(name, 256)))
		return nil, fmt.Errorf("provider %q: %w", name, err)
	}
	return prov, nil
}

// fail turns a provider error into a result: a terminal error is
// recorded and not retried until the spec changes; a retry hint is
// followed; any other error is retried with backoff.
func (r *MachineReconciler) fail(s *scope, err error) (reconcile.Result, error) {
	if ok, reason, msg := cloudprovidererrors.IsTerminalError(err); ok {
		return r.terminal(s, string(reason), msg)
	}
	s.notReady(infrav1.ReasonProviderError, err.Error())
	if d, ok := cloudprovidererrors.RetryAfter(err); ok {
		s.log.Info("provider error, retrying after its hint", "after", d, "err", err)
		return reconcile.Result{RequeueAfter: d}, nil
	}
	return reconcile.Result{}, err
}

// terminal records a failure no retry fixes: the TerminalFailure
// condition (reason: machine-controller's error reason), Ready false,
// and the deprecated v1beta1 failure fields.
func (r *MachineReconciler) terminal(s *scope, reason, msg string) (reconcile.Result, error) {
	msg = statusmsg.Clip(msg, maxConditionMessage)
	if s.terminalFailure() == nil {
		r.metrics.terminal.Inc()
		s.log.Warn("terminal error", "reason", reason, "message", msg)
		r.event(s.wm, corev1.EventTypeWarning, EventTerminalError, reason+": "+statusmsg.Clip(msg, maxEventMessage))
	}
	s.set(infrav1.ConditionTerminalFailure, metav1.ConditionTrue, reason, msg)
	s.notReady(infrav1.ReasonTerminalError, msg)
	s.wm.Status.FailureReason, s.wm.Status.FailureMessage = &reason, &msg
	return reconcile.Result{}, nil
}

// callData is what Create and Cleanup get: the MachineUpdater and the
// PersistentVolumes (from the manager's cache).
func (r *MachineReconciler) callData(ctx context.Context, kubelet string) *provider.Data {
	return &provider.Data{
		Update: r.updater(ctx, kubelet),
		ListPersistentVolumes: func(ctx context.Context, sel labels.Selector) ([]corev1.PersistentVolume, error) {
			var l corev1.PersistentVolumeList
			if err := r.opts.Client.List(ctx, &l, client.MatchingLabelsSelector{Selector: sel}); err != nil {
				return nil, err
			}
			return l.Items, nil
		},
	}
}

// patchSpec applies modify to the WasmMachine's metadata and spec and
// writes them (a merge patch); the status being built is kept.
func (r *MachineReconciler) patchSpec(ctx context.Context, s *scope, modify func(*infrav1.WasmMachine)) error {
	status := s.wm.Status.DeepCopy()
	base := s.wm.DeepCopy()
	modify(s.wm)
	err := r.opts.Client.Patch(ctx, s.wm, client.MergeFrom(base))
	s.wm.Status = *status
	return err
}

// patchStatus writes the status built by a reconcile, if it changed.
func (r *MachineReconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	s.wm.Status.ObservedGeneration = s.wm.Generation
	if equality.Semantic.DeepEqual(s.before.Status, s.wm.Status) {
		return nil
	}
	base := s.wm.DeepCopy()
	base.Status = s.before.Status
	if err := r.opts.Client.Status().Patch(ctx, s.wm, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the status: %w", err)
	}
	return nil
}

func (r *MachineReconciler) event(wm *infrav1.WasmMachine, typ, reason, msg string) {
	if r.opts.Recorder != nil {
		r.opts.Recorder.Event(wm, typ, reason, msg)
	}
}

// maxAddresses is the most addresses a WasmMachine's status lists.
const maxAddresses = 32

// addresses turns an instance's address map into a sorted list, so that
// the same instance always yields the same status.
func addresses(in map[string]corev1.NodeAddressType) []infrav1.MachineAddress {
	if len(in) == 0 {
		return nil
	}
	out := make([]infrav1.MachineAddress, 0, len(in))
	for a, t := range in {
		out = append(out, infrav1.MachineAddress{Type: statusmsg.Clip(string(t), 64), Address: statusmsg.Clip(a, 256)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Address < out[j].Address
	})
	// A provider is untrusted: a thousand addresses would bloat every
	// watch of WasmMachines (and Machines, where Cluster API copies them).
	return out[:min(len(out), maxAddresses)]
}
