package audit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	web    = map[string]string{"app": "web"}
	nodes3 = []string{"n1", "n2", "n3"}
	one    = intstr.FromInt32(1)
)

// spread keeps the Deployment's replicas on different nodes.
func spread(d *appsv1.Deployment) {
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: d.Spec.Selector,
	}}
}

func antiAffinity(required bool) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		term := corev1.PodAffinityTerm{LabelSelector: d.Spec.Selector, TopologyKey: corev1.LabelHostname}
		aa := &corev1.PodAntiAffinity{}
		if required {
			aa.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		} else {
			aa.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}
		}
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: aa}
	}
}

// healthy is a well-configured Deployment: three spread replicas with a budget of one.
func healthy(c *snapshottest.Cluster) {
	c.Deployment("ns", "web", web, nodes3, spread)
	c.PDB("ns", "web", web, snapshottest.MaxUnavailable(one))
}

func cluster(zones ...string) *snapshottest.Cluster {
	c := snapshottest.New()
	for i, n := range nodes3 {
		zone := ""
		if len(zones) > 0 {
			zone = zones[i%len(zones)]
		}
		c.Node(n, zone)
	}
	return c
}

func TestRules(t *testing.T) {
	tests := map[string]struct {
		rule  string
		build func(c *snapshottest.Cluster)
		// manifests, when set, replaces the live cluster with these documents.
		manifests string
		// settings, when set, are the operator's: the snapshot is first made as it will
		// make it (predict.Operator), as the CLI does.
		settings *policy.Settings
		want     []string
	}{
		"HF001 single replica with minAvailable 1": {
			rule: "HF001",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"})
				c.PDB("ns", "web", web, snapshottest.MinAvailable(one))
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF001 passes a single-replica budget that a DisruptionPolicy manages (it surges or escapes)": {
			rule: "HF001",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"})
				c.PDB("ns", "holdfast-deploy-web", web, snapshottest.MinAvailable(one), snapshottest.ManagedBy("defaults"))
			},
		},
		"HF013 passes a single replica whose budget a DisruptionPolicy manages": {
			rule: "HF013",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"})
				c.PDB("ns", "holdfast-deploy-web", web, snapshottest.MinAvailable(one), snapshottest.ManagedBy("defaults"))
			},
		},
		"HF001 minAvailable 100%": {
			rule: "HF001",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web, snapshottest.MinAvailable(intstr.FromString("100%")))
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF001 passes with a budget that lets one go": {rule: "HF001", build: healthy},
		"HF001 does not blame a budget whose pods are only unready now": {
			rule: "HF001",
			build: func(c *snapshottest.Cluster) {
				healthy(c)
				c.SetReady("ns", "web-rs-0", false)
			},
		},
		"HF022 budget with neither minAvailable nor maxUnavailable": {
			rule: "HF022",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web)
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF022 passes with a floor": {rule: "HF022", build: healthy},
		"HF022 passes for a DisruptionPolicy's budget": {
			rule: "HF022",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web, snapshottest.ManagedBy("defaults"))
			},
		},
		"HF002 three replicas without a budget": {
			rule:  "HF002",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, nodes3, spread) },
			want:  []string{"Deployment/ns/web"},
		},
		"HF002 passes with a budget": {rule: "HF002", build: healthy},
		"HF002 passes for one replica": {
			rule:  "HF002",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, []string{"n1"}) },
		},
		"HF003 selector with a typo": {
			rule: "HF003",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", map[string]string{"app": "wbe"}, snapshottest.MaxUnavailable(one))
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF003 invalid selector": {
			rule: "HF003",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", nil, snapshottest.MaxUnavailable(one), func(p *policyv1.PodDisruptionBudget) {
					p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
				})
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF003 budget in another namespace than its pods": {
			rule: "HF003",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("other", "web", web, snapshottest.MaxUnavailable(one))
			},
			want: []string{"PodDisruptionBudget/other/web"},
		},
		"HF003 passes when the selector matches": {rule: "HF003", build: healthy},
		"HF004 two budgets over the same pods": {
			rule: "HF004",
			build: func(c *snapshottest.Cluster) {
				healthy(c)
				c.PDB("ns", "web-too", web, snapshottest.MinAvailable(one))
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF004 passes with one budget per pod": {
			rule: "HF004",
			build: func(c *snapshottest.Cluster) {
				healthy(c)
				c.Deployment("ns", "api", map[string]string{"app": "api"}, nodes3, spread)
				c.PDB("ns", "api", map[string]string{"app": "api"}, snapshottest.MaxUnavailable(one))
			},
		},
		"HF005 maxUnavailable over a DaemonSet": {
			rule: "HF005",
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, nodes3)
				c.PDB("ns", "agent", web, snapshottest.MaxUnavailable(one))
			},
			want: []string{"PodDisruptionBudget/ns/agent"},
		},
		"HF005 percentage over bare pods": {
			rule: "HF005",
			build: func(c *snapshottest.Cluster) {
				c.Pod("ns", "a", web, "n1")
				c.Pod("ns", "b", web, "n2")
				c.PDB("ns", "bare", web, snapshottest.MinAvailable(intstr.FromString("50%")))
			},
			want: []string{"PodDisruptionBudget/ns/bare"},
		},
		"HF005 passes with an integer minAvailable over a DaemonSet": {
			rule: "HF005",
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, nodes3)
				c.PDB("ns", "agent", web, snapshottest.MinAvailable(intstr.FromInt32(2)))
			},
		},
		"HF006 replicas with nothing spreading them": {
			rule: "HF006",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3)
				c.PDB("ns", "web", web, snapshottest.MaxUnavailable(one))
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF006 passes with required anti-affinity": {
			rule:  "HF006",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, nodes3, antiAffinity(true)) },
		},
		"HF007 preferred anti-affinity only": {
			rule:  "HF007",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, nodes3, antiAffinity(false)) },
			want:  []string{"Deployment/ns/web"},
		},
		"HF007 passes with a DoNotSchedule spread": {rule: "HF007", build: healthy},
		"HF008 two of three replicas on one node": {
			rule:  "HF008",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, []string{"n1", "n1", "n2"}, spread) },
			want:  []string{"Deployment/ns/web"},
		},
		"HF008 passes when spread out": {rule: "HF008", build: healthy},
		"HF008 is live only": {
			rule:      "HF008",
			manifests: deploymentYAML("replicas: 3", ""),
		},
		"HF009 every replica in one zone": {
			rule: "HF009",
			build: func(c *snapshottest.Cluster) {
				c.Snapshot.Nodes[1].Labels[corev1.LabelTopologyZone] = "a"
				c.Deployment("ns", "web", web, []string{"n1", "n2"}, spread)
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF009 passes across zones": {
			rule:  "HF009",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, []string{"n1", "n3"}, spread) },
		},
		"HF010 one pod per node on every node with a surging rollout": {
			rule:  "HF010",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, nodes3, antiAffinity(true)) },
			want:  []string{"Deployment/ns/web"},
		},
		"HF010 from manifests, nodes unknown": {
			rule:      "HF010",
			manifests: deploymentYAML("replicas: 3", requiredAntiAffinityYAML),
			want:      []string{"Deployment/ns/web"},
		},
		"HF010 passes with fewer replicas than nodes": {
			rule: "HF010",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"}, antiAffinity(true))
			},
		},
		"HF010 passes without surge": {
			rule: "HF010",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, antiAffinity(true), func(d *appsv1.Deployment) {
					zero := intstr.FromInt32(0)
					d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &one}
				})
			},
		},
		"HF011 container without readiness probe": {
			rule: "HF011",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
				})
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF011 passes with probes": {rule: "HF011", build: healthy},
		"HF012 container without liveness probe": {
			rule: "HF012",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Containers[0].LivenessProbe = nil
				})
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF012 passes with probes": {rule: "HF012", build: healthy},
		"HF013 single replica, no strategy": {
			rule:  "HF013",
			build: func(c *snapshottest.Cluster) { c.Deployment("ns", "web", web, []string{"n1"}) },
			want:  []string{"Deployment/ns/web"},
		},
		"HF013 passes with do-not-disrupt": {
			rule: "HF013",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Annotations = map[string]string{availability.AnnotationKarpenterDoNotDisrupt: "true"}
				})
			},
		},
		"HF013 do-not-evict, gone since Karpenter v1, is no strategy": {
			rule: "HF013",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Annotations = map[string]string{availability.AnnotationKarpenterDoNotEvict: "true"}
				})
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF013 safe-to-evict false keeps only cluster-autoscaler away": {
			rule: "HF013",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Annotations = map[string]string{availability.AnnotationSafeToEvict: "false"}
				})
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF013 a do-not-disrupt duration protects each pod only for a while": {
			rule: "HF013",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Annotations = map[string]string{availability.AnnotationKarpenterDoNotDisrupt: "30m"}
				})
			},
			want: []string{"Deployment/ns/web"},
		},
		"HF013 passes when an HPA keeps two": {
			rule: "HF013",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"})
				c.Snapshot.HorizontalPodAutoscalers = append(c.Snapshot.HorizontalPodAutoscalers, hpa(2))
			},
		},
		"HF014 minAvailable equal to the HPA minimum": {
			rule: "HF014",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web, snapshottest.MinAvailable(intstr.FromInt32(2)))
				c.Snapshot.HorizontalPodAutoscalers = append(c.Snapshot.HorizontalPodAutoscalers, hpa(2))
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF014 passes with minAvailable below the HPA minimum": {
			rule: "HF014",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web, snapshottest.MinAvailable(intstr.FromInt32(2)))
				c.Snapshot.HorizontalPodAutoscalers = append(c.Snapshot.HorizontalPodAutoscalers, hpa(3))
			},
		},
		"HF015 critical DaemonSet without a companion": {
			rule: "HF015",
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, nodes3, critical)
			},
			want: []string{"DaemonSet/ns/agent"},
		},
		"HF015 passes with a NodeCompanion": {
			rule: "HF015",
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, nodes3, critical)
				nc := holdfastv1alpha1.NodeCompanion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guard"}}
				nc.Spec.DaemonSet = &holdfastv1alpha1.DaemonSetReference{Name: "agent"}
				c.Snapshot.NodeCompanions = append(c.Snapshot.NodeCompanions, nc)
			},
		},
		"HF015 passes for a DaemonSet not marked critical": {
			rule:  "HF015",
			build: func(c *snapshottest.Cluster) { c.DaemonSet("ns", "agent", web, nodes3) },
		},
		"HF016 budget with an unready pod has nothing to give now": {
			rule: "HF016",
			build: func(c *snapshottest.Cluster) {
				healthy(c)
				c.SetReady("ns", "web-rs-2", false)
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF016 passes with every pod ready": {rule: "HF016", build: healthy},
		"HF016 passes a budget the Eviction API refuses as invalid, not as exhausted (the oracle's verdict)": {
			rule: "HF016",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web, snapshottest.MaxUnavailable(one), func(p *policyv1.PodDisruptionBudget) {
					p.Status.DisruptedPods = map[string]metav1.Time{}
					for i := range availability.MaxDisruptedPods + 1 {
						p.Status.DisruptedPods[fmt.Sprintf("gone-%d", i)] = metav1.NewTime(now)
					}
				})
				c.SetReady("ns", "web-rs-2", false)
			},
		},
		"HF017 status behind the spec": {
			rule: "HF017",
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, nodes3, spread)
				c.PDB("ns", "web", web, snapshottest.MaxUnavailable(one), func(p *policyv1.PodDisruptionBudget) { p.Generation = 2 })
			},
			want: []string{"PodDisruptionBudget/ns/web"},
		},
		"HF017 sync failed": {
			rule: "HF017",
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, nodes3)
				c.PDB("ns", "agent", web, snapshottest.MaxUnavailable(one), func(p *policyv1.PodDisruptionBudget) {
					p.Status.Conditions = []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
						Reason: policyv1.SyncFailedReason, Message: "daemonsets.apps does not implement the scale subresource"}}
				})
			},
			want: []string{"PodDisruptionBudget/ns/agent"},
		},
		"HF017 passes with a current status": {rule: "HF017", build: healthy},
		"HF023 pods that tolerate an unreachable node for an hour": {
			rule:      "HF023",
			manifests: deployment("web", 3, "tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 3600}]"),
			want:      []string{"Deployment/ns/web"},
		},
		"HF023 passes with the default": {rule: "HF023", manifests: deployment("web", 3, "")},
		"HF023 passes with a shorter one": {
			rule:      "HF023",
			manifests: deployment("web", 3, "tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]"),
		},
		"HF024 a StatefulSet no policy fences": {
			rule:      "HF024",
			manifests: statefulSet + "---\n" + policyYAML("{}"),
			want:      []string{"StatefulSet/ns/db"},
		},
		"HF024 passes under fencing: Verified, with the operator's consent": {
			rule:      "HF024",
			manifests: statefulSet + "---\n" + policyYAML("{fencing: Verified}"),
			settings:  &policy.Settings{Failure: policy.FailureSettings{NamespacedFencing: true}},
		},
		"HF024 a namespaced policy's fencing without the operator's consent": {
			rule:      "HF024",
			manifests: statefulSet + "---\n" + policyYAML("{fencing: Verified}"),
			settings:  &policy.Settings{},
			want:      []string{"StatefulSet/ns/db"},
		},
		"HF024 passes under a ClusterDisruptionPolicy that fences": {
			rule: "HF024",
			manifests: statefulSet + `---
apiVersion: holdfast.dev/v1alpha1
kind: ClusterDisruptionPolicy
metadata: {name: defaults}
spec:
  namespaceSelector: {}
  template: {selector: {}, maxUnavailable: 1, nodeFailure: {fencing: Verified}}
`,
			settings: &policy.Settings{},
		},
		"HF025 a single replica whose policy does not surge for a lost node": {
			rule:      "HF025",
			manifests: deployment("web", 1, "") + "---\n" + policyYAML("{surge: Never}"),
			want:      []string{"Deployment/ns/web"},
		},
		"HF025 passes with the default response":                {rule: "HF025", manifests: deployment("web", 1, "") + "---\n" + policyYAML("{}")},
		"HF025 leaves a single replica without policy to HF013": {rule: "HF025", manifests: deployment("web", 1, "")},
		"HF026 a StatefulSet spread over zones under maxUnavailable 2": {
			rule:      "HF026",
			manifests: zonedStatefulSet + "---\n" + pdbYAML("maxUnavailable: 2"),
			want:      []string{"StatefulSet/ns/db"},
		},
		"HF026 passes under maxUnavailable 1": {rule: "HF026", manifests: zonedStatefulSet + "---\n" + pdbYAML("maxUnavailable: 1")},
		"HF026 passes without a zone spread":  {rule: "HF026", manifests: statefulSet + "---\n" + pdbYAML("maxUnavailable: 2")},
		"HF026 passes under a zone-aware policy": {
			rule: "HF026",
			manifests: zonedStatefulSet + "---\n" + `apiVersion: holdfast.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: zones, namespace: ns}
spec: {selector: {}, maxUnavailable: 2, zoneAware: {maxUnavailable: 3}}
`,
		},
		"HF027 one StatefulSet per zone under a zone-aware policy": {
			rule:      "HF027",
			manifests: pinned("x-zone-a", "a") + pinned("x-zone-b", "b") + pinned("x-zone-c", "c") + zoneAwarePolicy,
			want:      []string{"StatefulSet/ns/x-zone-a", "StatefulSet/ns/x-zone-b", "StatefulSet/ns/x-zone-c"},
		},
		"HF027 passes without a zone-aware policy":      {rule: "HF027", manifests: pinned("x-zone-a", "a") + pinned("x-zone-b", "b") + policyYAML("{}")},
		"HF027 passes with every workload in one zone":  {rule: "HF027", manifests: pinned("x-1", "a") + pinned("x-2", "a") + zoneAwarePolicy},
		"HF027 passes with one workload over the zones": {rule: "HF027", manifests: zonedStatefulSet + "---\n" + zoneAwarePolicy},
		"HF027 one Deployment per zone, live": {
			rule: "HF027",
			build: func(c *snapshottest.Cluster) {
				for _, zone := range []string{"a", "b"} {
					c.Node("n-"+zone, zone)
					c.Deployment("ns", "x-zone-"+zone, map[string]string{"app": "x", "zone": zone}, []string{"n-" + zone, "n-" + zone})
				}
				c.Node("n-c", "c")
				c.Deployment("ns", "spread", map[string]string{"app": "spread"}, []string{"n-a", "n-c"})
				c.Snapshot.DisruptionPolicies = append(c.Snapshot.DisruptionPolicies, holdfastv1alpha1.DisruptionPolicy{
					ObjectMeta: metav1.ObjectMeta{Name: "zones", Namespace: "ns"},
					Spec:       holdfastv1alpha1.DisruptionPolicySpec{ZoneAware: &holdfastv1alpha1.ZoneAwareSpec{MaxUnavailable: intstr.FromInt32(3)}},
				})
			},
			want: []string{"Deployment/ns/x-zone-a", "Deployment/ns/x-zone-b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, ok := audit.Lookup(tc.rule); !ok {
				t.Fatalf("no rule %s", tc.rule)
			}
			var s *snapshot.Snapshot
			if tc.manifests != "" {
				var problems []snapshot.Problem
				s, problems = snapshot.LoadManifestBytes("test.yaml", []byte(tc.manifests), snapshot.ManifestOptions{})
				if len(problems) > 0 {
					t.Fatalf("manifests: %v", problems)
				}
			} else {
				c := cluster("a", "b", "c")
				tc.build(c)
				s = c.Snapshot
			}
			if tc.settings != nil {
				p, _ := predict.Operator(s, now, *tc.settings)
				s = p.Snapshot
			}
			var got []string
			for _, f := range audit.Run(availability.Build(s, now), s.Origins) {
				if f.Rule != tc.rule {
					continue
				}
				got = append(got, f.Kind+"/"+f.Namespace+"/"+f.Name)
				if f.Message == "" || f.Fix == "" {
					t.Errorf("finding %+v lacks a message or a fix", f)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s findings (-want +got):\n%s", tc.rule, diff)
			}
		})
	}
}

