package policy

import (
	"slices"
	"strings"
	"testing"

	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// staleLeases is a cluster of six nodes over three zones whose suspects are given as node
// name -> age of the last Lease renewal.
func staleLeases(stale map[string]time.Duration) NodeHealth {
	h := NodeHealth{Zones: map[string]int{"a": 2, "b": 2, "c": 2}}
	for name, age := range stale {
		if h.Suspects == nil {
			h.Suspects = map[string]Suspect{}
		}
		h.Suspects[name] = Suspect{Zone: zoneOf[name], Renewed: now.Add(-age)}
	}
	return h
}

var zoneOf = map[string]string{"n1": "a", "n2": "a", "n3": "b", "n4": "b", "n5": "c", "n6": "c"}

func TestDecideNodeFailure(t *testing.T) {
	surge := func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge }
	single := ready(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1)
	web := ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 3)
	db := ready(workload(holdfastv1alpha1.KindStatefulSet, "db", 3), 3)
	nodes := map[string]*corev1.Node{}
	for name := range zoneOf {
		nodes[name] = node(name, false)
	}
	onN1 := map[string][]Pod{
		"Deployment/single": {pod("single-a", "n1", true, time.Hour)},
		"Deployment/web":    {pod("web-a", "n1", true, time.Hour), pod("web-b", "n1", true, time.Hour), pod("web-c", "n3", true, time.Hour)},
		"StatefulSet/db":    {pod("db-0", "n1", true, time.Hour), pod("db-1", "n3", true, time.Hour), pod("db-2", "n5", true, time.Hour)},
	}
	singleBudget := opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaSurge, 0)
	webFloor := budget("p", web, minAvailable(intstr.FromInt32(2)), nil)
	recovering := func(w Workload, replicas int32, budget, msg string) holdfastv1alpha1.WorkloadStatus {
		return holdfastv1alpha1.WorkloadStatus{Kind: w.Kind, Name: w.Name, Replicas: replicas, State: holdfastv1alpha1.WorkloadRecovering, Budget: budget, Message: msg}
	}
	const singleMsg = "1 pod on lost node n1: 1 extra pod beside the 1 replica until the node is back or Kubernetes has replaced them; the pods there are left alone, as they may still serve behind a partition"
	const webMsg = "2 pods on lost node n1: 2 extra pods beside the 3 replicas until the node is back or Kubernetes has replaced them; the pods there are left alone, as they may still serve behind a partition"

	runDecide(t, map[string]decideCase{
		"a Lease 31 s old: each pod on the node gets an extra pod at once": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single, web},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": 31 * time.Second}),
			want: result{
				Quarantine: []string{"n1"},
				Apply:      []*policyv1.PodDisruptionBudget{singleBudget, webFloor},
				Surges:     []Surge{surgeTo("single", 1), surgeTo("web", 2)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{
					recovering(single, 1, "holdfast-deploy-single", singleMsg),
					recovering(web, 3, "holdfast-deploy-web", webMsg),
				},
				RequeueAfter: surgePoll,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonNodeLost},
		},
		"a Lease 20 s old: not lost yet, looked at again when it would be": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": 20 * time.Second}),
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{singleBudget},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-single", Message: msgSurgeReady}},
				RequeueAfter: 10 * time.Second,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonNoNodeLost},
		},
		"tainted unreachable by the node-lifecycle controller: lost whatever the Lease says": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   onN1,
			nodes:  nodes,
			health: NodeHealth{Zones: map[string]int{"a": 2, "b": 2, "c": 2}, Suspects: map[string]Suspect{"n1": {Zone: "a", Tainted: true}}},
			want: result{
				Quarantine:   []string{"n1"},
				Apply:        []*policyv1.PodDisruptionBudget{singleBudget},
				Surges:       []Surge{surgeTo("single", 1)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{recovering(single, 1, "holdfast-deploy-single", singleMsg)},
				RequeueAfter: surgePoll,
			},
		},
		"the surge holds while the node is lost, and follows a second lost pod": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{surged(web, 1)},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute}),
			want: result{
				Quarantine:   []string{"n1"},
				Apply:        []*policyv1.PodDisruptionBudget{webFloor},
				Surges:       []Surge{surgeTo("web", 2)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{recovering(web, 3, "holdfast-deploy-web", webMsg)},
				RequeueAfter: surgePoll,
			},
		},
		"the node is back: the surge ends, its set removed": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{surged(web, 2)},
			pods:   onN1,
			nodes:  nodes,
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Surges:    []Surge{surgeEnd("web")},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
			},
		},
		"Kubernetes replaced the lost pods (they are terminating, so not listed): the surge ends": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{surged(web, 2)},
			pods:   map[string][]Pod{"Deployment/web": {pod("web-c", "n3", true, time.Hour), pod("web-d", "n4", true, time.Minute), pod("web-e", "n5", true, time.Minute)}},
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": 6 * time.Minute}),
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Surges:    []Surge{surgeEnd("web")},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
			},
		},
		"a StatefulSet is reported, not surged": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{db},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute}),
			want: result{
				Quarantine: []string{"n1"},
				Apply:      []*policyv1.PodDisruptionBudget{budget("p", db, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{recovering(db, 3, "holdfast-sts-db",
					"1 pod on lost node n1: holdfast surges only Deployments, so the StatefulSet waits for the node or for Kubernetes")},
			},
		},
		"nodeFailure.surge Never: reported only": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.NodeFailure = &holdfastv1alpha1.NodeFailureSpec{Surge: holdfastv1alpha1.FailureSurgeNever}
			}),
			work:   []Workload{web},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute}),
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{recovering(web, 3, "holdfast-deploy-web",
					"2 pods on lost node n1: not surged (nodeFailure.surge: Never); Kubernetes replaces them once their unreachable toleration runs out")},
			},
		},
		"a longer lostAfter waits for it": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.NodeFailure = &holdfastv1alpha1.NodeFailureSpec{LostAfter: &metav1.Duration{Duration: 2 * time.Minute}}
			}),
			work:   []Workload{web},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute}),
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
				RequeueAfter: time.Minute,
			},
		},
		"a whole zone lost alone: surged for": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute, "n2": time.Minute}),
			want: result{
				Apply:      []*policyv1.PodDisruptionBudget{singleBudget},
				Surges:     []Surge{surgeTo("single", 1)},
				Quarantine: []string{"n1", "n2"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{recovering(single, 1, "holdfast-deploy-single",
					"1 pod on lost node n1: 1 extra pod beside the 1 replica until the node is back or Kubernetes has replaced them; the pods there are left alone, as they may still serve behind a partition")},
				RequeueAfter: 2 * time.Second,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonNodeLost},
		},
		"a zone lost, some pods fit nowhere else: only those that fit are surged for": {
			policy:   policy("p", time.Hour, nil),
			work:     []Workload{web},
			pods:     onN1,
			nodes:    nodes,
			health:   staleLeases(map[string]time.Duration{"n1": time.Minute, "n2": time.Minute}),
			lostRoom: map[string]string{"shop/web-a": "", "shop/web-b": "0/6 nodes are available: 2 cordoned or being drained, 4 with too little cpu"},
			want: result{
				Apply:      []*policyv1.PodDisruptionBudget{webFloor},
				Surges:     []Surge{surgeTo("web", 1)},
				Quarantine: []string{"n1", "n2"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{recovering(web, 3, "holdfast-deploy-web",
					"2 pods on lost node n1: 1 extra pod beside the 3 replicas until the node is back or Kubernetes has replaced them; the pods there are left alone, as they may still serve behind a partition; 1 would fit on no surviving node, and are left to Kubernetes and the node autoscalers")},
				RequeueAfter: 2 * time.Second,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonNodeLost},
		},
		"a zone seen dark a renewal apart, its second node a suspect: both quarantined, so the extra pods go elsewhere": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{web},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute, "n2": 20 * time.Second}),
			want: result{
				Apply:      []*policyv1.PodDisruptionBudget{webFloor},
				Surges:     []Surge{surgeTo("web", 2)},
				Quarantine: []string{"n1", "n2"},
				Workloads:  []holdfastv1alpha1.WorkloadStatus{recovering(web, 3, "holdfast-deploy-web", webMsg)},
				// n2 would be lost in 10 s.
				RequeueAfter: 2 * time.Second,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonNodeLost},
		},
		"the zone's second node lost since with an extra pod on it: that pod is made again": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{surged(web, 2, surgePod(pod("web-s1", "n2", true, 10*time.Second)), surgePod(pod("web-s2", "n3", true, 10*time.Second)))},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute, "n2": 45 * time.Second}),
			want: result{
				Apply:      []*policyv1.PodDisruptionBudget{webFloor},
				Surges:     []Surge{surgeTo("web", 3)},
				Quarantine: []string{"n1", "n2"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{recovering(web, 3, "holdfast-deploy-web",
					"3 pods on lost nodes n1, n2: 3 extra pods beside the 3 replicas until the nodes are back or Kubernetes has replaced them; the pods there are left alone, as they may still serve behind a partition")},
				RequeueAfter: 2 * time.Second,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonNodeLost},
		},
		"nodes of two zones lost at once, more than a fifth: the brake holds, nothing added": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   onN1,
			nodes:  nodes,
			health: staleLeases(map[string]time.Duration{"n1": time.Minute, "n3": time.Minute}),
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{singleBudget},
				Workloads: []holdfastv1alpha1.WorkloadStatus{recovering(single, 1, "holdfast-deploy-single",
					"1 pod on lost node n1: 2 of 6 nodes in 2 zones stopped renewing their Leases at once, more than a fifth: holdfast starts no extra pods and fences nothing, since the control plane or the network is the likelier cause")},
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionNodesLost: holdfastv1alpha1.ReasonCorrelatedFailure},
		},
	})
}

