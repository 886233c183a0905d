//go:build e2e

package disruptionpolicy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/clusterdisruptionpolicy"
)

// A ClusterDisruptionPolicy keeps its template as a DisruptionPolicy in every namespace
// it selects (rebalance settings included): budgets appear there as under a namespaced
// policy, the namespace's own
// policy comes first although younger, and a namespace that stops matching loses the
// copy and its budgets. A namespace with a DisruptionPolicy of the same name of its own
// keeps it. Each of these is told once, by an Event on the cluster policy that names the
// namespace.
func TestClusterPolicyCoversSelectedNamespaces(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	// Cluster-scoped: named after the test's namespace, so that tests never share one.
	name, label := e.Namespace, "holdfast.dev/e2e-fleet"
	cp := &holdfastv1alpha1.ClusterDisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: holdfastv1alpha1.ClusterDisruptionPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{label: name}},
			Template: holdfastv1alpha1.DisruptionPolicySpec{
				Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fleet"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Rebalance:      &holdfastv1alpha1.RebalanceSpec{},
			},
		},
	}
	if err := e.c.Create(e.Ctx, cp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.c.Delete(context.Background(), cp); client.IgnoreNotFound(err) != nil {
			t.Logf("deleting ClusterDisruptionPolicy %s: %v", name, err)
		}
	})
	long := &holdfastv1alpha1.ClusterDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("x", 64)}, Spec: cp.Spec}
	if err := e.c.Create(e.Ctx, long); err == nil || !strings.Contains(err.Error(), "at most 63 characters") {
		t.Errorf("a name of 64 characters: %v, want refused, since budgets carry it as a label value", err)
		_ = e.c.Delete(e.Ctx, long)
	}
	e.deployment("web", "fleet", 3)
	byCopy := func(pdb *policyv1.PodDisruptionBudget) bool { return pdb.Labels[holdfastv1alpha1.PolicyLabel] == name }
	if pdb, err := e.budget(e.Ctx, deploy, "web"); err != nil || pdb != nil {
		t.Fatalf("a namespace the cluster policy does not select got a budget (%v) or error %v", pdb, err)
	}

	e.labelNamespace(label, name)
	e.waitManagedBudget(deploy, "web", "made by the cluster policy's copy", byCopy)
	e.waitNamespaceEvent(cp, clusterdisruptionpolicy.EventPolicyCopied)
	copyOf := &holdfastv1alpha1.DisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: name}}
	if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(copyOf), copyOf); err != nil {
		t.Fatal(err)
	}
	stored := e.clusterPolicy(name)
	if copyOf.Labels[holdfastv1alpha1.ClusterPolicyLabel] != name || !metav1.IsControlledBy(copyOf, stored) {
		t.Errorf("copy %+v is not labelled and owned by its cluster policy", copyOf.ObjectMeta)
	}
	if r := copyOf.Spec.Rebalance; r == nil || r.MaxSkew != 1 || !equality.Semantic.DeepEqual(r, stored.Spec.Template.Rebalance) {
		t.Errorf("copy's rebalance %+v, want the template's as defaulted, %+v", r, stored.Spec.Template.Rebalance)
	}
	e.waitClusterStatus(name, "1 namespace, 1 budgeted", func(st holdfastv1alpha1.ClusterDisruptionPolicyStatus) bool {
		return st.Namespaces == 1 && st.Selected == 1 && st.Budgeted == 1
	})

	// The namespace's own policy comes first, then the copy takes over again.
	own := e.policy("fleet", nil)
	e.waitManagedBudget(deploy, "web", "made by the namespace's own policy", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Labels[holdfastv1alpha1.PolicyLabel] == own.Name
	})
	e.waitState(copyOf, deploy, "web", holdfastv1alpha1.WorkloadOverridden)
	if err := e.c.Delete(e.Ctx, own); err != nil {
		t.Fatal(err)
	}
	e.waitManagedBudget(deploy, "web", "the copy's again", byCopy)

	e.labelNamespace(label, "")
	e.Eventually(settle, "the copy deleted", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(copyOf), &holdfastv1alpha1.DisruptionPolicy{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	e.waitManagedBudget(deploy, "web", "gone with the copy", nil)
	e.waitNamespaceEvent(cp, clusterdisruptionpolicy.EventPolicyRemoved)
	e.waitClusterStatus(name, "no namespace", func(st holdfastv1alpha1.ClusterDisruptionPolicyStatus) bool {
		return st.Namespaces == 0 && st.Selected == 0
	})

	// The namespace's own policy of the same name stays its own.
	taken := e.policy(name, nil)
	e.labelNamespace(label, name)
	e.waitClusterStatus(name, "the namespace's name taken", func(st holdfastv1alpha1.ClusterDisruptionPolicyStatus) bool {
		return st.Namespaces == 0 && slices.Equal(st.NamesTaken, []string{e.Namespace})
	})
	e.waitNamespaceEvent(cp, clusterdisruptionpolicy.EventNameTaken)
	if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(taken), taken); err != nil {
		t.Fatal(err)
	}
	if metav1.IsControlledBy(taken, stored) || taken.Labels[holdfastv1alpha1.ClusterPolicyLabel] != "" {
		t.Errorf("the namespace's own policy %+v was taken over by the cluster policy", taken.ObjectMeta)
	}

	// The copy's status changed many times and the namespace was relabelled: none of that
	// repeated an Event, which the recorder would have folded into a series.
	for _, reason := range []string{clusterdisruptionpolicy.EventPolicyCopied, clusterdisruptionpolicy.EventPolicyRemoved, clusterdisruptionpolicy.EventNameTaken} {
		evs, err := e.Events(e.Ctx, cp, reason)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(evs) != 1:
			t.Errorf("%d Events %s, want 1", len(evs), reason)
		case evs[0].Series != nil:
			t.Errorf("Event %s recorded %d times, want once", reason, evs[0].Series.Count)
		}
	}
	if out := e.kubectl("describe", "clusterdisruptionpolicy", name); !strings.Contains(out, clusterdisruptionpolicy.EventNameTaken) {
		t.Errorf("kubectl describe shows no %s Event:\n%s", clusterdisruptionpolicy.EventNameTaken, out)
	}
}

