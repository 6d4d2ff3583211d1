package infrastructure

import (
	"log/slog"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/statusmsg"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxConditionMessage is metav1.Condition's declared limit on a message
// (32768 bytes): a provider's error is cut to it.
const maxConditionMessage = 32 << 10

// maxEventMessage: an Event repeats a provider's message in short.
const maxEventMessage = 1 << 10

// scope is one reconcile of one WasmMachine: the object as it will be
// written, as it was read, and the logger naming it.
type scope struct {
	wm     *infrav1.WasmMachine
	before *infrav1.WasmMachine
	log    *slog.Logger
	req    reconcile.Request
	// gone: the finalizer was removed and the object may be deleted;
	// there is no status to write.
	gone bool
}

func (s *scope) key() types.NamespacedName { return s.req.NamespacedName }

// set sets one condition of the WasmMachine for its current generation.
func (s *scope) set(typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.wm.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason,
		Message:            statusmsg.Clip(msg, maxConditionMessage),
		ObservedGeneration: s.wm.Generation,
	})
}

// notReady sets Ready False with reason and message.
func (s *scope) notReady(reason, msg string) {
	s.set(infrav1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// terminalFailure returns the TerminalFailure condition if it is true
// for the WasmMachine's current generation: the provider refused this
// spec for good, and it is not tried again until the spec changes.
func (s *scope) terminalFailure() *metav1.Condition {
	c := meta.FindStatusCondition(s.wm.Status.Conditions, infrav1.ConditionTerminalFailure)
	if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == s.wm.Generation {
		return c
	}
	return nil
}

// clearFailure marks the WasmMachine free of terminal failures.
func (s *scope) clearFailure() {
	s.set(infrav1.ConditionTerminalFailure, metav1.ConditionFalse, infrav1.ReasonNoFailure, "")
	s.wm.Status.FailureReason, s.wm.Status.FailureMessage = nil, nil
}