func TestBrake(t *testing.T) {
	perZone := map[string]int{"a": 10, "b": 10, "c": 2}
	if got := Brake(perZone, map[string]string{"a1": "a"}, FailureSettings{}); got != "" {
		t.Errorf("one node of 22: brake %q, want none", got)
	}
	if got := Brake(perZone, map[string]string{"c1": "c"}, FailureSettings{}); got != "" {
		t.Errorf("one node of a zone of two: brake %q, want none", got)
	}
	if got := Brake(perZone, map[string]string{"c1": "c", "c2": "c"}, FailureSettings{}); got != "" {
		t.Errorf("every node of zone c: brake %q, want none: a zone alone is acted on", got)
	}
	if got := Brake(perZone, map[string]string{"a1": "a", "a2": "a", "a3": "a", "a4": "a", "a5": "a", "a6": "a"}, FailureSettings{}); got != "" {
		t.Errorf("6 of 22 nodes, all in zone a: brake %q, want none", got)
	}
	if got := Brake(perZone, map[string]string{"a1": "a", "a2": "a", "b1": "b", "b2": "b", "b3": "b"}, FailureSettings{}); got == "" {
		t.Error("5 of 22 nodes in two zones: no brake")
	}
	if got := Brake(perZone, map[string]string{"a1": "a", "b1": "b"}, FailureSettings{}); got != "" {
		t.Errorf("2 of 22 nodes in two zones: brake %q, want none", got)
	}
	if got := Brake(map[string]int{"": 10}, map[string]string{"n1": "", "n2": "", "n3": ""}, FailureSettings{}); got == "" {
		t.Error("3 of 10 nodes of a cluster without zones: no brake")
	}
	// Nodes that die together are seen a renewal apart: the second is a suspect when the
	// first is lost, and the brake holds from the start.
	if got := brake(staleLeases(map[string]time.Duration{"n1": 31 * time.Second, "n3": 22 * time.Second}), FailureSettings{}); got == "" {
		t.Error("n1 (zone a) lost and n3 (zone b) suspect: no brake")
	}
	// A zone lost long ago and a node lost now are two failures.
	if got := brake(staleLeases(map[string]time.Duration{"n1": 10 * time.Minute, "n3": 22 * time.Second}), FailureSettings{}); got != "" {
		t.Errorf("n1 lost 10 minutes before n3: brake %q, want none", got)
	}
	// The operator's settings move both bounds.
	if got := brake(staleLeases(map[string]time.Duration{"n1": 10 * time.Minute, "n3": 22 * time.Second}), FailureSettings{BrakeWindow: 15 * time.Minute}); got == "" {
		t.Error("n1 lost 10 minutes before n3 under a brake window of 15 minutes: no brake")
	}
	twoZones := map[string]string{"a1": "a", "a2": "a", "b1": "b", "b2": "b", "b3": "b"}
	if got := Brake(perZone, twoZones, FailureSettings{BrakeShare: 0.25}); got != "" {
		t.Errorf("5 of 22 nodes in two zones under a share of 0.25: brake %q, want none", got)
	}
	if got := Brake(perZone, twoZones, FailureSettings{BrakeShare: 0.1}); got == "" {
		t.Error("5 of 22 nodes in two zones under a share of 0.1: no brake")
	}
	if got := Brake(map[string]int{"": 2}, map[string]string{"n1": "", "n2": ""}, FailureSettings{BrakeShare: 1}); got != "" {
		t.Errorf("every node lost under a share of 1: brake %q, want none", got)
	}
}

