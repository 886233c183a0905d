package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/plan"
)

// shop is issue 15's scenario: a DisruptionPolicy (selector {}, maxUnavailable 1,
// singleReplica Surge) over a 4-replica Deployment spread by hostname and a 1-replica
// Deployment, on five nodes.
const shop = "testdata/shop/"

// The audit sees the budgets the policy will make: no HF002 or HF013, and both budgets
// listed as the policy's.
func TestAuditShopSeesThePolicysBudgets(t *testing.T) {
	stdout, stderr, code := runAudit(t, "", "audit", "-o", "json", "-f", shop+"shop.yaml")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want %d and none", code, stderr, ExitOK)
	}
	var r audit.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 {
		t.Errorf("findings %+v, want none", r.Findings)
	}
	type budget struct {
		Name                  string
		Allowed, AtFullHealth int32
		ManagedBy             string
	}
	var got []budget
	for _, b := range r.Budgets {
		got = append(got, budget{Name: b.Namespace + "/" + b.Name, Allowed: b.DisruptionsAllowed, AtFullHealth: b.DisruptionsAllowedAtFullHealth, ManagedBy: b.ManagedBy})
	}
	want := []budget{
		{Name: "shop/holdfast-deploy-checkout", ManagedBy: "defaults"},
		{Name: "shop/holdfast-deploy-storefront", Allowed: 1, AtFullHealth: 1, ManagedBy: "defaults"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
}

// The plan drains as the operator would: one storefront pod per wave, and the surged
// single replica never down.
func TestPlanDrainShopHonoursThePolicy(t *testing.T) {
	stdout, stderr, code := runAudit(t, "", "plan", "drain", "--all", "--uncordon", "-o", "json",
		"-f", shop+"shop.yaml", "-f", shop+"nodes.yaml")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want %d and none", code, stderr, ExitOK)
	}
	var r struct {
		Waves    [][]string        `json:"waves"`
		Blocked  []plan.Blocker    `json:"blocked"`
		Capacity [][]plan.Capacity `json:"capacity"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Blocked) > 0 {
		t.Errorf("blocked %+v, want none", r.Blocked)
	}
	drained := 0
	for i, wave := range r.Capacity {
		drained += len(r.Waves[i])
		for _, c := range wave {
			switch c.Name {
			case "storefront":
				if c.Ready < 3 {
					t.Errorf("wave %d leaves storefront at %d/4 ready, want at most 1 pod out", i+1, c.Ready)
				}
			case "checkout":
				if c.Ready != 1 || !c.Surged {
					t.Errorf("wave %d leaves checkout at %d/1 ready (surged %t), want 1/1 surged", i+1, c.Ready, c.Surged)
				}
			}
		}
	}
	if drained != 5 {
		t.Errorf("%d nodes drained, want 5", drained)
	}
}

// Under Protect the single replica's node waits: the plan blocks it, naming escapeAfter.
func TestPlanDrainShopUnderProtect(t *testing.T) {
	manifest, err := os.ReadFile(shop + "shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	protected := strings.Replace(string(manifest), "singleReplica: Surge", "singleReplica: Protect\n  escapeAfter: 10m", 1)
	stdout, _, code := runAudit(t, protected, "plan", "drain", "--all", "--uncordon", "-o", "json", "-f", "-", "-f", shop+"nodes.yaml")
	if code != ExitFindings {
		t.Errorf("exit %d, want %d (a node blocked)", code, ExitFindings)
	}
	var r struct {
		Blocked []plan.Blocker `json:"blocked"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Blocked) != 1 || len(r.Blocked[0].Reasons) != 1 {
		t.Fatalf("blocked %+v, want the checkout's node for one reason", r.Blocked)
	}
	reason := r.Blocked[0].Reasons[0]
	if reason.Type != plan.PolicyHeld || reason.Name != "holdfast-deploy-checkout" || !strings.Contains(reason.Message, "escapeAfter (10m0s)") {
		t.Errorf("reason %+v, want PolicyHeld on holdfast-deploy-checkout naming escapeAfter", reason)
	}
}
