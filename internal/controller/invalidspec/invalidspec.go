// Package invalidspec reports the holdfast objects whose stored spec holds values the
// operator cannot decode: stored before the schema refused them, or in a NodeCompanion's
// template, which the schema leaves open (see the DecodeErrors fields of api/v1alpha1).
// The types decode such an object with those fields empty, so that the kind's cache
// still syncs and every other object is handled; each controller then leaves what that
// object manages exactly as it is, and says so here: a condition with reason
// InvalidSpec, a Warning Event when it changes, a log line and the gauge
// holdfast_invalid_spec.
package invalidspec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
)

// Reporter reports the invalid objects of one kind.
type Reporter struct {
	kind     string
	gauge    *prometheus.GaugeVec
	recorder events.EventRecorder
}

// New returns the Reporter of kind, with the gauge registered with reg (shared by every
// kind).
func New(reg prometheus.Registerer, kind string, recorder events.EventRecorder) (*Reporter, error) {
	gauge, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_invalid_spec",
		Help: "1 for each holdfast object whose stored spec holds a value the operator cannot decode or the API server refused; the operator changes nothing it manages until it is fixed.",
	}, []string{"kind", "namespace", "name"}))
	if err != nil {
		return nil, fmt.Errorf("registering the %s invalid spec metric: %w", kind, err)
	}
	return &Reporter{kind: kind, gauge: gauge, recorder: recorder}, nil
}

// Message says which fields cannot be decoded, and what the operator does about it.
func Message(field string, errs []string) string {
	return fmt.Sprintf("%s holds values the operator cannot decode (%s): nothing it manages changes until they are fixed", field, strings.Join(errs, "; "))
}

// MarkStatus sets condType and Ready False with reason InvalidSpec and msg among conditions, and
// observedGeneration to generation; it reports whether either changed, that is whether
// the status must be written (and the Event recorded).
func MarkStatus(conditions *[]metav1.Condition, observedGeneration *int64, condType, msg string, generation int64, now time.Time) bool {
	changed := false
	// Ready sums up the others: an object whose spec cannot be read is not working.
	for _, t := range []string{condType, holdfastv1alpha1.ConditionReady} {
		changed = meta.SetStatusCondition(conditions, metav1.Condition{
			Type: t, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonInvalidSpec,
			Message: msg, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
		}) || changed
	}
	if *observedGeneration != generation {
		*observedGeneration, changed = generation, true
	}
	return changed
}

// PatchStatus writes status whole onto obj's status subresource, with a merge patch:
// the other fields of status stay as the last full pass left them.
func PatchStatus(ctx context.Context, c client.Client, obj client.Object, status any) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("encoding status of %s: %w", klog.KObj(obj), err)
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching status of %s: %w", klog.KObj(obj), err)
	}
	return nil
}

// Report logs obj as invalid and sets its gauge; changed, when the condition has just
// been written, also records the Warning Event (once per change, not per reconcile).
func (r *Reporter) Report(ctx context.Context, obj client.Object, msg string, changed bool) {
	log.FromContext(ctx).Info("Spec cannot be decoded: leaving what it manages as it is", "object", klog.KObj(obj), "message", msg)
	r.gauge.WithLabelValues(r.kind, obj.GetNamespace(), obj.GetName()).Set(1)
	if changed {
		announce.Record(r.recorder, obj, announce.Warning(holdfastv1alpha1.ReasonInvalidSpec, msg))
	}
}

// Forget removes the gauge of key: its object is valid again, or gone.
func (r *Reporter) Forget(key types.NamespacedName) {
	r.gauge.DeleteLabelValues(r.kind, key.Namespace, key.Name)
}
