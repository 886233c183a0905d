//go:build e2e

package karpenter

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// The CLI predicts what the operator does with a Consolidatable node of the real
// Karpenter: `holdfast audit`, run before the operator starts, reads the NodeClaim, the
// NodePool and the cluster's room, and predicts no hand-off of the Surge single
// replica's node, the NodePool's only one, since its pod would fit nowhere else; the
// operator, started next, says so and does not surge. (The hand-off itself, predicted,
// is covered by predict's TestPredictedHandOff.)
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

	// The node is the NodePool's only one: the single replica would find no room
	// elsewhere, so neither the prediction nor the operator hands the node over.
	report, notes := r.Audit()
	if notes != "" {
		t.Errorf("holdfast audit noted: %s", notes)
	}
	for _, f := range report.Findings {
		if f.Rule == "HF028" && f.Name == "single" {
			t.Errorf("holdfast audit predicts a hand-off of a node whose pods fit nowhere else: %s", f.Message)
		}
	}

	r.StartOperator()
	want := "Karpenter would find no room elsewhere for the pods of node " + node
	var said string
	r.Eventually(provision, "the operator to decline the hand-off for want of room", func(ctx context.Context) (bool, error) {
		p := &holdfastv1alpha1.DisruptionPolicy{}
		if err := r.hc.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: "single"}, p); err != nil {
			return false, err
		}
		for _, w := range p.Status.Workloads {
			if w.Name == "single" {
				said = w.Message
			}
		}
		return strings.Contains(said, want), nil
	})
	t.Logf("operator: %s", said)
	if set, err := r.SurgeSet(r.Ctx, r.single); err != nil || set != nil {
		t.Errorf("the operator surged single with no room elsewhere: surge set %v (%v)", set, err)
	}
}
