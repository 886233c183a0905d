package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// web are the labels of the rebalanced Deployment; policies select tier=web.
var web = map[string]string{"app": "web", "tier": "web"}

// policy builds a DisruptionPolicy over tier=web created age ago, with the given
// rebalance settings, changed by mods.
func newPolicy(name string, age time.Duration, rb *holdfastv1alpha1.RebalanceSpec, mods ...func(*holdfastv1alpha1.DisruptionPolicySpec)) holdfastv1alpha1.DisruptionPolicy {
	p := holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).Add(-age))},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
			Rebalance: rb,
		},
	}
	for _, mod := range mods {
		mod(&p.Spec)
	}
	return p
}

// policies builds the namespace's policies.
func policies(ps ...holdfastv1alpha1.DisruptionPolicy) []holdfastv1alpha1.DisruptionPolicy { return ps }

// settings builds a Rebalance with the defaults, changed by mod.
func settings(by string, mod func(*Rebalance)) Rebalance {
	r := Rebalance{TopologyKeys: []string{corev1.LabelHostname}, MaxSkew: 1, Cooldown: 5 * time.Minute, By: by}
	if mod != nil {
		mod(&r)
	}
	return r
}

func TestRebalanceOf(t *testing.T) {
	const (
		byAnnotation = "annotation holdfast.dev/rebalance"
		byPolicy     = "DisruptionPolicy spread"
	)
	moved := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	zoned := &holdfastv1alpha1.RebalanceSpec{
		TopologyKeys: []string{corev1.LabelTopologyZone}, MaxSkew: 2, Cooldown: &metav1.Duration{Duration: time.Minute},
	}
	zonedTarget := func(t *Rebalance) {
		t.TopologyKeys, t.MaxSkew, t.Cooldown = []string{corev1.LabelTopologyZone}, 2, time.Minute
	}
	tests := map[string]struct {
		annotations map[string]string
		policies    []holdfastv1alpha1.DisruptionPolicy
		want        Rebalance
		optedIn     bool
		err         string
	}{
		"no annotation": {},
		"false":         {annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "false"}},
		"true: nodes, defaults": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true"},
			want:        settings(byAnnotation, nil),
			optedIn:     true,
		},
		"keys, skew, cooldown and the last move": {
			annotations: map[string]string{
				holdfastv1alpha1.RebalanceAnnotation:         "kubernetes.io/hostname, topology.kubernetes.io/zone",
				holdfastv1alpha1.RebalanceMaxSkewAnnotation:  "2",
				holdfastv1alpha1.RebalanceCooldownAnnotation: "30s",
				holdfastv1alpha1.LastRebalanceAnnotation:     LastRebalance(moved, "web-abc"),
			},
			want: settings(byAnnotation, func(t *Rebalance) {
				t.TopologyKeys, t.MaxSkew, t.Cooldown = []string{corev1.LabelHostname, corev1.LabelTopologyZone}, 2, 30*time.Second
				t.LastPod, t.LastMove = "web-abc", moved
			}),
			optedIn: true,
		},
		// A record cut to the second made the cooldown up to a second short: with a 3s
		// cooldown the e2e test saw moves 2.1s apart.
		"the last move to the fraction of a second": {
			annotations: map[string]string{
				holdfastv1alpha1.RebalanceAnnotation:     "true",
				holdfastv1alpha1.LastRebalanceAnnotation: LastRebalance(moved.Add(900*time.Millisecond), "web-0"),
			},
			want: settings(byAnnotation, func(t *Rebalance) {
				t.LastPod, t.LastMove = "web-0", moved.Add(900*time.Millisecond)
			}),
			optedIn: true,
		},
		"a last move recorded to the second": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.LastRebalanceAnnotation: "2026-11-22T12:00:00Z web-abc"},
			want:        settings(byAnnotation, func(t *Rebalance) { t.LastPod, t.LastMove = "web-abc", moved }),
			optedIn:     true,
		},
		"an unreadable last move is no last move": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.LastRebalanceAnnotation: "yesterday web-abc"},
			want:        settings(byAnnotation, nil),
			optedIn:     true,
		},
		// Anyone who may annotate a workload could make its pods move back to back.
		"a cooldown below the least is raised, and says so": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.RebalanceCooldownAnnotation: "0s"},
			want: settings(byAnnotation, func(r *Rebalance) {
				r.Cooldown = 10 * time.Second
				r.Raised = "the cooldown 0s (annotation holdfast.dev/rebalance-cooldown) is below the least holdfast applies: 10s is used instead"
			}),
			optedIn: true,
		},
		"settings without the opt-in annotation": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceCooldownAnnotation: "30s"},
		},
		"a policy without rebalance": {policies: policies(newPolicy("spread", time.Hour, nil))},
		"an older policy without rebalance wins": {
			policies: policies(newPolicy("spread", time.Hour, zoned), newPolicy("budgets", 2*time.Hour, nil)),
		},
		"the older policy's settings": {
			policies: policies(newPolicy("spread", time.Hour, zoned), newPolicy("hosts", time.Minute, &holdfastv1alpha1.RebalanceSpec{MaxSkew: 3})),
			want:     settings(byPolicy, zonedTarget),
			optedIn:  true,
		},
		"a policy that does not select it": {
			policies: policies(newPolicy("spread", time.Hour, zoned, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.Selector.MatchLabels["tier"] = "db" })),
		},
		"a policy of other kinds": {
			policies: policies(newPolicy("spread", time.Hour, zoned, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.Kinds = []holdfastv1alpha1.WorkloadKind{holdfastv1alpha1.KindStatefulSet}
			})),
		},
		"the policy's settings": {
			policies: policies(newPolicy("spread", time.Hour, zoned)),
			want:     settings(byPolicy, zonedTarget),
			optedIn:  true,
		},
		"a policy as written by a client that skips defaulting": {
			policies: policies(newPolicy("spread", time.Hour, &holdfastv1alpha1.RebalanceSpec{})),
			want:     settings(byPolicy, nil),
			optedIn:  true,
		},
		"the policy's settings and the last move": {
			annotations: map[string]string{holdfastv1alpha1.LastRebalanceAnnotation: LastRebalance(moved, "web-abc")},
			policies:    policies(newPolicy("spread", time.Hour, zoned)),
			want: settings(byPolicy, func(t *Rebalance) {
				zonedTarget(t)
				t.LastPod, t.LastMove = "web-abc", moved
			}),
			optedIn: true,
		},
		"an annotation overrides its setting only": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceCooldownAnnotation: "30s"},
			policies:    policies(newPolicy("spread", time.Hour, zoned)),
			want:        settings(byPolicy, func(t *Rebalance) { zonedTarget(t); t.Cooldown = 30 * time.Second }),
			optedIn:     true,
		},
		"true keeps the policy's keys": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true"},
			policies:    policies(newPolicy("spread", time.Hour, zoned)),
			want:        settings(byAnnotation, zonedTarget),
			optedIn:     true,
		},
		"listed keys replace the policy's": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "kubernetes.io/hostname"},
			policies:    policies(newPolicy("spread", time.Hour, zoned)),
			want:        settings(byAnnotation, func(t *Rebalance) { zonedTarget(t); t.TopologyKeys = []string{corev1.LabelHostname} }),
			optedIn:     true,
		},
		"false opts out of the policy": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "false"},
			policies:    policies(newPolicy("spread", time.Hour, zoned)),
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
		"a bad annotation is an error under a policy too": {
			annotations: map[string]string{holdfastv1alpha1.RebalanceMaxSkewAnnotation: "many"},
			policies:    policies(newPolicy("spread", time.Hour, zoned)),
			optedIn:     true, err: `holdfast.dev/rebalance-max-skew: "many" is not a whole number`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, optedIn, err := RebalanceOf("Deployment", web, tt.annotations, tt.policies)
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
				t.Errorf("rebalance (-want +got):\n%s", diff)
			}
		})
	}
}
