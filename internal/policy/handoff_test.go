package policy

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"
	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// sized is a node of 4 CPUs and 16 GiB.
func sized(name string) *corev1.Node {
	n := node(name, false)
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	return n
}

// cpus requests n CPUs and 1 GiB.
func cpus(n string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n), corev1.ResourceMemory: resource.MustParse("1Gi")}
}

// quarter is a quarter of a sized node's CPU.
var quarter = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}

// handedOff gives w's surge set (an empty one if it has none) the record of a hand-off.
func handedOff(w Workload, record string) Workload {
	if w.Surge == nil {
		w = surged(w, 0)
	}
	w.Surge.HandOff = record
	return w
}

// ahead1 is the surge of single ahead of its node's scale-down: one extra pod, recorded.
func ahead1(record string) Surge {
	s := surgeTo("single", 1)
	s.HandOff = record
	return s
}

func TestDecideConsolidationHandOff(t *testing.T) {
	surge := func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge }
	protect := func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.SingleReplica = holdfastv1alpha1.SingleReplicaProtect
	}
	single := ready(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1)
	// surgingAhead is single with a surge set of one extra pod, those of extra, and the
	// record of a hand-off.
	surgingAhead := func(record string, extra ...Pod) Workload {
		for i := range extra {
			extra[i].Surge = true
		}
		return handedOff(surged(single, 1, extra...), record)
	}
	// A hand-off started 30 s ago: its deadline is consolidateAfter (30 s) and a minute
	// after the later of that and the new pod's readiness.
	inProgress := func(extra ...Pod) Workload { return surgingAhead("n1 "+stamp(now.Add(-30*time.Second)), extra...) }
	onN1 := map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}}
	// The single replica's pod on n1 with cluster-autoscaler's safe-to-evict: holdfast's
	// (markedOnN1, with Observed.Marked saying so), the user's; and one holdfast may not
	// mark.
	withSafe := func(p Pod) Pod { p.SafeToEvict = "true"; return p }
	markedOnN1 := map[string][]Pod{"Deployment/single": {withSafe(pod("single-a", "n1", true, time.Hour))}}
	usersSafe := withSafe(pod("single-a", "n1", true, time.Hour))
	unsafe := pod("single-a", "n1", true, time.Hour)
	unsafe.Unsafe = "its volume scratch is local storage"
	markSafe := []PodAnnotation{{Pod: "single-a", Mark: SafeToEvict, Set: true}}
	unmarkSafe := []PodAnnotation{{Pod: "single-a", Mark: SafeToEvict}}
	newReady := pod("single-b", "n2", true, time.Minute)
	nodes := map[string]*corev1.Node{"n1": sized("n1"), "n2": sized("n2")}
	settled := func(since time.Time) map[string]NodeClaim {
		return map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: since, ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: 30 * time.Second, Load: Load{Requested: quarter}}}
	}
	inGroup := func(l Load) map[string]NodeGroupMember {
		return map[string]NodeGroupMember{"n1": {Group: "general", Load: l}}
	}
	withTaint := func(n *corev1.Node, key string, effect corev1.TaintEffect) *corev1.Node {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
		return n
	}
	floor := opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaSurge, 0)
	const noRoom = "pod shop/single-a: its replacement fits on no other node: 0/2 nodes are available: 1 cordoned or being drained, 1 with too little cpu"
	surging := func(msg string) []holdfastv1alpha1.WorkloadStatus {
		return []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single", Message: msg}}
	}
	budgeted := func(msg string) []holdfastv1alpha1.WorkloadStatus {
		return []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-single", Message: msg}}
	}
	aheadUntil := func(by, at string) string {
		return "1 extra pod ahead of " + by + "'s scale-down of node n1, which its budget blocked: removed at 2026-11-22T" + at + "Z unless " + by + " takes the node first"
	}
	// caHeld is a hand-off of n1 to cluster-autoscaler begun 30 s ago, held on.
	caHeld := result{
		Apply:         []*policyv1.PodDisruptionBudget{floor},
		Workloads:     surging(aheadUntil("cluster-autoscaler", "12:25:30")),
		RequeueAfter:  surgePoll,
		HandOffTaints: []string{"n1"},
	}
	// over ends a surge ahead and keeps its record while the pod is on the node.
	over := func(record string) []Surge {
		s := surgeTo("single", 0)
		s.HandOff = record
		return []Surge{s}
	}
	// Before the new pod is Ready, the latest deadline: 10 minutes for its start-up, and
	// consolidateAfter and 6 minutes.
	ahead := aheadUntil("Karpenter", "12:16:00")
	const failed = msgSurgeReady + "; Karpenter did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:58:00Z: no new hand-off of that node before 2026-11-22T12:13:00Z"
	// The surge ahead of a node Consolidatable under a NodePool of consolidateAfter 30 s.
	surgedAhead := result{
		Apply:         []*policyv1.PodDisruptionBudget{floor},
		Surges:        []Surge{ahead1("n1 2026-11-22T12:00:00Z 1")},
		Workloads:     surging(aheadUntil("Karpenter", "12:16:30")),
		RequeueAfter:  surgePoll,
		HandOffTaints: []string{"n1"},
	}
	againAhead := func(count string) result {
		r := surgedAhead
		r.Surges = []Surge{ahead1("n1 2026-11-22T12:00:00Z " + count)}
		return r
	}
	// The surge ahead of a node of a cluster-autoscaler node group, its pod marked: 10
	// minutes for the new pod, then the recheck (5), unneeded time (10) and a minute.
	caAhead := surgedAhead
	caAhead.Workloads, caAhead.PodAnnotations = surging(aheadUntil("cluster-autoscaler", "12:26:00")), markSafe
	tests := map[string]decideCase{
		"a consolidatable node: surge ahead, with a deadline of consolidateAfter and a minute": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			want: surgedAhead,
		},
		"in progress: the new pod is starting, the deadline counts from its readiness": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(pod("single-b", "n2", false, 20*time.Second))}, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			pods: onN1,
			want: result{
				Apply:         []*policyv1.PodDisruptionBudget{floor},
				Workloads:     surging(ahead),
				RequeueAfter:  surgePoll,
				HandOffTaints: []string{"n1"},
			},
		},
		"in progress: the surge holds until the deadline while the pod is on the node": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(newReady)}, pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			want: result{
				Apply:         []*policyv1.PodDisruptionBudget{floor},
				Workloads:     surging(aheadUntil("Karpenter", "12:06:00")),
				RequeueAfter:  surgePoll,
				HandOffTaints: []string{"n1"},
			},
		},
		"in progress: Karpenter's taint makes it a surge for the drain": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(newReady)}, pods: onN1,
			nodes: map[string]*corev1.Node{"n1": node("n1", false, "karpenter.sh/disrupted"), "n2": node("n2", false)}, claims: settled(now.Add(-time.Minute)),
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{floor},
				Workloads:    surging("1 extra pod beside the 1 replica for the drain of node n1: 0 of them Ready elsewhere"),
				RequeueAfter: surgePoll,
			},
		},
		"in progress on a node tainted already: nothing more to taint": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(newReady)}, pods: onN1, claims: settled(now.Add(-time.Minute)),
			nodes: map[string]*corev1.Node{"n1": withTaint(sized("n1"), holdfastv1alpha1.HandOffTaintKey, corev1.TaintEffectPreferNoSchedule), "n2": sized("n2")},
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{floor},
				Workloads:    surging(aheadUntil("Karpenter", "12:06:00")),
				RequeueAfter: surgePoll,
			},
		},
		"Karpenter took the node: no pod left on it, the surge ends before the deadline": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(newReady)}, nodes: nodes,
			pods: map[string][]Pod{"Deployment/single": {pod("single-c", "n2", true, time.Second)}},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    []Surge{surgeEnd("single")},
				Workloads: budgeted(msgSurgeReady),
			},
		},
		"the deadline passed without Karpenter: the extra pod removed, the record kept": {
			policy: policy("p", time.Hour, surge), nodes: nodes, claims: settled(now.Add(-3 * time.Minute)),
			pods: map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}},
			work: []Workload{surgingAhead("n1 "+stamp(now.Add(-8*time.Minute)), pod("single-b", "n2", true, 7*time.Minute))},
			want: result{RequeueAfter: 7 * time.Minute,
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    over("n1 2026-11-22T11:52:00Z"),
				Workloads: budgeted(msgSurgeReady + "; Karpenter did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:52:00Z: no new hand-off of that node before 2026-11-22T12:07:00Z"),
			},
		},
		"cooldown: the node settled anew, but too soon after the last hand-off": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-30 * time.Second)),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-2*time.Minute)))},
			want: result{RequeueAfter: 13 * time.Minute, Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(failed)},
		},
		"after the cooldown, the node is handed off again, counted": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Hour)),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-16*time.Minute)))},
			want: againAhead("2"),
		},
		"the back-off doubles: 30 minutes after the second hand-off": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Hour)),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-20*time.Minute))+" 2")},
			want: result{RequeueAfter: 10 * time.Minute, Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady + "; Karpenter did not take node n1 after 2 hand-offs, the last at 2026-11-22T11:40:00Z: no new hand-off of that node before 2026-11-22T12:10:00Z")},
		},
		"after the doubled back-off, a third hand-off": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Hour)),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-31*time.Minute))+" 2")},
			want: againAhead("3"),
		},
		"three hand-offs declined: holdfast gives up on the node, restart or not": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-48*time.Hour))+" 3")},
			want: result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady + "; Karpenter did not take node n1 after 3 hand-offs, the last at 2026-11-20T12:00:00Z: holdfast surges ahead of that node no more (a drain of it still surges)")},
		},
		"the deadline counts the new pod only: the old one's readiness flapping does not extend it": {
			policy: policy("p", time.Hour, surge), nodes: nodes, claims: settled(now.Add(-3 * time.Minute)),
			pods: map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n1", Ready: true, Since: now.Add(-10 * time.Second), Created: now.Add(-time.Hour)}}},
			work: []Workload{surgingAhead("n1 "+stamp(now.Add(-8*time.Minute))+" 1", pod("single-b", "n2", true, 7*time.Minute))},
			want: result{RequeueAfter: 7 * time.Minute,
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    over("n1 2026-11-22T11:52:00Z 1"),
				Workloads: budgeted(msgSurgeReady + "; Karpenter did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:52:00Z: no new hand-off of that node before 2026-11-22T12:07:00Z"),
			},
		},
		"the deadline is capped from the hand-off's start: a new pod that flaps does not keep the surge": {
			policy: policy("p", time.Hour, surge), nodes: nodes, claims: settled(now.Add(-3 * time.Minute)),
			pods: map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}},
			work: []Workload{surgingAhead("n1 "+stamp(now.Add(-17*time.Minute))+" 1", Pod{Name: "single-b", Node: "n2", Ready: true, Since: now.Add(-time.Minute), Created: now.Add(-17 * time.Minute)})},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    over("n1 2026-11-22T11:43:00Z 1"),
				Workloads: budgeted(msgSurgeReady + "; Karpenter did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:43:00Z: no new hand-off of that node before 2026-11-22T11:58:00Z"),
			},
		},
		"cluster-autoscaler: a node of a node group under the threshold, surge ahead with its window": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			want: caAhead,
		},
		"cluster-autoscaler: a pod with local storage is not marked safe to evict, and status says so": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			pods: map[string][]Pod{"Deployment/single": {unsafe}},
			want: result{
				Apply:  []*policyv1.PodDisruptionBudget{floor},
				Surges: []Surge{ahead1("n1 2026-11-22T12:00:00Z 1")},
				Workloads: surging(aheadUntil("cluster-autoscaler", "12:26:00") + "; pod single-a is not marked safe to evict for cluster-autoscaler, since its volume scratch is local storage, " +
					"which the mark would let cluster-autoscaler pass too: cluster-autoscaler may set the node aside for its recheck timeout first"),
				RequeueAfter:  surgePoll,
				HandOffTaints: []string{"n1"},
			},
		},
		"cluster-autoscaler: a pod the user marked safe to evict needs no mark, and keeps the user's": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			pods: map[string][]Pod{"Deployment/single": {usersSafe}},
			want: result{
				Apply:         []*policyv1.PodDisruptionBudget{floor},
				Surges:        []Surge{ahead1("n1 2026-11-22T12:00:00Z 1")},
				Workloads:     surging(aheadUntil("cluster-autoscaler", "12:26:00")),
				RequeueAfter:  surgePoll,
				HandOffTaints: []string{"n1"},
			},
		},
		"cluster-autoscaler: in progress, holdfast's mark stays": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(pod("single-b", "n2", false, 20*time.Second))}, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			pods: markedOnN1, marked: Marks{SafeToEvict: {"single-a": "p"}},
			want: caHeld,
		},
		"cluster-autoscaler: in progress without the mark (a crash after the surge): marked": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(pod("single-b", "n2", false, 20*time.Second))}, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			pods: onN1,
			want: result{
				Apply:          []*policyv1.PodDisruptionBudget{floor},
				Workloads:      surging(aheadUntil("cluster-autoscaler", "12:25:30")),
				RequeueAfter:   surgePoll,
				HandOffTaints:  []string{"n1"},
				PodAnnotations: markSafe,
			},
		},
		"cluster-autoscaler: the workload switched to Skip mid-hand-off: holdfast's mark goes, another policy's stays": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSkip }),
			work:   []Workload{single}, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			pods: markedOnN1, marked: Marks{SafeToEvict: {"single-a": "p", "other-a": "q"}},
			want: result{
				Workloads:      []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSkipped, Message: msgSingleSkipped}},
				PodAnnotations: unmarkSafe,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		"cluster-autoscaler: the threshold is the operator's: a quarter used is too much under 0.2": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes, groups: inGroup(Load{Requested: quarter}),
			scalers: Autoscalers{Threshold: 0.2},
			want:    result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady), RequeueAfter: caCandidateRecheck},
		},
		// A node above the threshold only for the pods of a Deployment that runs more than
		// it wants: their going sends no event, so the node is looked at again soon.
		"cluster-autoscaler: above the threshold only for pods that may leave soon: looked at again after caDepartureRecheck": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			groups: inGroup(Load{Requested: cpus("3"), MayLeave: cpus("2")}),
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady), RequeueAfter: caDepartureRecheck},
		},
		"cluster-autoscaler: above the threshold even without the pods that may leave: the usual look": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			groups: inGroup(Load{Requested: cpus("3"), MayLeave: cpus("500m")}),
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady), RequeueAfter: caCandidateRecheck},
		},
		"cluster-autoscaler: pods that may leave from a blocked node: the usual look, status says why": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			groups: inGroup(Load{Requested: cpus("3"), MayLeave: cpus("2"), Blocker: "node n1 has cluster-autoscaler.kubernetes.io/scale-down-disabled"}),
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, RequeueAfter: caCandidateRecheck, Workloads: budgeted(msgSurgeReady + "; cluster-autoscaler does not remove node n1 whatever its budget allows (node n1 has cluster-autoscaler.kubernetes.io/scale-down-disabled), so holdfast does not surge ahead of it")},
		},
		"cluster-autoscaler: pods that may leave from a node in its back-off: the usual look": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, groups: inGroup(Load{Requested: cpus("3"), MayLeave: cpus("2")}),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-2*time.Minute)))},
			want: result{RequeueAfter: caCandidateRecheck, Apply: []*policyv1.PodDisruptionBudget{floor},
				Workloads: budgeted(msgSurgeReady + "; cluster-autoscaler did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:58:00Z: no new hand-off of that node before 2026-11-22T12:13:00Z")},
		},
		"cluster-autoscaler: under the threshold with pods that may leave: surge ahead at once": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			groups: inGroup(Load{Requested: quarter, MayLeave: cpus("500m")}),
			want:   caAhead,
		},
		"Karpenter: MayLeave is cluster-autoscaler's: a node above the threshold is no candidate": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			claims: map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: "WhenEmptyOrUnderutilized", Load: Load{Requested: cpus("3"), MayLeave: cpus("2")}}},
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady)},
		},
		"cluster-autoscaler: a blocker on the node, no surge and status says why": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			groups: inGroup(Load{Requested: quarter, Blocker: "node n1 has cluster-autoscaler.kubernetes.io/scale-down-disabled"}),
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, RequeueAfter: caCandidateRecheck, Workloads: budgeted(msgSurgeReady + "; cluster-autoscaler does not remove node n1 whatever its budget allows (node n1 has cluster-autoscaler.kubernetes.io/scale-down-disabled), so holdfast does not surge ahead of it")},
		},
		"cluster-autoscaler: its deletion-candidate taint accepts the hand-off, which holds past the deadline": {
			policy: policy("p", time.Hour, surge), groups: inGroup(Load{Requested: quarter}),
			nodes: map[string]*corev1.Node{"n1": withTaint(sized("n1"), "DeletionCandidateOfClusterAutoscaler", corev1.TaintEffectPreferNoSchedule), "n2": sized("n2")},
			pods:  markedOnN1, marked: Marks{SafeToEvict: {"single-a": "p"}},
			scalers: Autoscalers{UnneededTime: 30 * time.Second, Recheck: time.Minute},
			work:    []Workload{surgingAhead("n1 "+stamp(now.Add(-8*time.Minute))+" 1", pod("single-b", "n2", true, 7*time.Minute))},
			want: result{
				Apply:         []*policyv1.PodDisruptionBudget{floor},
				Workloads:     surging(aheadUntil("cluster-autoscaler", "11:55:30")),
				RequeueAfter:  surgePoll,
				HandOffTaints: []string{"n1"},
			},
		},
		"cluster-autoscaler: its taint holds the hand-off no later than its latest end": {
			policy: policy("p", time.Hour, surge), groups: inGroup(Load{Requested: quarter}),
			nodes:   map[string]*corev1.Node{"n1": withTaint(sized("n1"), "DeletionCandidateOfClusterAutoscaler", corev1.TaintEffectPreferNoSchedule), "n2": sized("n2")},
			pods:    onN1,
			scalers: Autoscalers{UnneededTime: 30 * time.Second, Recheck: time.Minute},
			// 10 minutes and the window (2.5) after it began.
			work: []Workload{surgingAhead("n1 "+stamp(now.Add(-13*time.Minute))+" 1", pod("single-b", "n2", true, 7*time.Minute))},
			want: result{RequeueAfter: caCandidateRecheck,
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    over("n1 2026-11-22T11:47:00Z 1"),
				Workloads: budgeted(msgSurgeReady + "; cluster-autoscaler did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:47:00Z: no new hand-off of that node before 2026-11-22T12:02:00Z"),
			},
		},
		"cluster-autoscaler: without the taint the same hand-off is over, declined, and holdfast's mark goes": {
			policy: policy("p", time.Hour, surge), groups: inGroup(Load{Requested: quarter}), nodes: nodes,
			pods: markedOnN1, marked: Marks{SafeToEvict: {"single-a": "p"}},
			scalers: Autoscalers{UnneededTime: 30 * time.Second, Recheck: time.Minute},
			work:    []Workload{surgingAhead("n1 "+stamp(now.Add(-8*time.Minute))+" 1", pod("single-b", "n2", true, 7*time.Minute))},
			want: result{RequeueAfter: caCandidateRecheck,
				Apply:          []*policyv1.PodDisruptionBudget{floor},
				Surges:         over("n1 2026-11-22T11:52:00Z 1"),
				Workloads:      budgeted(msgSurgeReady + "; cluster-autoscaler did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:52:00Z: no new hand-off of that node before 2026-11-22T12:07:00Z"),
				PodAnnotations: unmarkSafe,
			},
		},
		"cluster-autoscaler: a declined hand-off leaves a user's safe-to-evict alone": {
			policy: policy("p", time.Hour, surge), groups: inGroup(Load{Requested: quarter}), nodes: nodes,
			pods:    map[string][]Pod{"Deployment/single": {usersSafe}},
			scalers: Autoscalers{UnneededTime: 30 * time.Second, Recheck: time.Minute},
			work:    []Workload{surgingAhead("n1 "+stamp(now.Add(-8*time.Minute))+" 1", pod("single-b", "n2", true, 7*time.Minute))},
			want: result{RequeueAfter: caCandidateRecheck,
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    over("n1 2026-11-22T11:52:00Z 1"),
				Workloads: budgeted(msgSurgeReady + "; cluster-autoscaler did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:52:00Z: no new hand-off of that node before 2026-11-22T12:07:00Z"),
			},
		},
		"cluster-autoscaler: the node's pods would fit on no other node, no surge and status names the pod, looked at again later": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			groups: inGroup(Load{Requested: quarter, Unplaceable: noRoom}),
			want: result{Apply: []*policyv1.PodDisruptionBudget{floor}, RequeueAfter: caCandidateRecheck,
				Workloads: budgeted(msgSurgeReady + "; cluster-autoscaler would find no room elsewhere for the pods of node n1 (" + noRoom + "), so holdfast does not surge ahead of it")},
		},
		"Karpenter: the node's pods would fit on no other node, no surge": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			claims: map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: 30 * time.Second,
				Load: Load{Requested: quarter, Unplaceable: noRoom}}},
			want: result{Apply: []*policyv1.PodDisruptionBudget{floor}, RequeueAfter: RoomAnswerLife,
				Workloads: budgeted(msgSurgeReady + "; Karpenter would find no room elsewhere for the pods of node n1 (" + noRoom + "), so holdfast does not surge ahead of it")},
		},
		"in progress: the new pod landed on the node itself, so the hand-off ends early, and the record says so": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(pod("single-b", "n1", true, 20*time.Second))}, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			pods: onN1,
			want: result{RequeueAfter: 14*time.Minute + 30*time.Second,
				Apply:     []*policyv1.PodDisruptionBudget{floor},
				Surges:    over("n1 2026-11-22T11:59:30Z 1 landed"),
				Workloads: budgeted(msgSurgeReady + "; Karpenter did not take node n1 after 1 hand-offs, the last at 2026-11-22T11:59:30Z: no new hand-off of that node before 2026-11-22T12:14:30Z"),
			},
		},
		"cluster-autoscaler accepted the node: a new pod there does not end the hand-off": {
			policy: policy("p", time.Hour, surge), work: []Workload{inProgress(pod("single-b", "n1", false, 20*time.Second))}, groups: inGroup(Load{Requested: quarter}),
			nodes: map[string]*corev1.Node{"n1": withTaint(sized("n1"), "DeletionCandidateOfClusterAutoscaler", corev1.TaintEffectPreferNoSchedule), "n2": sized("n2")},
			pods:  markedOnN1, marked: Marks{SafeToEvict: {"single-a": "p"}},
			want: caHeld,
		},
		"after a hand-off whose new pod landed on the node: status says so, and the back-off holds": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-30 * time.Second)),
			work: []Workload{handedOff(single, "n1 "+stamp(now.Add(-2*time.Minute))+" 1 landed")},
			want: result{RequeueAfter: 13 * time.Minute, Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady + "; the new pod of the last hand-off of node n1 to Karpenter (1 so far, the last at 2026-11-22T11:58:00Z) was scheduled onto that node itself, which its budget then kept all the same, so the hand-off ended early: no new hand-off of that node before 2026-11-22T12:13:00Z")},
		},
		"a hand-off of another node does not hold this one back": {
			policy: policy("p", time.Hour, surge), pods: onN1, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			work: []Workload{handedOff(single, "n9 "+stamp(now.Add(-time.Second)))},
			want: surgedAhead,
		},
		"a node more than half used: Karpenter may not want it, no hand-off": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			claims: map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: "WhenEmptyOrUnderutilized",
				Load: Load{Requested: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2100m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			want: result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady)},
		},
		"a node not yet consolidatable: nothing to hand off": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes, claims: settled(time.Time{}),
			want: result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady)},
		},
		"WhenEmpty never moves the pod: nothing to hand off": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			claims: map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: "WhenEmpty"}},
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady)},
		},
		"do-not-disrupt elsewhere on the node keeps Karpenter off whatever the budget: no surge, and status says why": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			claims: map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: "WhenEmptyOrUnderutilized", Load: Load{Blocker: "pod shop/db-0 has karpenter.sh/do-not-disrupt"}}},
			want:   result{Apply: []*policyv1.PodDisruptionBudget{floor}, Workloads: budgeted(msgSurgeReady + "; Karpenter does not remove node n1 whatever its budget allows (pod shop/db-0 has karpenter.sh/do-not-disrupt), so holdfast does not surge ahead of it")},
		},
		"a NodePool budget that allows no consolidation now: no surge, status says why, and the policy is looked at again when its window ends": {
			policy: policy("p", time.Hour, surge), work: []Workload{single}, pods: onN1, nodes: nodes,
			claims: map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: "WhenEmptyOrUnderutilized", Load: Load{Requested: quarter},
				Budget: PoolBudget{Pool: "general", Closed: "NodePool general's spec.disruption.budgets[0] (nodes \"0\" of 3 nodes) allows 0 disruptions", Opens: now.Add(2 * time.Hour)}}},
			want: result{Apply: []*policyv1.PodDisruptionBudget{floor}, RequeueAfter: 2 * time.Hour,
				Workloads: budgeted(msgSurgeReady + "; Karpenter does not consolidate node n1 now: NodePool general's spec.disruption.budgets[0] (nodes \"0\" of 3 nodes) allows 0 disruptions, so holdfast does not surge ahead of it until " + stamp(now.Add(2*time.Hour)) + ", when the scheduled budgets that allow none end their windows")},
		},
		"Protect keeps blocking consolidation, and says so": {
			policy: policy("p", time.Hour, protect), work: []Workload{single}, nodes: nodes, claims: settled(now.Add(-time.Minute)),
			pods: map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n1", Ready: true, DoNotDisrupt: true, Since: now.Add(-time.Hour)}}},
			want: result{Apply: []*policyv1.PodDisruptionBudget{opened(floor, holdfastv1alpha1.SingleReplicaProtect, 0)}, Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadProtected, Budget: "holdfast-deploy-single",
				Message: "single replica under Protect: minAvailable 1 and karpenter.sh/do-not-disrupt on its pod, which keeps Karpenter from consolidating node n1 (it considers it: Consolidatable); choose Surge to let it go with a second replica first"}}},
		},
	}
	runDecide(t, tests)
}

