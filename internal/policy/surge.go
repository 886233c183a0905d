package policy

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// The surge set: extra pods of a Deployment that holdfast owns.
//
// A surge adds pods beside a Deployment's own for as long as a drain, a hand-off or a
// lost node takes some of them: a ReplicaSet owned by the policy, with the Deployment's
// current template and one more label (SurgeOfLabel) that no ReplicaSet of the
// Deployment selects. Services and the workload's budget select the template's labels,
// so they count the extra pods; the Deployment, its ReplicaSets and its autoscaler
// never see them, and holdfast writes none of them, so a GitOps tool, Helm or an
// autoscaler that owns the Deployment's size has nothing to undo. The set is removed
// once the Deployment's own pods are Ready again; the policy owning it lets the garbage
// collector remove it with the policy, or with holdfast's CRDs on uninstall.

// surgeSetPrefix starts every surge set's name.
const surgeSetPrefix = "holdfast-surge-"

// maxSurgeSetName keeps a surge set's pods' names (the set's, a dash and five
// characters) within the 253 characters of an object name.
const maxSurgeSetName = 240

// SurgeSetName is the name of the surge set of the Deployment of that name: one per
// Deployment, so that every policy and every restart of the operator finds the same.
func SurgeSetName(deployment string) string {
	name := surgeSetPrefix + deployment
	if len(name) <= maxSurgeSetName {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(deployment))
	return fmt.Sprintf("%s-%08x", name[:maxSurgeSetName-9], h.Sum32())
}

// surging reports whether w's surge set runs extra pods.
func (w *Workload) surging() bool { return w.Surge != nil && w.Surge.Replicas > 0 }

// extra is how many extra pods w's surge set runs.
func (w *Workload) extra() int32 {
	if w.Surge == nil {
		return 0
	}
	return w.Surge.Replicas
}

// unclaimedSurges removes the surge sets o.Policy owns whose Deployment no policy
// selects any more, or is gone: at once, since nothing is left to wait for on their
// behalf. A set another policy now wins is left to it, which takes it over.
func unclaimedSurges(o Observed) []Surge {
	var out []Surge
	for _, set := range o.Surges {
		if set.Policy == o.Policy.Name && set.Unclaimed {
			out = append(out, Surge{Name: set.Name, Deployment: set.Deployment, DeploymentUID: set.DeploymentUID, Delete: true})
		}
	}
	return out
}

// surgeProgress is where a surge of a workload stands.
type surgeProgress struct {
	// active says a surge is on and not over: extra pods run for a drain or for the
	// pods of a lost node.
	active bool
	// forDrain says the surge holds a pod for a drain, a hand-off, or a pod of the
	// Deployment still starting after them.
	forDrain bool
	// size is the size the workload is counted at: its own.
	size int32
	// message says where an active surge stands.
	message string
	// changes are the surge's own: a resize or its end, a poll while on.
	changes verdict
}