func TestSuspectOfCountsMissedRenewals(t *testing.T) {
	lease := func(age time.Duration, seconds int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-age))), LeaseDurationSeconds: ptr.To(seconds)}}
	}
	n := node("n1", false)
	tests := map[string]struct {
		lease       *coordinationv1.Lease
		tainted     bool
		wantSuspect bool
		wantLost    bool // by the default lostAfter
	}{
		"a kubelet's 40 s Lease renewed 5 s ago":   {lease: lease(5*time.Second, 40)},
		"a kubelet's 40 s Lease 20 s old: suspect": {lease: lease(20*time.Second, 40), wantSuspect: true},
		"a kubelet's 40 s Lease 30 s old: lost":    {lease: lease(30*time.Second, 40), wantSuspect: true, wantLost: true},
		// Renewed every minute: 60 s old is one missed renewal, not a lost node.
		"a 240 s Lease 60 s old":               {lease: lease(60*time.Second, 240)},
		"a 240 s Lease 100 s old: suspect":     {lease: lease(100*time.Second, 240), wantSuspect: true},
		"a 240 s Lease 180 s old: lost":        {lease: lease(180*time.Second, 240), wantSuspect: true, wantLost: true},
		"no Lease, no taint: nothing to go by": {},
		"tainted unreachable: lost at once":    {lease: lease(time.Second, 40), tainted: true, wantSuspect: true, wantLost: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := n.DeepCopy()
			if tc.tainted {
				n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
			}
			s, suspect := SuspectOf(n, tc.lease, now)
			if suspect != tc.wantSuspect {
				t.Fatalf("suspect = %t, want %t", suspect, tc.wantSuspect)
			}
			h := NodeHealth{Zones: map[string]int{"": 10}, Suspects: map[string]Suspect{"n1": s}}
			if got := h.lost(defaultLostAfter, now)["n1"]; got != tc.wantLost {
				t.Errorf("lost = %t, want %t", got, tc.wantLost)
			}
		})
	}
}