// TestEveryRuleIsTested keeps the catalogue and the table above in step.
func TestEveryRuleIsTested(t *testing.T) {
	for i, r := range audit.Rules() {
		if want := fmt.Sprintf("HF%03d", i+1); r.ID != want {
			t.Errorf("rule %d has ID %s, want %s: IDs are stable and in order", i, r.ID, want)
		}
		set := 0
		for _, check := range []bool{r.Workload != nil, r.Budget != nil, r.Own != nil} {
			if check {
				set++
			}
		}
		if r.Summary == "" || r.Rationale == "" || set != 1 {
			t.Errorf("rule %s is incomplete", r.ID)
		}
	}
}

func critical(ds *appsv1.DaemonSet) {
	ds.Annotations = map[string]string{availability.AnnotationCritical: "true"}
}

func hpa(min int32) autoscalingv2.HorizontalPodAutoscaler {
	return autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(min), MaxReplicas: 10,
		},
	}
}

const requiredAntiAffinityYAML = `
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels:
                  app: web
              topologyKey: kubernetes.io/hostname`

func deploymentYAML(replicas, podSpec string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
spec:
  ` + replicas + `
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:` + podSpec + `
      containers:
        - name: web
          image: web:1
`
}

// deployment is a manifest of a Deployment in namespace ns with podSpec's extra line.
func deployment(name string, replicas int, podSpec string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: ns, labels: {tier: web}}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: app, image: app}]
      %[3]s
`, name, replicas, podSpec)
}

const statefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns, labels: {tier: web}}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: db}]}
`

// zonedStatefulSet is statefulSet with its 9 replicas spread over zones.
const zonedStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns, labels: {tier: web}}
spec:
  replicas: 9
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: db}]
      topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: db}}}]
`

// pinned is a 3-replica StatefulSet of that name pinned to zone by a node selector,
// its pods labelled app=x and name=NAME.
func pinned(name, zone string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: %[1]s, namespace: ns}
spec:
  replicas: 3
  serviceName: x
  selector: {matchLabels: {app: x, name: %[1]s}}
  template:
    metadata: {labels: {app: x, name: %[1]s}}
    spec:
      containers: [{name: x, image: x}]
      nodeSelector: {topology.kubernetes.io/zone: %[2]s}
---
`, name, zone)
}

// zoneAwarePolicy is a zone-aware DisruptionPolicy over every workload of namespace ns.
const zoneAwarePolicy = `apiVersion: holdfast.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: zones, namespace: ns}
spec: {selector: {}, maxUnavailable: 1, zoneAware: {maxUnavailable: 3}}
`

// pdbYAML is a PodDisruptionBudget over app=db with spec's line.
func pdbYAML(spec string) string {
	return `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: ns}
spec: {selector: {matchLabels: {app: db}}, ` + spec + `}
`
}

// policyYAML is a DisruptionPolicy of namespace ns over every workload with nodeFailure.
func policyYAML(nodeFailure string) string {
	return `apiVersion: holdfast.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: defaults, namespace: ns}
