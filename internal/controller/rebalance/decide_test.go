package rebalance

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
)

var ref = availability.WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}

func TestTargetOf(t *testing.T) {
	moved := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		annotations map[string]string
		want        plan.RebalanceTarget
		optedIn     bool
		err         string
	}{
		"no annotation": {},
		"false":         {annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "false"}},
		"true: nodes, defaults": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true"},
			want:        plan.RebalanceTarget{Workload: ref, TopologyKeys: []string{corev1.LabelHostname}, MaxSkew: 1, Cooldown: 5 * time.Minute},
			optedIn:     true,
		},
		"keys, skew, cooldown and the last move": {
			annotations: map[string]string{
				holdfastv1alpha1.RebalanceAnnotation:         "kubernetes.io/hostname, topology.kubernetes.io/zone",
				holdfastv1alpha1.RebalanceMaxSkewAnnotation:  "2",
				holdfastv1alpha1.RebalanceCooldownAnnotation: "30s",
				holdfastv1alpha1.LastRebalanceAnnotation:     lastRebalance(moved, "web-abc"),
			},
			want: plan.RebalanceTarget{Workload: ref, TopologyKeys: []string{corev1.LabelHostname, corev1.LabelTopologyZone},
				MaxSkew: 2, Cooldown: 30 * time.Second, LastPod: "web-abc", LastMove: moved},
			optedIn: true,
		},
		"an unreadable last move is no last move": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.LastRebalanceAnnotation: "yesterday web-abc"},
			want:        plan.RebalanceTarget{Workload: ref, TopologyKeys: []string{corev1.LabelHostname}, MaxSkew: 1, Cooldown: 5 * time.Minute},
			optedIn:     true,
		},
		"bad key": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "zone!"},
			optedIn:     true, err: `holdfast.dev/rebalance: "zone!" is not a label key`,
		},
		"skew 0": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.RebalanceMaxSkewAnnotation: "0"},
			optedIn:     true, err: `holdfast.dev/rebalance-max-skew: "0" is not a whole number of at least 1`,
		},
		"bad cooldown": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.RebalanceCooldownAnnotation: "5"},
			optedIn:     true, err: `holdfast.dev/rebalance-cooldown: "5" is not a duration`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, optedIn, err := targetOf(ref, tt.annotations)
			if optedIn != tt.optedIn {
				t.Fatalf("opted in = %t, want %t", optedIn, tt.optedIn)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !optedIn {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAfterDecision(t *testing.T) {
	tests := map[plan.RebalanceOutcome]after{
		plan.RebalanceBalanced:        {},
		plan.RebalanceSingleReplica:   {},
		plan.RebalanceSettling:        {RequeueAfter: settleRetry},
		plan.RebalanceCooldown:        {RequeueAfter: 12 * time.Second},
		plan.RebalanceNoBetterPlace:   {Type: corev1.EventTypeWarning, Reason: EventRebalanceHeld, RequeueAfter: 2 * time.Minute},
		plan.RebalanceBudgetExhausted: {Type: corev1.EventTypeWarning, Reason: EventRebalanceHeld, RequeueAfter: 2 * time.Minute},
	}
	for outcome, want := range tests {
		got := afterDecision(plan.Rebalancing{Outcome: outcome, Wait: 12 * time.Second}, 2*time.Minute)
		if got != want {
			t.Errorf("%s: got %+v, want %+v", outcome, got, want)
		}
	}
	// A short cooldown does not make a refused move a hot loop.
	if got := afterDecision(plan.Rebalancing{Outcome: plan.RebalanceNoBetterPlace}, time.Second); got.RequeueAfter != heldRetry {
		t.Errorf("held with a 1s cooldown: requeue after %s, want %s", got.RequeueAfter, heldRetry)
	}
}
