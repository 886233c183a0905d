//go:build e2e

package audit_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// TestFloorlessBudgetAndSuppression checks two findings of issue 19 on live objects: a
// budget with neither minAvailable nor maxUnavailable is HF022, and the real disruption
// controller indeed lets none of its three ready pods go; a finding accepted with the
// holdfast.dev/audit-ignore annotation is reported as suppressed, with its reason.
func TestFloorlessBudgetAndSuppression(t *testing.T) {
	f := framework.New(t)
	api := f.Deployment("api", 3)
	probes(api)
	api.Annotations = map[string]string{
		audit.AnnotationIgnore:       "HF006",
		audit.AnnotationIgnoreReason: "one node per zone, spread by the node pools",
	}
	f.Create(api)
	f.WaitReady(api)
	floorless := f.PDB("api", "api", 0)
	floorless.Spec.MaxUnavailable = nil
	f.Create(floorless)

	r := budgetsMatchController(f)
	i := slices.IndexFunc(r.Budgets, func(b audit.BudgetReport) bool { return b.Name == "api" })
	if i < 0 || r.Budgets[i].DisruptionsAllowed != 0 || r.Budgets[i].CurrentHealthy != 3 {
		t.Errorf("budget api %+v: want 3 healthy pods and 0 disruptions allowed, as the controller wrote", r.Budgets)
	}
	// The Eviction API refuses the pods of the budget, as HF022 says.
	pods, err := f.Pods(f.Ctx, framework.SelectorOf(api))
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods of api: %v, %v", pods, err)
	}
	if err := f.Evict(f.Ctx, &pods[0]); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting %s under the floorless budget: %v, want 429 Too Many Requests", pods[0].Name, err)
	}
	if diff := cmp.Diff([]string{"HF022 PodDisruptionBudget/api"}, found(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	var suppressed []string
	for _, s := range r.Suppressed {
		suppressed = append(suppressed, s.Rule+" "+s.Kind+"/"+s.Name+" "+s.Suppression.By+": "+s.Suppression.Reason)
	}
	if diff := cmp.Diff([]string{"HF006 Deployment/api annotation: one node per zone, spread by the node pools"}, suppressed); diff != "" {
		t.Errorf("suppressed (-want +got):\n%s", diff)
	}
}
