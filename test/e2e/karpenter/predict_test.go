//go:build e2e

package karpenter

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// The CLI predicts the hand-off the operator then makes: `holdfast audit`, run before the
// operator starts, reads the real Karpenter's NodeClaim and NodePool and says the Surge
// single replica is surged ahead of Karpenter's scale-down of its node; the operator,
// started next, surges it so. The node is the NodePool's only one, so Karpenter, which
// can only delete a node whose pods fit elsewhere here, leaves it in place meanwhile.
func TestPredictedHandOff(t *testing.T) {
	r := &run{Framework: framework.New(t)}
	r.hc = r.HoldfastClient()
	r.InstallCRDs(r.hc, &holdfastv1alpha1.DisruptionPolicyList{})
	t.Cleanup(func() {
		if err := r.hc.DeleteAllOf(context.Background(), &holdfastv1alpha1.DisruptionPolicy{}, client.InNamespace(r.Namespace)); err != nil {
			t.Logf("deleting DisruptionPolicies: %v", err)
		}
	})
	r.NodePool("10s", nil)
	r.single = r.deployment("single", 1, "300m", nil)
	r.waitReady(r.single)
	node := r.nodesOf(r.single)[0]
	r.policy("single", holdfastv1alpha1.SingleReplicaSurge)
	r.Eventually(provision, "the NodeClaim of node "+node+" Consolidatable", func(ctx context.Context) (bool, error) {
		claims, err := r.NodeClaims(ctx)
		for i := range claims {
			if policy.ClaimNode(&claims[i]) == node && !policy.ConsolidatableSince(&claims[i]).IsZero() {
				return true, nil
			}
		}
		return false, err
	})

	want := "ahead of Karpenter's scale-down of node " + node
	var predicted string
	report, notes := r.Audit()
	if notes != "" {
		t.Errorf("holdfast audit noted: %s", notes)
	}
	for _, f := range report.Findings {
		if f.Rule == "HF028" && f.Kind == "DisruptionPolicy" && f.Name == "single" {
			predicted = f.Message
		}
	}
	if !strings.Contains(predicted, want) {
		t.Fatalf("holdfast audit did not predict the hand-off of node %s: HF028 says %q", node, predicted)
	}
	t.Logf("predicted: %s", predicted)

	r.StartOperator()
	var done string
	r.Eventually(provision, "the operator to surge single ahead of Karpenter", func(ctx context.Context) (bool, error) {
		done = r.surgeMessage(ctx)
		return done != "", nil
	})
	if !strings.Contains(done, want) {
		t.Errorf("the operator surged single for another reason than predicted: %q", done)
	}
	d := &appsv1.Deployment{}
	if err := r.Client.Get(r.Ctx, client.ObjectKeyFromObject(r.single), d); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(d.Annotations[holdfastv1alpha1.HandOffAnnotation]); len(got) == 0 || got[0] != node {
		t.Errorf("the Deployment records hand-off %q, want one of node %s", d.Annotations[holdfastv1alpha1.HandOffAnnotation], node)
	}
}