// waitNamespaceEvent waits for an Event of the given reason on the cluster policy that
// names the test's namespace.
func (e *env) waitNamespaceEvent(cp *holdfastv1alpha1.ClusterDisruptionPolicy, reason string) {
	e.T.Helper()
	if note := e.waitEvent(cp, reason); !strings.Contains(note, "namespace "+e.Namespace+" ") {
		e.T.Errorf("Event %s %q does not name namespace %s", reason, note, e.Namespace)
	}
}

// labelNamespace sets a label on the test's namespace, or removes it when value is "".
func (e *env) labelNamespace(key, value string) {
	e.T.Helper()
	var v any // null removes the label
	if value != "" {
		v = value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Clientset.CoreV1().Namespaces().Patch(e.Ctx, e.Namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.T.Fatalf("labelling namespace %s: %v", e.Namespace, err)
	}
}

func (e *env) clusterPolicy(name string) *holdfastv1alpha1.ClusterDisruptionPolicy {
	e.T.Helper()
	cp := &holdfastv1alpha1.ClusterDisruptionPolicy{}
	if err := e.c.Get(e.Ctx, client.ObjectKey{Name: name}, cp); err != nil {
		e.T.Fatal(err)
	}
	return cp
}

// waitClusterStatus waits until the cluster policy's status, for its current
// generation, satisfies ok.
func (e *env) waitClusterStatus(name, what string, ok func(holdfastv1alpha1.ClusterDisruptionPolicyStatus) bool) {
	e.T.Helper()
	e.Eventually(settle, "ClusterDisruptionPolicy status: "+what, func(ctx context.Context) (bool, error) {
		cp := &holdfastv1alpha1.ClusterDisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: name}, cp); err != nil {
			return false, err
		}
		return cp.Status.ObservedGeneration == cp.Generation && ok(cp.Status), nil
	})
}