func TestDecideFencing(t *testing.T) {
	db := ready(workload(holdfastv1alpha1.KindStatefulSet, "db", 3), 3)
	verified := func(after time.Duration) func(*holdfastv1alpha1.DisruptionPolicySpec) {
		return func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.NodeFailure = &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified}
			if after > 0 {
				s.NodeFailure.FenceAfter = &metav1.Duration{Duration: after}
			}
		}
	}
	pods := map[string][]Pod{"StatefulSet/db": {pod("db-0", "n1", true, time.Hour), pod("db-1", "n3", true, time.Hour), pod("db-2", "n5", true, time.Hour)}}
	nodesWith := func(mod func(*corev1.Node)) map[string]*corev1.Node {
		out := map[string]*corev1.Node{}
		for name := range zoneOf {
			out[name] = node(name, false)
		}
		if mod != nil {
			mod(out["n1"])
		}
		return out
	}
	down := func(n *corev1.Node) { n.Annotations = map[string]string{holdfastv1alpha1.NodeDownAnnotation: "true"} }
	fenced := func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: holdfastv1alpha1.OutOfServiceTaintKey, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	}
	lostTwoMinutes := staleLeases(map[string]time.Duration{"n1": 2 * time.Minute})
	recovering := func(msg string) []holdfastv1alpha1.WorkloadStatus {
		return []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 3, State: holdfastv1alpha1.WorkloadRecovering, Budget: "holdfast-sts-db", Message: msg}}
	}
	apply := []*policyv1.PodDisruptionBudget{budget("p", db, maxUnavailable(intstr.FromInt32(1)), nil)}
	const waiting = "1 pod on lost nodes; node n1 not proven down: its pods stay until it is (annotation holdfast.dev/node-down with the time of the check, or its Karpenter NodeClaim gone), since two pods of one identity must never run"
	const waitingOrTime = "1 pod on lost nodes; node n1 not proven down: its pods stay until it is (annotation holdfast.dev/node-down with the time of the check, its Karpenter NodeClaim gone, or 5m0s unreachable (fenceAfter: time, not proof)), since two pods of one identity must never run"
	const proven = "1 pod on lost nodes; node n1 proven down and tainted out-of-service: Kubernetes deletes the pods there and the StatefulSet starts them elsewhere"

	runDecide(t, map[string]decideCase{
		"no proof: nothing released, however long": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, nodes: nodesWith(nil), health: lostTwoMinutes,
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(waiting)},
		},
		"the node-down annotation: fenced": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, nodes: nodesWith(down), health: lostTwoMinutes,
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(proven)},
		},
		"fenceAfter passed since the last renewal: fenced": {
			policy: policy("p", time.Hour, verified(time.Minute)), work: []Workload{db}, pods: pods, nodes: nodesWith(nil), health: lostTwoMinutes,
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(proven)},
		},
		"fenceAfter not passed yet: waits, and looks again when it has": {
			policy: policy("p", time.Hour, verified(5*time.Minute)), work: []Workload{db}, pods: pods, nodes: nodesWith(nil), health: lostTwoMinutes,
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(waitingOrTime), RequeueAfter: 3 * time.Minute},
		},
		"fenceAfter passed, but the operator does not let time count: waits for proof": {
			policy: policy("p", time.Hour, verified(time.Minute)), work: []Workload{db}, pods: pods, nodes: nodesWith(nil), health: lostTwoMinutes,
			failure:  &FailureSettings{NamespacedFencing: true},
			want:     result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(waiting)},
			wantCond: map[string]string{holdfastv1alpha1.ConditionFencingAllowed: holdfastv1alpha1.ReasonFenceAfterIgnored},
		},
		"a namespaced policy without the administrator's consent: proof or not, nothing fenced, and status says why": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, nodes: nodesWith(down), health: lostTwoMinutes,
			failure:  &FailureSettings{},
			want:     result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(msgLostNotFenced(1, []string{"n1"}, msgFencingNotAllowed))},
			wantCond: map[string]string{holdfastv1alpha1.ConditionFencingAllowed: holdfastv1alpha1.ReasonNoFencingConsent},
		},
		"fenced already: not again": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, nodes: nodesWith(func(n *corev1.Node) { down(n); fenced(n) }), health: lostTwoMinutes,
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(proven)},
		},
		"a Karpenter node whose NodeClaim is gone: fenced": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, health: lostTwoMinutes,
			nodes:  nodesWith(func(n *corev1.Node) { n.Labels = map[string]string{"karpenter.sh/nodepool": "default"} }),
			claims: map[string]NodeClaim{},
			want:   result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(proven)},
		},
		"a Karpenter node whose NodeClaim is being deleted, not gone: Karpenter drains first, not fenced": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, health: lostTwoMinutes,
			nodes:  nodesWith(func(n *corev1.Node) { n.Labels = map[string]string{"karpenter.sh/nodepool": "default"} }),
			claims: map[string]NodeClaim{"n1": {Name: "default-abc"}},
			want:   result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(waiting)},
		},
		"node-down from a failure before the last renewal: proves nothing now": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, health: lostTwoMinutes,
			nodes: nodesWith(func(n *corev1.Node) {
				n.Annotations = map[string]string{holdfastv1alpha1.NodeDownAnnotation: now.Add(-5 * time.Minute).Format(time.RFC3339)}
			}),
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(waiting)},
		},
		"node-down checked after the last renewal: fenced": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, pods: pods, health: lostTwoMinutes,
			nodes: nodesWith(func(n *corev1.Node) {
				n.Annotations = map[string]string{holdfastv1alpha1.NodeDownAnnotation: now.Add(-time.Minute).Format(time.RFC3339)}
			}),
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(proven)},
		},
		"a pod Kubernetes evicted, stuck Terminating on the dead node: fenced on proof": {
			policy: policy("p", time.Hour, verified(0)), work: []Workload{db}, nodes: nodesWith(down), health: lostTwoMinutes,
			pods:  map[string][]Pod{"StatefulSet/db": {pod("db-1", "n3", true, time.Hour), pod("db-2", "n5", true, time.Hour)}},
			stuck: map[string][]Pod{"StatefulSet/db": {{Name: "db-0", Node: "n1"}}},
			want:  result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering(proven)},
		},
		"fencing Never: reported": {
			policy: policy("p", time.Hour, nil), work: []Workload{db}, pods: pods, nodes: nodesWith(down), health: lostTwoMinutes,
			want: result{Apply: apply, Quarantine: []string{"n1"}, Workloads: recovering("1 pod on lost node n1: holdfast surges only Deployments, so the StatefulSet waits for the node or for Kubernetes")},
		},
	})
	// The fences themselves.
	for name, tc := range map[string]struct {
		spec       func(*holdfastv1alpha1.DisruptionPolicySpec)
		mod        func(*corev1.Node)
		health     NodeHealth
		bystanders map[string][]string
		want       []NodeTaint
	}{
		"another namespace's StatefulSet pod named": {spec: verified(0), mod: down, health: lostTwoMinutes, bystanders: map[string][]string{"n1": {"cache/redis-0"}},
			want: []NodeTaint{{Node: "n1", Key: holdfastv1alpha1.OutOfServiceTaintKey, Proof: "annotation holdfast.dev/node-down=true", Bystanders: []string{"cache/redis-0"}}}},
		"annotation":       {spec: verified(0), mod: down, health: lostTwoMinutes, want: []NodeTaint{{Node: "n1", Key: holdfastv1alpha1.OutOfServiceTaintKey, Proof: "annotation holdfast.dev/node-down=true"}}},
		"fenceAfter":       {spec: verified(time.Minute), health: lostTwoMinutes, want: []NodeTaint{{Node: "n1", Key: holdfastv1alpha1.OutOfServiceTaintKey, Proof: "no Lease renewal since 2026-11-22T11:58:00Z, fenceAfter 1m0s (time, not proof)"}}},
		"no proof":         {spec: verified(0), health: lostTwoMinutes},
		"fenced already":   {spec: verified(0), mod: func(n *corev1.Node) { down(n); fenced(n) }, health: lostTwoMinutes},
		"never":            {spec: nil, mod: down, health: lostTwoMinutes},
		"brake: two zones": {spec: verified(0), mod: down, health: staleLeases(map[string]time.Duration{"n1": 2 * time.Minute, "n3": 2 * time.Minute})},
		"not lost (20 s)":  {spec: verified(0), mod: down, health: staleLeases(map[string]time.Duration{"n1": 20 * time.Second})},
	} {
		t.Run("fences/"+name, func(t *testing.T) {
			p := policy("p", time.Hour, tc.spec)
			consent := ConsentOf(&p, FailureSettings{NamespacedFencing: true, FenceAfter: true}, nil)
			d := Decide(Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Workloads: []Workload{db}, Pods: pods, Nodes: nodesWith(tc.mod), Health: tc.health, Bystanders: tc.bystanders, Consent: consent, Now: now})
			if diff := cmp.Diff(tc.want, fencesOf(d), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("fences (-want +got):\n%s", diff)
			}
			for _, b := range tc.bystanders["n1"] {
				if msg := d.Status.Workloads[0].Message; !strings.Contains(msg, b) {
					t.Errorf("status %q does not name %s, which the fence releases too", msg, b)
				}
			}
		})
	}
}

