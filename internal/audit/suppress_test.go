package audit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// suppressed is a Deployment with three replicas, no spread and no probes, that accepts
// two of its findings, and a budget that accepts one with no reason.
const suppressed = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations:
    holdfast.dev/audit-ignore: HF006,HF012
    holdfast.dev/audit-ignore-reason: one node per zone, spread by the node pools
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: shop
  annotations: {holdfast.dev/audit-ignore: "budget-matches-nothing, HF099"}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: wbe}}
`

// TestSuppress is the finding of issue 19: audit could not be told to accept a finding.
func TestSuppress(t *testing.T) {
	type result struct {
		Kept, Suppressed []string
		Warnings         []string
	}
	tests := map[string]struct {
		ignore []string
		want   result
	}{
		"annotations": {want: result{
			Kept: []string{"HF002 Deployment", "HF011 Deployment"},
			Suppressed: []string{
				"HF006 Deployment annotation one node per zone, spread by the node pools",
				"HF012 Deployment annotation one node per zone, spread by the node pools",
				"HF003 PodDisruptionBudget annotation ",
			},
			Warnings: []string{`PodDisruptionBudget/shop/web: annotation holdfast.dev/audit-ignore names unknown rule "HF099"; rules are HF001 to HF029`},
		}},
		"--ignore HF012 wins over the annotation": {
			ignore: []string{"HF012"},
			want: result{
				Kept: []string{"HF002 Deployment", "HF011 Deployment"},
				Suppressed: []string{
					"HF006 Deployment annotation one node per zone, spread by the node pools",
					"HF012 Deployment flag --ignore HF012",
					"HF003 PodDisruptionBudget annotation ",
				},
				Warnings: []string{`PodDisruptionBudget/shop/web: annotation holdfast.dev/audit-ignore names unknown rule "HF099"; rules are HF001 to HF029`},
			},
		},
		"annotations and --ignore HF011,no-budget": {
			ignore: []string{"HF011", "no-budget"},
			want: result{
				Suppressed: []string{
					"HF002 Deployment flag --ignore HF002",
					"HF006 Deployment annotation one node per zone, spread by the node pools",
					"HF011 Deployment flag --ignore HF011",
					"HF012 Deployment annotation one node per zone, spread by the node pools",
					"HF003 PodDisruptionBudget annotation ",
				},
				Warnings: []string{`PodDisruptionBudget/shop/web: annotation holdfast.dev/audit-ignore names unknown rule "HF099"; rules are HF001 to HF029`},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, problems := snapshot.LoadManifestBytes("shop.yaml", []byte(suppressed), snapshot.ManifestOptions{})
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			findings := audit.Run(availability.Build(s, now), s.Origins)
			kept, supp, warnings := audit.Suppress(findings, s, tc.ignore)
			got := result{Warnings: warnings}
			for _, f := range kept {
				if f.Suppression != nil {
					t.Errorf("kept finding %s carries a suppression", f.Rule)
				}
				got.Kept = append(got.Kept, f.Rule+" "+f.Kind)
			}
			for _, f := range supp {
				got.Suppressed = append(got.Suppressed, f.Rule+" "+f.Kind+" "+f.Suppression.By+" "+f.Suppression.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