// Room is read only for the nodes a hand-off would start from but for room: an answer
// reads the whole cluster.
func TestRoomWanted(t *testing.T) {
	surge := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	skip := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSkip })
	single := ready(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1)
	backedOff := handedOff(single, "n1 "+stamp(now.Add(-2*time.Minute)))
	tests := map[string]struct {
		policy holdfastv1alpha1.DisruptionPolicy
		work   Workload
		load   Load
		// closed, when set, puts n1 under Karpenter, its NodePool's budgets closed so.
		closed string
		want   []string
	}{
		"a Surge single replica on an underused, unblocked node of a node group": {policy: surge, work: single, load: Load{Requested: quarter}, want: []string{"n1"}},
		"Skip hands nothing over": {policy: skip, work: single, load: Load{Requested: quarter}},
		"a blocked node":          {policy: surge, work: single, load: Load{Requested: quarter, Blocker: "node n1 has cluster-autoscaler.kubernetes.io/scale-down-disabled"}},
		"a node above the threshold": {policy: surge, work: single,
			load: Load{Requested: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		"a node in its back-off": {policy: surge, work: backedOff, load: Load{Requested: quarter}},
		"a hand-off under way":   {policy: surge, work: surged(single, 1), load: Load{Requested: quarter}},
		"a Karpenter node whose NodePool's budgets allow no consolidation now": {policy: surge, work: single, load: Load{Requested: quarter},
			closed: "NodePool general's spec.disruption.budgets[0] (nodes \"0\" of 3 nodes) allows 0 disruptions"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			o := Observed{Policy: &p, Workloads: []Workload{tc.work}, Now: now,
				Pods:       map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}},
				Nodes:      map[string]*corev1.Node{"n1": sized("n1")},
				NodeGroups: map[string]NodeGroupMember{"n1": {Group: "general", Load: tc.load}}}
			if tc.closed != "" {
				o.NodeGroups = nil
				o.Claims = map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: consolidateUnderutilized, Load: tc.load,
					Budget: PoolBudget{Pool: "general", Closed: tc.closed}}}
			}
			if got := o.RoomWanted(); !slices.Equal(got, tc.want) {
				t.Errorf("RoomWanted = %v, want %v", got, tc.want)
			}
		})
	}
}

