package infrastructure

import (
	"context"
	"fmt"
	"log/slog"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ClusterReconciler reconciles WasmClusters: Cluster API's InfraCluster.
// wasmprov makes no cluster-wide infrastructure, so a WasmCluster is
// provisioned as soon as it is seen (unless paused); its
// spec.controlPlaneEndpoint, if set, is what Cluster API copies to the
// Cluster.
type ClusterReconciler struct {
	// Client reads and writes WasmClusters and reads Clusters:
	// mgr.GetClient().
	Client client.Client
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// SetupWithManager adds the reconciler to mgr, watching WasmClusters and
// the Clusters that own them (pause). It fails, naming the fix, when
// Cluster API is not installed.
func (r *ClusterReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Client == nil {
		return fmt.Errorf("infrastructure: ClusterReconciler.Client is required")
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if err := clusterAPIServed(mgr); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named("wasmcluster").
		For(&infrav1.WasmCluster{}).
		Watches(newUnstructured(clusterGVK), handler.EnqueueRequestsFromMapFunc(clusterToWasmCluster),
			builder.WithPredicates(clusterChanged)).
		Complete(r)
}

func clusterToWasmCluster(_ context.Context, o client.Object) []reconcile.Request {
	u := newUnstructured(clusterGVK)
	c, ok := o.(interface{ UnstructuredContent() map[string]any })
	if !ok {
		return nil
	}
	u.SetUnstructuredContent(c.UnstructuredContent())
	if ref, ok := infraClusterRef(u); ok {
		return []reconcile.Request{{NamespacedName: ref}}
	}
	return nil
}

// Reconcile implements reconcile.Reconciler.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wc := &infrav1.WasmCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, wc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := wc.DeepCopy()
	paused, err := r.paused(ctx, wc)
	if err != nil {
		return reconcile.Result{}, err
	}
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&wc.Status.Conditions, metav1.Condition{Type: typ, Status: status,
			Reason: reason, Message: msg, ObservedGeneration: wc.Generation})
	}
	if paused {
		set(infrav1.ConditionPaused, metav1.ConditionTrue, infrav1.ReasonPaused, "the Cluster or the WasmCluster is paused")
	} else {
		set(infrav1.ConditionPaused, metav1.ConditionFalse, infrav1.ReasonNotPaused, "")
		if wc.DeletionTimestamp == nil {
			wc.Status.Initialization = &infrav1.WasmClusterInitialization{Provisioned: ptr.To(true)}
			set(infrav1.ConditionReady, metav1.ConditionTrue, infrav1.ReasonProvisioned, "")
		}
	}
	if equality.Semantic.DeepEqual(before.Status, wc.Status) {
		return reconcile.Result{}, nil
	}
	if err := r.Client.Status().Patch(ctx, wc, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("writing the status: %w", err)
	}
	r.Logger.Info("WasmCluster reconciled", "wasmCluster", req.String(), "paused", paused)
	return reconcile.Result{}, nil
}

// paused: the WasmCluster's paused annotation, or its owning Cluster's
// spec.paused or annotation.
func (r *ClusterReconciler) paused(ctx context.Context, wc *infrav1.WasmCluster) (bool, error) {
	if _, ok := wc.Annotations[PausedAnnotation]; ok {
		return true, nil
	}
	for _, ref := range wc.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterAPIGroup || ref.Kind != "Cluster" {
			continue
		}
		c, err := getCluster(ctx, r.Client, wc.Namespace, ref.Name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return c.paused(), nil
	}
	return false, nil
}