spec: {selector: {}, maxUnavailable: 1, singleReplica: Surge, nodeFailure: ` + nodeFailure + `}
`
}

// The failure rules say how long recovery takes, by the operator's own model.
func TestFailureRulesSayHowLong(t *testing.T) {
	for manifests, want := range map[string]string{
		deployment("web", 3, "tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 3600}]"): "Deployment web tolerates node.kubernetes.io/unreachable for 1h0m0s: after its node's crash it is whole again in about 1h1m0s (no DisruptionPolicy).",
		deployment("web", 3, "tolerations: [{operator: Exists}]") + "---\n" + policyYAML("{}"):                                                     "Deployment web tolerates node.kubernetes.io/unreachable for ever: after its node's crash it is whole again in about 40s with holdfast (surged once the node's Lease is 30s old), never without.",
		statefulSet: "StatefulSet db: after its node's crash it is not whole again until the node returns (no DisruptionPolicy), one replica short meanwhile.",
	} {
		s, problems := snapshot.LoadManifestBytes("test.yaml", []byte(manifests), snapshot.ManifestOptions{})
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		var got []string
		for _, f := range audit.Run(availability.Build(s, now), s.Origins) {
			if f.Rule == "HF023" || f.Rule == "HF024" {
				got = append(got, f.Message)
			}
		}
		if diff := cmp.Diff([]string{want}, got); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
	}
}

// TestBudgetMatchingNothingNamesTheOneOrphan checks that HF003's fix points at the one
// workload of the budget's namespace that no budget covers, whatever the workloads of
// other kinds and namespaces around it, and at none when there are two.
func TestBudgetMatchingNothingNamesTheOneOrphan(t *testing.T) {
	for name, tc := range map[string]struct {
		orphans []string
		want    string
	}{
		"one orphan":  {orphans: []string{"api"}, want: "select the pods of Deployment api"},
		"two orphans": {orphans: []string{"api", "worker"}, want: "select the labels of the pods to protect"},
	} {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			for _, ns := range []string{"a", "ns", "z"} {
				c.Deployment(ns, "web", web, nodes3, spread)
				c.PDB(ns, "web", web, snapshottest.MaxUnavailable(one))
			}
			c.Deployment("a", "lonely", map[string]string{"app": "lonely"}, nodes3, spread)
			c.Deployment("z", "lonely", map[string]string{"app": "lonely"}, nodes3, spread)
			c.DaemonSet("ns", "agent", map[string]string{"app": "agent"}, nodes3)
			for _, o := range tc.orphans {
				c.Deployment("ns", o, map[string]string{"app": o}, nodes3, spread)
			}
			c.PDB("ns", "typo", map[string]string{"app": "apj"}, snapshottest.MaxUnavailable(one))
			var fixes []string
			for _, f := range audit.Run(availability.Build(c.Snapshot, now), nil) {
				if f.Rule == "HF003" {
					fixes = append(fixes, f.Fix)
				}
			}
			if len(fixes) != 1 || !strings.Contains(fixes[0], tc.want) {
				t.Errorf("HF003's fixes %q, want one containing %q", fixes, tc.want)
			}
		})
	}
}