// followSurge moves a surge in progress on: it is over (its set removed, or kept empty
// with the record of a hand-off) once no pod of the Deployment is on a node being
// drained or lost, no hand-off to an autoscaler is in progress, and the Deployment's
// own pods are Ready elsewhere, or none is still starting. While on, it keeps one pod
// for a drain and one for each pod on a lost node; the brake keeps what runs and adds
// nothing.
func followSurge(o Observed, w *Workload, f losses) surgeProgress {
	if !w.surging() {
		p := surgeProgress{size: w.Replicas}
		if w.Surge != nil && !keepsRecord(o, w, w.Surge.HandOff) {
			p.changes.surges = []Surge{surgeOf(w, 0, "")}
		}
		return p
	}
	extra := w.Surge.Replicas
	var ready int32
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if pod.Ready && !BeingDrained(o.Nodes[pod.Node]) && !f.lost[pod.Node] {
			ready++
		}
	}
	lost, nodes := f.lostPods(o, w)
	fits, homeless := f.fit(o, w)
	if !surgesForFailure(o.Policy) {
		lost, fits, homeless = 0, 0, 0
	}
	node := drainedNode(o, w)
	if f.lost[node] {
		node = "" // counted as lost
	}
	h, autoscaler, deadline, ahead := handingOff(o, w)
	waiting := ready < w.Replicas && replacing(o, w, f)
	if node == "" && !ahead && lost == 0 && !waiting {
		record := w.Surge.HandOff
		if h, ok := landed(o, w); ok {
			record = h.String()
		}
		if !keepsRecord(o, w, record) {
			record = ""
		}
		return surgeProgress{size: w.Replicas, changes: verdict{surges: []Surge{surgeOf(w, 0, record)}}}
	}
	p := surgeProgress{active: true, forDrain: node != "" || ahead || waiting && extra > lost, size: w.Replicas,
		changes: verdict{requeueAfter: surgePoll}}
	want := extra
	if node != "" || ahead || lost > 0 {
		want = surgeSize(fits, p.forDrain)
	}
	if f.brake != "" {
		want = min(want, extra)
	}
	switch {
	case lost > 0:
		p.message = msgSurgedForFailure(lost, nodes, w.Replicas, want, homeless)
	case node != "":
		p.message = msgSurgedForDrain(w.Replicas, want, node, ready)
	case ahead:
		p.message = msgSurgedAhead(want, autoscaler, h.node, deadline) + unmarkedNote(o, w, h.node)
	default:
		p.message = msgSurgeWaiting(w.Replicas, want, ready)
	}
	if want != extra || w.Surge.Policy != o.Policy.Name {
		// A new size, or a set another policy made, which this one takes over.
		p.changes.surges = []Surge{surgeOf(w, want, w.Surge.HandOff)}
	}
	return p
}

// replacing reports whether the Deployment is still replacing the pods its surge stood
// in for: it has fewer live pods than it wants (the replacement is not made yet, or not
// seen yet), or a pod made since the surge began is not Ready. Until then the extra pods
// are the ones serving, and removing them would take a Ready pod for one that is not,
// however long the replacement takes. A pod older than the surge that is not Ready (a
// sick one) is the Deployment's own trouble and holds nothing.
func replacing(o Observed, w *Workload, f losses) bool {
	pods := o.Pods[WorkloadKey(w.Kind, w.Name)]
	if int32(len(pods)) < w.Replicas {
		return true
	}
	return slices.ContainsFunc(pods, func(p Pod) bool {
		return !p.Ready && !p.Created.Before(w.Surge.Since) && !BeingDrained(o.Nodes[p.Node]) && !f.lost[p.Node]
	})
}

// startSurge adds one pod beside a Deployment when the node of one of its pods is being
// drained; the verdict's message says so.
func startSurge(o Observed, w *Workload) (verdict, bool) {
	node := drainedNode(o, w)
	if node == "" {
		return verdict{}, false
	}
	v := verdict{surges: []Surge{surgeOf(w, 1, record(w))}, requeueAfter: surgePoll}
	v.status.Message = msgSurgeStarted(node, w.Replicas)
	return v, true
}

// surgeOf sets w's surge set to extra pods, keeping record; with no pods and no record
// to keep, it removes the set.
func surgeOf(w *Workload, extra int32, record string) Surge {
	return Surge{Name: SurgeSetName(w.Name), Deployment: w.Name, DeploymentUID: w.UID, Replicas: extra, HandOff: record,
		Delete: extra == 0 && record == ""}
}

// record is the hand-off record w's surge set keeps, if any.
func record(w *Workload) string {
	if w.Surge == nil {
		return ""
	}
	return w.Surge.HandOff
}

// keepsRecord reports whether an empty surge set must stay for its hand-off record: the
// record holds back the next hand-off of its node while w's pod is on it.
func keepsRecord(o Observed, w *Workload, rec string) bool {
	h, ok := parseHandOff(rec)
	return ok && slices.ContainsFunc(o.Pods[WorkloadKey(w.Kind, w.Name)], func(p Pod) bool { return p.Node == h.node })
}