// The sweep takes off the hand-off taints no surge keeps: the surge is over or never
// came (an operator stopped between the taint and the surge), after a grace for the
// surge's write to reach the cache.
func TestLeftoverHandOffTaints(t *testing.T) {
	tainted := func(name string, ago time.Duration) corev1.Node {
		n := node(name, false)
		n.Spec.Taints = []corev1.Taint{{Key: holdfastv1alpha1.HandOffTaintKey, Effect: corev1.TaintEffectPreferNoSchedule, TimeAdded: ptr.To(metav1.NewTime(now.Add(-ago)))}}
		return *n
	}
	record := func(value string, extra int32) SurgeSet { return SurgeSet{Replicas: extra, HandOff: value} }
	nodes := []corev1.Node{tainted("handed", time.Hour), tainted("over", time.Hour), tainted("just", time.Second), tainted("landed", time.Hour),
		tainted("ended", time.Hour), *node("plain", false)}
	sets := []SurgeSet{record("handed "+stamp(now.Add(-time.Minute))+" 1", 1), record("landed "+stamp(now.Add(-time.Minute))+" 1 landed", 1),
		record("ended "+stamp(now.Add(-time.Minute))+" 1", 0)}
	if got, want := LeftoverHandOffTaints(nodes, sets, now), []string{"over", "landed", "ended"}; !slices.Equal(got, want) {
		t.Errorf("LeftoverHandOffTaints = %v, want %v", got, want)
	}
}

