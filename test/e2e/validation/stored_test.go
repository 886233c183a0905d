//go:build e2e

package validation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// settle bounds waits for the control plane and the operator to converge.
const settle = 60 * time.Second

// relaxCRDs applies holdfast's CRDs without their CEL rules, bounds and patterns, as an
// older release's schema would have let values through, and puts the real ones back when
// the test ends.
func (e *env) relaxCRDs() {
	e.T.Helper()
	for _, u := range e.CRDs() {
		relax(u.Object)
		if err := e.c.Apply(e.Ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("holdfast-e2e"), client.ForceOwnership); err != nil {
			e.T.Fatalf("applying CRD %s relaxed: %v", u.GetName(), err)
		}
	}
	e.T.Cleanup(func() {
		// The test's context is done by the time cleanups run.
		f := *e.Framework
		f.Ctx = context.Background()
		f.InstallCRDs(e.c)
	})
}

// relax drops every rule that refuses a value from a schema, recursively.
func relax(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range []string{"x-kubernetes-validations", "maximum", "minimum", "pattern", "maxLength", "enum"} {
			delete(v, k)
		}
		for _, c := range v {
			relax(c)
		}
	case []any:
		for _, c := range v {
			relax(c)
		}
	}
}

// An operator started with objects stored before the schema tightened, holding values
// the Go types cannot decode, keeps every controller running: the other objects of the
// same kinds are handled, and each bad one is named on itself (condition InvalidSpec and
// a Warning Event) while what it manages is left alone.
func TestStoredBeforeTheSchemaTightened(t *testing.T) {
	e := setup(t)
	e.relaxCRDs()
	stalePolicy := object("DisruptionPolicy", e.Namespace, map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "stale"}}, "maxUnavailable": int64(3000000000),
		"singleReplica": "Protect", "escapeAfter": "banana",
	})
	stalePolicy.SetName("stale")
	staleCompanion := object("NodeCompanion", e.Namespace, companionSpec(int64(2147483648)))
	staleCompanion.SetName("stale")
	for _, o := range []*unstructured.Unstructured{stalePolicy, staleCompanion} {
		o.SetGenerateName("")
		// The API server validates with a CRD's new schema only once its own watch has
		// seen the update: until then the strict schema still refuses the object.
		e.Eventually(settle, fmt.Sprintf("%s %s created under the relaxed schema", o.GetKind(), o.GetName()), func(ctx context.Context) (bool, error) {
			err := e.c.Create(ctx, o.DeepCopy())
			return err == nil || apierrors.IsAlreadyExists(err), err
		})
	}
	e.InstallCRDs(e.c, &holdfastv1alpha1.DisruptionPolicyList{})

	// A good policy and a good companion beside the bad ones.
	web := e.Deployment("web", 2)
	e.create(web)
	e.create(&holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: e.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	})
	labels := map[string]string{"app": "agent"}
	e.create(&appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: e.Namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}}},
			},
		},
	})
	good := &holdfastv1alpha1.NodeCompanion{
		ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: e.Namespace},
		Spec: holdfastv1alpha1.NodeCompanionSpec{
			DaemonSet: &holdfastv1alpha1.DaemonSetReference{Name: "agent"},
			Template:  corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "guard", Image: "registry.example/guard:1"}}}},
		},
	}
	e.create(good)

	e.StartOperator()

	e.Eventually(settle, "the good policy's budget", func(ctx context.Context) (bool, error) {
		b := &policyv1.PodDisruptionBudget{}
		err := e.c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: "holdfast-deploy-web"}, b)
		return err == nil, err
	})
	e.Eventually(settle, "the good companion's Deployment", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.NodeCompanion{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(good), cur); err != nil {
			return false, err
		}
		if cur.Status.Desired != int32(len(e.Nodes)) {
			return false, fmt.Errorf("status.desired %d, want %d", cur.Status.Desired, len(e.Nodes))
		}
		return true, nil
	})
	e.waitInvalidSpec(&holdfastv1alpha1.DisruptionPolicy{}, "stale", holdfastv1alpha1.ConditionBudgetsReady, "escapeAfter")
	e.waitInvalidSpec(&holdfastv1alpha1.NodeCompanion{}, "stale", holdfastv1alpha1.ConditionReady, "maxUnavailable")
	// Nothing was made for the bad companion.
	deps := &appsv1.DeploymentList{}
	if err := e.c.List(e.Ctx, deps, client.InNamespace(e.Namespace), client.MatchingLabels{holdfastv1alpha1.CompanionLabel: "stale"}); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("the invalid NodeCompanion got %d Deployments", len(deps.Items))
	}
}

// waitInvalidSpec waits until the object of that name reports condType False with
// reason InvalidSpec naming field, and a Warning Event InvalidSpec says the same.
func (e *env) waitInvalidSpec(obj client.Object, name, condType, field string) {
	e.T.Helper()
	e.Eventually(settle, fmt.Sprintf("%T %s reported invalid", obj, name), func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, obj); err != nil {
			return false, err
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *holdfastv1alpha1.DisruptionPolicy:
			conds = o.Status.Conditions
		case *holdfastv1alpha1.NodeCompanion:
			conds = o.Status.Conditions
		}
		c := meta.FindStatusCondition(conds, condType)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != holdfastv1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, field) {
			return false, fmt.Errorf("condition %s: %+v", condType, c)
		}
		evs, err := e.Events(ctx, obj, holdfastv1alpha1.ReasonInvalidSpec)
		if err != nil {
			return false, err
		}
		if len(evs) == 0 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Note, field) {
			return false, fmt.Errorf("events: %+v", evs)
		}
		return true, nil
	})
}

// A time zone has only its shape checked by the schema: one the operator does not know
// is accepted by the API server and reported by the operator, which keeps the policy's
// budgets closed (no voluntary disruption) until it is fixed.
func TestUnknownTimeZoneFailsClosed(t *testing.T) {
	e := setup(t)
	web := e.Deployment("web", 2)
	e.create(web)
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "mars", Namespace: e.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaintenanceWindows: []holdfastv1alpha1.MaintenanceWindow{{Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}},
		},
	}
	e.create(p)
	e.StartOperator()
	e.Eventually(settle, "a closed budget and the InvalidWindow condition and Event", func(ctx context.Context) (bool, error) {
		b := &policyv1.PodDisruptionBudget{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: "holdfast-deploy-web"}, b); err != nil {
			return false, err
		}
		if b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 0 {
			return false, fmt.Errorf("budget maxUnavailable %v, want 0", b.Spec.MaxUnavailable)
		}
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionWindowOpen)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != holdfastv1alpha1.ReasonInvalidWindow || !strings.Contains(c.Message, "Mars/Olympus") {
			return false, fmt.Errorf("WindowOpen: %+v", c)
		}
		evs, err := e.Events(ctx, cur, "InvalidWindow")
		if err != nil {
			return false, err
		}
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Note, "Mars/Olympus") {
			return false, fmt.Errorf("InvalidWindow Events: %+v", evs)
		}
		return true, nil
	})
}