func TestRecoveryOf(t *testing.T) {
	withSpec := func(mod func(*holdfastv1alpha1.DisruptionPolicySpec)) *holdfastv1alpha1.DisruptionPolicy {
		p := policy("p", time.Hour, mod)
		return &p
	}
	fenceAfter := func(d time.Duration) func(*holdfastv1alpha1.DisruptionPolicySpec) {
		return func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.NodeFailure = &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified, FenceAfter: &metav1.Duration{Duration: d}}
		}
	}
	const start = 5 * time.Second
	tests := map[string]struct {
		p          *holdfastv1alpha1.DisruptionPolicy
		kind       string
		toleration time.Duration
		braked     bool
		consent    Consent
		want       Recovery
	}{
		"a Deployment alone: grace, toleration, start-up": {kind: "Deployment", toleration: DefaultToleration,
			want: Recovery{Alone: 355 * time.Second, With: 355 * time.Second, How: "no DisruptionPolicy"}},
		"a Deployment under a policy: the Lease's 30 s and start-up": {p: withSpec(nil), kind: "Deployment", toleration: DefaultToleration,
			want: Recovery{Alone: 355 * time.Second, With: 35 * time.Second, How: "surged once the node's Lease is 30s old"}},
		"a short toleration beats the surge": {p: withSpec(nil), kind: "Deployment", toleration: 0,
			want: Recovery{Alone: 55 * time.Second, With: 35 * time.Second, How: "surged once the node's Lease is 30s old"}},
		"a StatefulSet alone: never": {kind: "StatefulSet", toleration: DefaultToleration,
			want: Recovery{AloneNever: true, WithNever: true, How: "no DisruptionPolicy"}},
		"a StatefulSet fenced after 2m, where the operator lets fenceAfter count": {p: withSpec(fenceAfter(2 * time.Minute)), kind: "StatefulSet", toleration: DefaultToleration,
			consent: Consent{Fence: true, FenceAfter: true},
			want:    Recovery{AloneNever: true, With: 145 * time.Second, How: "fenced on proof, or once the node is unreachable for fenceAfter 2m0s: time, not proof"}},
		"fenceAfter without the operator's consent: fenced on proof only": {p: withSpec(fenceAfter(2 * time.Minute)), kind: "StatefulSet", toleration: DefaultToleration,
			consent: Consent{Fence: true, Why: msgFenceAfterNotAllowed},
			want:    Recovery{AloneNever: true, WithNever: true, How: "fenced on proof that the node is down, not before; " + msgFenceAfterNotAllowed}},
		"fencing without consent: not fenced": {p: withSpec(fenceAfter(2 * time.Minute)), kind: "StatefulSet", toleration: DefaultToleration,
			consent: Consent{Why: msgFencingNotAllowed},
			want:    Recovery{AloneNever: true, WithNever: true, How: "not fenced: " + msgFencingNotAllowed}},
		"the brake": {p: withSpec(nil), kind: "Deployment", toleration: DefaultToleration, braked: true,
			want: Recovery{Alone: 355 * time.Second, With: 355 * time.Second, How: "the brake holds: too many nodes lost at once"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RecoveryOf(tc.p, tc.kind, tc.toleration, start, Spread{Braked: tc.braked}, tc.consent)); diff != "" {
				t.Errorf("RecoveryOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnreachableToleration(t *testing.T) {
	template := func(tols ...corev1.Toleration) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: tols}}
	}
	for name, tc := range map[string]struct {
		t    *corev1.PodTemplateSpec
		want time.Duration
	}{
		"none: the API server's 300 s": {t: template(), want: DefaultToleration},
		"its own 60 s": {t: template(corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}),
			want: time.Minute},
		"for ever":              {t: template(corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}), want: -1},
		"every taint, for ever": {t: template(corev1.Toleration{Operator: corev1.TolerationOpExists}), want: -1},
		"another taint only":    {t: template(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}), want: DefaultToleration},
	} {
		if got := UnreachableToleration(tc.t); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestStuckOf(t *testing.T) {
	h := staleLeases(map[string]time.Duration{"n1": time.Minute})
	deleting := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", DeletionTimestamp: ptr.To(metav1.NewTime(now))}, Spec: corev1.PodSpec{NodeName: "n1"}}
	db, web := workload(holdfastv1alpha1.KindStatefulSet, "db", 3), workload(holdfastv1alpha1.KindDeployment, "web", 3)
	if got, ok := StuckOf(deleting, &db, h); !ok || got != (Pod{Name: "db-0", Node: "n1"}) {
		t.Errorf("a StatefulSet's pod being deleted on a suspect node: %+v, %t", got, ok)
	}
	if _, ok := StuckOf(deleting, &web, h); ok {
		t.Error("a Deployment's pod being deleted counts as stuck: its ReplicaSet has replaced it")
	}
	live := deleting.DeepCopy()
	live.DeletionTimestamp = nil
	if _, ok := StuckOf(live, &db, h); ok {
		t.Error("a live pod counts as stuck")
	}
	elsewhere := deleting.DeepCopy()
	elsewhere.Spec.NodeName = "n3"
	if _, ok := StuckOf(elsewhere, &db, h); ok {
		t.Error("a pod being deleted on a healthy node counts as stuck")
	}
}

func fencesOf(d Decision) []NodeTaint {
	return slices.DeleteFunc(EffectsOf[NodeTaint](d.Effects), func(t NodeTaint) bool { return t.Key != holdfastv1alpha1.OutOfServiceTaintKey })
}

// The room question is asked of every lost node and every other suspect once two or
// more of them stand out (a zone seen dark a renewal apart), and never of one lost node
// alone, nor under the brake.
func TestLostRoomWanted(t *testing.T) {
	for name, tc := range map[string]struct {
		stale map[string]time.Duration
		want  []string
	}{
		"one lost node alone":                        {stale: map[string]time.Duration{"n1": time.Minute}},
		"one lost node and a suspect of its zone":    {stale: map[string]time.Duration{"n1": time.Minute, "n2": 20 * time.Second}, want: []string{"n1", "n2"}},
		"a whole zone lost":                          {stale: map[string]time.Duration{"n1": time.Minute, "n2": time.Minute}, want: []string{"n1", "n2"}},
		"a suspect alone, not lost yet":              {stale: map[string]time.Duration{"n2": 20 * time.Second}},
		"nodes of two zones lost at once: the brake": {stale: map[string]time.Duration{"n1": time.Minute, "n3": time.Minute}},
	} {
		t.Run(name, func(t *testing.T) {
			p := policy("p", time.Hour, nil)
			o := Observed{Policy: &p, Now: now, Health: staleLeases(tc.stale)}
			if got := o.LostRoomWanted(); !slices.Equal(got, tc.want) {
				t.Errorf("LostRoomWanted() = %v, want %v", got, tc.want)
			}
		})
	}
}