// A hand-off is measured when the decision ends it: taken when no pod is left on the
// node, declined when the deadline passed or the new pod landed there; not while it runs.
func TestHandOffsEnded(t *testing.T) {
	p := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	single := ready(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1)
	ahead := func(ago time.Duration, extra Pod) Workload {
		extra.Surge = true
		return handedOff(surged(single, 1, extra), "n1 "+stamp(now.Add(-ago))+" 1")
	}
	onN1 := map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}}
	claims := map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-3 * time.Minute), ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: 30 * time.Second, Load: Load{Requested: quarter}}}
	nodes := map[string]*corev1.Node{"n1": sized("n1"), "n2": sized("n2")}
	for name, tc := range map[string]struct {
		work Workload
		pods map[string][]Pod
		want []HandOffEnd
	}{
		"Karpenter took the node": {work: ahead(30*time.Second, pod("single-b", "n2", true, time.Second)),
			pods: map[string][]Pod{"Deployment/single": {pod("single-b", "n2", true, time.Second)}},
			want: []HandOffEnd{{Autoscaler: karpenterName, Taken: true, Duration: 30 * time.Second}}},
		"the deadline passed": {work: ahead(8*time.Minute, pod("single-b", "n2", true, 7*time.Minute)), pods: onN1,
			want: []HandOffEnd{{Autoscaler: karpenterName, Duration: 8 * time.Minute}}},
		"the new pod landed on the node": {work: ahead(30*time.Second, pod("single-b", "n1", true, 20*time.Second)), pods: onN1,
			want: []HandOffEnd{{Autoscaler: karpenterName, Duration: 30 * time.Second}}},
		"still running": {work: ahead(30*time.Second, pod("single-b", "n2", false, 20*time.Second)), pods: onN1},
	} {
		t.Run(name, func(t *testing.T) {
			o := Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Workloads: []Workload{tc.work}, Pods: tc.pods, Nodes: nodes, Claims: claims, Now: now}
			if diff := cmp.Diff(tc.want, HandOffsEnded(o, Decide(o))); diff != "" {
				t.Errorf("HandOffsEnded (-want +got):\n%s", diff)
			}
		})
	}
}