// surgeSingle keeps minAvailable 1 on a single-replica Deployment and surges it when its
// node is drained.
func surgeSingle(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus) verdict {
	st.Budget = BudgetName(w.Kind, w.Name)
	start, started := startSurge(o, w)
	if !started {
		st.State, st.Message = holdfastv1alpha1.WorkloadBudgeted, msgSurgeReady
		return verdict{status: st, budget: singleReplicaBudget(o, w, nil)}
	}
	st.State, st.Message = holdfastv1alpha1.WorkloadSurging, start.status.Message
	start.status, start.budget = st, singleReplicaBudget(o, w, nil)
	return start
}

// mayBlockDrains reports whether p would surge w, a Deployment of several replicas,
// when its budget blocks a drain.
func mayBlockDrains(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) bool {
	return p.Spec.Surge == holdfastv1alpha1.SurgeWhenBlocked && w.Kind == holdfastv1alpha1.KindDeployment && w.Replicas > 1
}

// blocksDrain reports whether v's budget, as the disruption controller last counted it,
// allows no disruption for a reason a surge can fix: not a closed window (v would be
// held), not pacing or a pod starting (both pass by themselves), but pods that stay
// unavailable. Whether a drain waits on it is startSurge's question.
func blocksDrain(o Observed, w *Workload, h health, v verdict) bool {
	if !mayBlockDrains(o.Policy, w) || v.budget == nil || len(h.young) > 0 || h.starting > 0 {
		return false
	}
	cur := existingBudget(o.Budgets, v.budget.Name)
	return availability.AllowsNone(cur) && cur.Labels[holdfastv1alpha1.PolicyLabel] == o.Policy.Name &&
		equality.Semantic.DeepEqual(cur.Spec, v.budget.Spec)
}

// surgeBudget holds a surged Deployment at the floor of its own size, so that the
// extra pods pay for the eviction: minAvailable 1 for a single replica, the policy's
// floor at the Deployment's size otherwise. The policy's maxUnavailable as is would
// count the extra pods' controller too and never let the eviction through.
func surgeBudget(o Observed, w *Workload) *policyv1.PodDisruptionBudget {
	if w.Replicas <= 1 {
		return singleReplicaBudget(o, w, nil)
	}
	floor := availability.Floor(policyv1.PodDisruptionBudgetSpec{MaxUnavailable: o.Policy.Spec.MaxUnavailable, MinAvailable: o.Policy.Spec.MinAvailable}, w.Replicas)
	return budgetFor(o.Policy, w, policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(floor))}, nil)
}

// drainedNode returns the node being drained that one of w's pods is on, or "".
func drainedNode(o Observed, w *Workload) string {
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if BeingDrained(o.Nodes[pod.Node]) {
			return pod.Node
		}
	}
	return ""
}

// SurgeReplicaSet is the surge set s sets beside Deployment d, under policy p: s's
// extra pods of d's current template, which carries SurgeOfLabel so that only the set
// selects them, and the set's own labels, which d's selector does not match, so that d
// never adopts it. p is its controller: the garbage collector removes the set with p.
func SurgeReplicaSet(p *holdfastv1alpha1.DisruptionPolicy, d *appsv1.Deployment, s Surge) *appsv1.ReplicaSet {
	uid := string(d.UID)
	template := *d.Spec.Template.DeepCopy()
	template.Labels = maps.Clone(template.Labels)
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[holdfastv1alpha1.SurgeOfLabel] = uid
	annotations := map[string]string{holdfastv1alpha1.SurgeForAnnotation: d.Name}
	if s.HandOff != "" {
		annotations[holdfastv1alpha1.HandOffAnnotation] = s.HandOff
	}
	return &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      s.Name,
			Namespace: d.Namespace,
			Labels: map[string]string{holdfastv1alpha1.SurgeOfLabel: uid, holdfastv1alpha1.PolicyLabel: p.Name,
				managedByLabel: managedByValue},
			Annotations: annotations,
			// Not blocking the policy's deletion: that would need the right to set
			// finalizers on policies, and nothing waits for the set to go.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: holdfastv1alpha1.GroupVersion.String(), Kind: "DisruptionPolicy",
				Name: p.Name, UID: p.UID, Controller: ptr.To(true)}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        ptr.To(s.Replicas),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{holdfastv1alpha1.SurgeOfLabel: uid}},
			Template:        template,
		},
	}
}