// What is known of a pod's going, from its owners: a pod the garbage collector is
// about to delete is leaving, one of a Deployment running more pods than it wants may
// leave, and a ReplicaSet is read (from the API server, in the operator) only when its
// Deployment is gone or deleted in the foreground.
func TestDepartureOf(t *testing.T) {
	const ns = "shop"
	ctrl := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	// web's pod, of its ReplicaSet web-5d8f.
	webPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f-x", Namespace: ns, Labels: map[string]string{"app": "web", "pod-template-hash": "5d8f"},
		OwnerReferences: ctrl("ReplicaSet", "web-5d8f", "rs-uid")}}
	deployment := func(want, running int32, mod func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "web-uid"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(want)},
			Status: appsv1.DeploymentStatus{Replicas: running, UpdatedReplicas: running}}
		if mod != nil {
			mod(d)
		}
		return d
	}
	deleting := func(finalizer string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.DeletionTimestamp = ptr.To(metav1.NewTime(now))
			d.Finalizers = []string{finalizer}
		}
	}
	replicaSet := func(owners []metav1.OwnerReference) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns, UID: "rs-uid", OwnerReferences: owners}}
	}
	ofWeb := ctrl("Deployment", "web", "web-uid")
	// db-2, of StatefulSet db.
	dbPod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: ctrl("StatefulSet", "db", "db-uid")}}
	}
	statefulSet := func(replicas, start int32) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, UID: "db-uid"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}}
		if start > 0 {
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: start}
		}
		return s
	}
	for name, tc := range map[string]struct {
		pod *corev1.Pod
		// owners by kind; a kind not listed is gone.
		owners map[string]metav1.Object
		want   departure
		// reads are the kinds read, in order.
		reads []string
	}{
		"a Deployment at rest: staying, its ReplicaSet not read": {pod: webPod,
			owners: map[string]metav1.Object{"Deployment": deployment(1, 1, nil)}, want: staying, reads: []string{"Deployment"}},
		"a Deployment scaled down, not all its pods gone yet: may leave": {pod: webPod,
			owners: map[string]metav1.Object{"Deployment": deployment(1, 3, nil)}, want: mayLeave, reads: []string{"Deployment"}},
		"a Deployment rolling out, its old pods going as new ones come: staying": {pod: webPod,
			owners: map[string]metav1.Object{"Deployment": deployment(1, 2, func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 })}, want: staying, reads: []string{"Deployment"}},
		"a Deployment deleted, its ReplicaSet not collected yet: leaving": {pod: webPod,
			owners: map[string]metav1.Object{"ReplicaSet": replicaSet(ofWeb)}, want: leaving, reads: []string{"Deployment", "ReplicaSet"}},
		"a Deployment deleted, its ReplicaSet collected already: leaving": {pod: webPod,
			want: leaving, reads: []string{"Deployment", "ReplicaSet"}},
		"a Deployment deleted in the foreground: leaving": {pod: webPod,
			owners: map[string]metav1.Object{"Deployment": deployment(1, 1, deleting(metav1.FinalizerDeleteDependents)), "ReplicaSet": replicaSet(ofWeb)},
			want:   leaving, reads: []string{"Deployment", "ReplicaSet"}},
		"a Deployment being deleted, orphaning its ReplicaSets: staying": {pod: webPod,
			owners: map[string]metav1.Object{"Deployment": deployment(1, 1, deleting(metav1.FinalizerOrphanDependents))}, want: staying, reads: []string{"Deployment"}},
		"a Deployment deleted, its ReplicaSet orphaned: staying": {pod: webPod,
			owners: map[string]metav1.Object{"ReplicaSet": replicaSet(nil)}, want: staying, reads: []string{"Deployment", "ReplicaSet"}},
		"a Deployment deleted in the foreground, the ReplicaSet an older one's of the name: leaving": {pod: webPod,
			owners: map[string]metav1.Object{"Deployment": deployment(1, 1, deleting(metav1.FinalizerDeleteDependents)), "ReplicaSet": replicaSet(ctrl("Deployment", "web", "old-uid"))},
			want:   leaving, reads: []string{"Deployment", "ReplicaSet"}},
		"a ReplicaSet of no Deployment: staying, nothing read": {
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare-x", Namespace: ns, OwnerReferences: ctrl("ReplicaSet", "bare", "bare-uid")}},
			want: staying},
		"a Job's pod: staying, nothing read": {
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-x", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job", Controller: ptr.To(true)}}}},
			want: staying},
		"a StatefulSet's pod it keeps: staying": {pod: dbPod("db-2"),
			owners: map[string]metav1.Object{"StatefulSet": statefulSet(3, 0)}, want: staying, reads: []string{"StatefulSet"}},
		"a StatefulSet scaled below the pod's ordinal: leaving": {pod: dbPod("db-2"),
			owners: map[string]metav1.Object{"StatefulSet": statefulSet(2, 0)}, want: leaving, reads: []string{"StatefulSet"}},
		"a StatefulSet whose ordinals start past the pod's: leaving": {pod: dbPod("db-2"),
			owners: map[string]metav1.Object{"StatefulSet": statefulSet(3, 3)}, want: leaving, reads: []string{"StatefulSet"}},
		"a StatefulSet deleted: leaving": {pod: dbPod("db-2"), want: leaving, reads: []string{"StatefulSet"}},
	} {
		t.Run(name, func(t *testing.T) {
			var reads []string
			got, err := departureOf(tc.pod, func(namespace, kind, name string) (metav1.Object, error) {
				if namespace != ns {
					t.Errorf("read %s %s/%s, of another namespace", kind, namespace, name)
				}
				reads = append(reads, kind)
				if o, ok := tc.owners[kind]; ok {
					return o, nil
				}
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("departureOf = %d, want %d", got, tc.want)
			}
			if !slices.Equal(reads, tc.reads) {
				t.Errorf("read %v, want %v", reads, tc.reads)
			}
		})
	}
}

// A policy awaits the workloads with pods on its Surge single replica's node that
// cluster-autoscaler may want but for their load: their deletion or scale-down, from any
// namespace, is to wake it. Not when the hand-off would not start whatever the load, nor
// when it starts already.
func TestAwaited(t *testing.T) {
	surge := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	skip := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSkip })
	single := ready(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1)
	full := Load{Requested: cpus("3900m")}
	on := []string{"Deployment/batch/filler", "StatefulSet/shop/db"}
	for name, tc := range map[string]struct {
		policy holdfastv1alpha1.DisruptionPolicy
		work   Workload
		load   Load
		// karpenter puts n1 under Karpenter.
		karpenter bool
		want      []string
	}{
		"above the threshold: its workloads":         {policy: surge, work: single, load: full, want: on},
		"under the threshold: the hand-off starts":   {policy: surge, work: single, load: Load{Requested: quarter}},
		"Skip hands nothing over":                    {policy: skip, work: single, load: full},
		"a blocked node":                             {policy: surge, work: single, load: Load{Requested: cpus("3900m"), Blocker: "node n1 has cluster-autoscaler.kubernetes.io/scale-down-disabled"}},
		"a node in its back-off":                     {policy: surge, work: handedOff(single, "n1 "+stamp(now.Add(-2*time.Minute))), load: full},
		"a hand-off under way":                       {policy: surge, work: surged(single, 1), load: full},
		"Karpenter's node: its condition is watched": {policy: surge, work: single, load: full, karpenter: true},
	} {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			o := Observed{Policy: &p, Workloads: []Workload{tc.work}, Now: now,
				Pods:       map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}},
				Nodes:      map[string]*corev1.Node{"n1": sized("n1")},
				NodeGroups: map[string]NodeGroupMember{"n1": {Group: "general", Load: tc.load, Workloads: on}}}
			if tc.karpenter {
				o.Claims = map[string]NodeClaim{"n1": {Name: "claim-1", ConsolidatableSince: now.Add(-time.Minute), ConsolidationPolicy: consolidateUnderutilized, Load: tc.load}}
			}
			if got := o.Awaited(); !slices.Equal(got, tc.want) {
				t.Errorf("Awaited = %v, want %v", got, tc.want)
			}
		})
	}
}
