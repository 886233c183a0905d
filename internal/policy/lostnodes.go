package policy

import (
	"maps"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// The response to a lost node. A node is lost when its kubelet has not renewed the
// node's Lease for the policy's lostAfter (30 s by default), or when the node-lifecycle
// controller has already tainted it unreachable or not-ready for eviction. The Lease is
// the earliest signal there is: the node-lifecycle controller reads the same Lease and
// only waits longer (50 s) before it acts. Acting on it early is safe because the
// response to a lost node adds and never deletes: a Deployment gets one more replica per
// pod on the node, and the pods there are left alone, so a node merely cut off by a
// network partition keeps serving and costs a replica for a while. Releasing a
// StatefulSet's pod is different, two pods of one identity must never run, so fencing
// asks for proof that the node is down.

const (
	// SuspectAfter is the shortest lostAfter a policy may set: from then on (or from
	// three eighths of a longer Lease's duration) the operator looks at a node's pods, so
	// that each policy can count the node lost at its own time.
	SuspectAfter = 15 * time.Second
	// defaultLostAfter is three missed renewals of a kubelet's Lease (every 10 s).
	defaultLostAfter = 30 * time.Second
)

// karpenterNodePoolLabel marks the nodes Karpenter made, each of which has a NodeClaim.
const karpenterNodePoolLabel = "karpenter.sh/nodepool"

// The node-lifecycle controller's taints for a node whose kubelet stopped reporting
// (unreachable) or reports it is not ready; NoExecute evicts the pods that do not
// tolerate them, after their tolerationSeconds.
var lostTaints = []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady}

// NodeHealth is what the response to lost nodes reads of the cluster's nodes.
type NodeHealth struct {
	// Zones counts every node per zone (topology.kubernetes.io/zone, "" without), for
	// the brake.
	Zones map[string]int
	// Suspects are the nodes that may be lost, by name: their Lease is SuspectAfter old,
	// or the node-lifecycle controller tainted them.
	Suspects map[string]Suspect
}

// Suspect is a node that may be lost.
type Suspect struct {
	Zone string
	// Renewed is the last renewal of the node's Lease; zero when it has none.
	Renewed time.Time
	// LeaseDuration is the Lease's leaseDurationSeconds: a kubelet renews it every
	// quarter of that.
	LeaseDuration time.Duration
	// Tainted says the node-lifecycle controller tainted it unreachable or not-ready,
	// NoExecute.
	Tainted bool
	// Down says the node carries NodeDownAnnotation: proof for fencing.
	Down bool
}

// SuspectOf reads a node and its Lease (nil without one), and reports whether the node
// is a suspect at now.
func SuspectOf(n *corev1.Node, lease *coordinationv1.Lease, now time.Time) (Suspect, bool) {
	s := Suspect{Zone: n.Labels[corev1.LabelTopologyZone]}
	if lease != nil && lease.Spec.RenewTime != nil {
		s.Renewed = lease.Spec.RenewTime.Time
		s.LeaseDuration = time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	}
	s.Tainted = slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute && slices.Contains(lostTaints, t.Key)
	})
	s.Down = NodeDown(n, s.Renewed) != ""
	return s, s.Tainted || !s.Renewed.IsZero() && !now.Before(s.Renewed.Add(max(SuspectAfter, s.LeaseDuration*3/8)))
}

// lostAt is when the node counts as lost with a Lease unrenewed for after, but never
// before three renewals are missed (Leases longer than a kubelet's 40 s are renewed
// less often); zero without a Lease.
func (s Suspect) lostAt(after time.Duration) time.Time {
	if s.Renewed.IsZero() {
		return time.Time{}
	}
	return s.Renewed.Add(max(after, s.LeaseDuration*3/4))
}

// Quarantined reports whether n carries holdfast's NoSchedule taint (LostTaintKey).
func Quarantined(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.LostTaintKey })
}

// lost are the suspects lost at now by after.
func (h NodeHealth) lost(after time.Duration, now time.Time) map[string]bool {
	var out map[string]bool
	for name, s := range h.Suspects {
		if at := s.lostAt(after); s.Tainted || !at.IsZero() && !now.Before(at) {
			if out == nil {
				out = map[string]bool{}
			}
			out[name] = true
		}
	}
	return out
}

// losses are what the response to lost nodes knows of one policy's namespace, worked
// out once per decision.
type losses struct {
	// lost are the lost nodes, by the policy's lostAfter.
	lost map[string]bool
	// brake says why holdfast holds back ("" when it does not).
	brake string
	// next is how long until a suspect node counts as lost; 0 for none.
	next time.Duration
}

// lostAfter is the policy's lostAfter, defaulted.
func lostAfter(p *holdfastv1alpha1.DisruptionPolicy) time.Duration {
	if f := p.Spec.NodeFailure; f != nil && f.LostAfter != nil {
		return max(f.LostAfter.Duration, SuspectAfter)
	}
	return defaultLostAfter
}

// response is what holdfast does for a workload's pods on a lost node, by its policy
// and its kind: the one table the operator (respond) and its prediction (RecoveryOf)
// read.
type response int

const (
	// respondNone: no policy manages the workload.
	respondNone response = iota
	// respondBraked: too many nodes are lost at once (brake); nothing is added.
	respondBraked
	// respondFence: a StatefulSet under fencing: Verified; its pods are released once
	// their node is proven down.
	respondFence
	// respondNotFenced: a StatefulSet under fencing: Never, or without consent
	// (Consent); it waits for the node.
	respondNotFenced
	// respondNotSurged: a kind holdfast does not surge (a DaemonSet, a scale target).
	respondNotSurged
	// respondSurgeNever: a Deployment under nodeFailure.surge: Never.
	respondSurgeNever
	// respondSurge: a Deployment, surged by one extra pod per lost pod (surgeSize).
	respondSurge
)

// responseTo is the response of policy p (nil for none) to a lost node's pods of a
// workload of kind; braked says the brake holds, fence that p may fence (Consent).
func responseTo(p *holdfastv1alpha1.DisruptionPolicy, kind string, braked, fence bool) response {
	switch {
	case p == nil:
		return respondNone
	case braked:
		return respondBraked
	case kind == holdfastv1alpha1.KindStatefulSet && fencing(p) && fence:
		return respondFence
	case kind == holdfastv1alpha1.KindStatefulSet:
		return respondNotFenced
	case kind != holdfastv1alpha1.KindDeployment:
		return respondNotSurged
	case !surgesForFailure(p):
		return respondSurgeNever
	}
	return respondSurge
}

// surgeSize is how many extra pods a surge runs: one for each pod on a lost node, and
// one more while it stands in for a pod of a drain or a hand-off.
func surgeSize(lost int32, forDrain bool) int32 {
	if forDrain {
		return lost + 1
	}
	return lost
}

// surgesForFailure reports whether p surges Deployments for the pods of lost nodes.
func surgesForFailure(p *holdfastv1alpha1.DisruptionPolicy) bool {
	f := p.Spec.NodeFailure
	return f == nil || f.Surge != holdfastv1alpha1.FailureSurgeNever
}

// assessLosses finds the nodes o's policy counts as lost and whether the brake holds.
func assessLosses(o Observed) losses {
	after := lostAfter(o.Policy)
	f := losses{lost: o.Health.lost(after, o.Now)}
	for name, s := range o.Health.Suspects {
		if at := s.lostAt(after); !f.lost[name] && !at.IsZero() {
			f.next = sooner(f.next, at.Sub(o.Now))
		}
	}
	f.brake = brake(o.Health, o.Failure)
	return f
}

// brake says why the suspect nodes call for holding back, or "" (see Brake). Suspects
// count, not only the nodes lost: nodes that die together are seen lost up to a renewal
// apart (10 s), and the first must not be surged for before the others are seen, which
// they are as suspects by then. Only the suspects whose Leases stopped within the brake
// window of the latest count: a zone lost an hour ago and a node lost now are two
// failures.
func brake(h NodeHealth, s FailureSettings) string {
	var latest time.Time
	for _, sus := range h.Suspects {
		if sus.Renewed.After(latest) {
			latest = sus.Renewed
		}
	}
	zones := make(map[string]string, len(h.Suspects))
	for name, sus := range h.Suspects {
		if sus.Renewed.IsZero() || latest.Sub(sus.Renewed) <= s.brakeWindow() {
			zones[name] = sus.Zone
		}
	}
	return Brake(h.Zones, zones, s)
}

// Brake says why losing the nodes of lost (node name -> zone) at once calls for holding
// back, or "": more than s's brake share of the nodes of nodesPerZone, in more than one
// zone or in a cluster without zones. That points at the control plane, the network or
// holdfast's own view (a stale cache makes every Lease look old), not at dead machines.
// A whole zone lost alone does not hold it: holdfast acts within what fits on the
// survivors (LostRoom). A single node never trips it.
func Brake(nodesPerZone map[string]int, lost map[string]string, s FailureSettings) string {
	if len(lost) < 2 {
		return ""
	}
	total := 0
	for _, n := range nodesPerZone {
		total += n
	}
	zones := map[string]bool{}
	for _, zone := range lost {
		zones[zone] = true
	}
	if zoned := !(len(nodesPerZone) == 1 && nodesPerZone[""] > 0); zoned && len(zones) < 2 && !zones[""] {
		return ""
	}
	if float64(len(lost)) > s.brakeShare()*float64(total) {
		return msgBrakeShare(len(lost), total, len(zones))
	}
	return ""
}

// lostPods counts w's pods on lost nodes, live or stuck in their deletion, and names
// the nodes.
func (f losses) lostPods(o Observed, w *Workload) (int32, []string) {
	var n int32
	var nodes []string
	for _, pod := range onLost(o, w) {
		if f.lost[pod.Node] {
			n++
			if !slices.Contains(nodes, pod.Node) {
				nodes = append(nodes, pod.Node)
			}
		}
	}
	slices.Sort(nodes)
	return n, nodes
}

// onLost are the pods of w that may be on lost nodes: its own, live or stuck in their
// deletion, and its surge set's. An extra pod that landed on a node lost since (a zone's
// nodes are seen lost a renewal apart, and the second may take the first one's extra
// pods) stands in for nothing any more, and is made again like the Deployment's own:
// the ReplicaSet counts it until Kubernetes deletes it, so the set grows by one.
func onLost(o Observed, w *Workload) []Pod {
	key := WorkloadKey(w.Kind, w.Name)
	pods := slices.Concat(o.Pods[key], o.Stuck[key])
	if w.Surge != nil {
		pods = append(pods, w.Surge.Pods...)
	}
	return pods
}

// LostRoomWanted are the nodes whose pods' room on the survivors Decide reads
// (SetLostRoom, with plan.LostRoom): those the policy counts as lost and the other
// suspects, when there are more than one and the brake does not hold. Machines that die
// together are seen lost up to a renewal apart: when the first is lost the others are
// suspects, and their pods will want the same room. One lost node and no other suspect
// is surged for without the question: the survivors almost always hold its pods, and a
// single crash must cost seconds.
func (o *Observed) LostRoomWanted() []string {
	if !surgesForFailure(o.Policy) {
		return nil
	}
	f := assessLosses(*o)
	if len(f.lost) == 0 || f.brake != "" {
		return nil
	}
	nodes := withSuspects(*o, slices.Collect(maps.Keys(f.lost)))
	if len(nodes) < 2 {
		return nil
	}
	return nodes
}

// SetLostRoom records the planner's answer on the room of the lost nodes' pods
// (plan.LostRoom): by namespace/name, "" for a pod that fits on the survivors.
func (o *Observed) SetLostRoom(answer map[string]string) { o.LostRoom = answer }

// FullStrength reports whether the workload kind/name of o has as many Ready pods as it
// wants on nodes that are not suspects, its surge set's counted: whole again after a
// node failure, whatever is left on the lost node.
func FullStrength(o Observed, kind, name string) bool {
	i := slices.IndexFunc(o.Workloads, func(w Workload) bool { return w.Kind == kind && w.Name == name })
	if i < 0 {
		return false
	}
	w := &o.Workloads[i]
	pods := o.Pods[WorkloadKey(kind, name)]
	if w.Surge != nil {
		pods = slices.Concat(pods, w.Surge.Pods)
	}
	var ready int32
	for _, pod := range pods {
		if _, suspect := o.Health.Suspects[pod.Node]; pod.Ready && !suspect {
			ready++
		}
	}
	return ready >= w.Replicas
}

// fit splits w's pods on lost nodes into those that fit on the surviving nodes and
// those that fit nowhere, by the planner's answer (Observed.LostRoom); without one
// (a single node lost, no other suspect) every pod fits.
func (f losses) fit(o Observed, w *Workload) (fits, homeless int32) {
	for _, pod := range onLost(o, w) {
		if !f.lost[pod.Node] {
			continue
		}
		if why := o.LostRoom[o.Policy.Namespace+"/"+pod.Name]; why != "" {
			homeless++
		} else {
			fits++
		}
	}
	return fits, homeless
}

// respond turns the verdict the chain reached for w into the response to its pods on
// lost nodes, if it has any. A surge under way was sized by followSurge; otherwise a
// Deployment is surged now by one extra pod for each such pod, on top of a surge the chain
// starts for a drain or a hand-off, under the budget of its original size. Anything
// else, and everything under the brake, is reported.
func (f losses) respond(s *subject, v verdict) verdict {
	lost, nodes := f.lostPods(s.o, s.w)
	if lost == 0 || s.lost || v.status.State == holdfastv1alpha1.WorkloadConflict {
		return v
	}
	o, w := s.o, s.w
	v.status.State = holdfastv1alpha1.WorkloadRecovering
	if s.surge.active {
		// followSurge sized it, and the brake keeps it as it is.
		if f.brake != "" {
			v.status.Message = msgLostBraked(lost, nodes, f.brake)
		}
		return v
	}
	switch responseTo(o.Policy, w.Kind, f.brake != "", o.Consent.Fence) {
	case respondBraked:
		v.status.Message = msgLostBraked(lost, nodes, f.brake)
	case respondFence:
		v.status.Message = f.fencingMessage(o, lost, nodes)
	case respondNotFenced, respondNotSurged:
		v.status.Message = msgLostNotSurged(w.Kind, lost, nodes)
		if fencing(o.Policy) {
			v.status.Message = msgLostNotFenced(lost, nodes, o.Consent.Why)
		}
	case respondSurgeNever:
		v.status.Message = msgLostNoSurge(lost, nodes)
	case respondSurge:
		forDrain := false
		rec := record(w)
		for _, sc := range v.surges {
			if sc.Deployment == w.Name && !sc.Delete {
				forDrain, rec = sc.Replicas > 0, sc.HandOff
			}
		}
		fits, homeless := f.fit(o, w)
		up := surgeOf(w, surgeSize(fits, forDrain), rec)
		v.surges = append(slices.DeleteFunc(slices.Clone(v.surges), func(sc Surge) bool { return sc.Deployment == w.Name }), up)
		v.status.Message = msgSurgedForFailure(lost, nodes, w.Replicas, up.Replicas, homeless)
		v.status.Budget, v.budget = BudgetName(w.Kind, w.Name), surgeBudget(o, w)
		v.requeueAfter = sooner(v.requeueAfter, surgePoll)
	}
	return v
}

// lostNodesStatus is status.lostNodes: sorted, once each, at most maxListed.
func lostNodesStatus(nodes []string) []string {
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	if len(nodes) > maxListed {
		nodes = nodes[:maxListed]
	}
	return nodes
}

// nodesLostCondition says whether selected pods are on lost nodes, and whether the
// brake holds.
func nodesLostCondition(st holdfastv1alpha1.DisruptionPolicyStatus, brake string) metav1.Condition {
	c := metav1.Condition{Type: holdfastv1alpha1.ConditionNodesLost, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonNoNodeLost, Message: "no lost node runs a selected pod"}
	switch {
	case len(st.LostNodes) == 0:
	case brake != "":
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, holdfastv1alpha1.ReasonCorrelatedFailure, msgCorrelated(st.LostNodes, st.Recovering, brake)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, holdfastv1alpha1.ReasonNodeLost, msgNodesLost(st.LostNodes, st.Recovering)
	}
	return c
}

// withSuspects is lost with every other suspect of o, sorted: machines that die
// together are seen lost up to a renewal apart, so while lost nodes are met the
// suspects are kept from taking extra pods (the quarantine; the node watcher takes it
// off as soon as a node renews) and their pods are counted in the room question.
func withSuspects(o Observed, lost []string) []string {
	out := slices.Clone(lost)
	for name := range o.Health.Suspects {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// unquarantined quarantines the nodes without holdfast's taint among nodes, as o saw
// them.
func unquarantined(o Observed, nodes []string) []NodeTaint {
	var out []NodeTaint
	for _, name := range nodes {
		if n := o.Nodes[name]; n != nil && !Quarantined(n) {
			out = append(out, NodeTaint{Node: name, Key: holdfastv1alpha1.LostTaintKey})
		}
	}
	return out
}

// fencing reports whether p releases the StatefulSet pods of lost nodes.
func fencing(p *holdfastv1alpha1.DisruptionPolicy) bool {
	f := p.Spec.NodeFailure
	return f != nil && f.Fencing == holdfastv1alpha1.FencingVerified
}

// fences are the nodes among nodes, lost and running pods of w, to fence now: w is a
// StatefulSet under fencing: Verified, the brake does not hold, the node is not fenced
// yet and there is proof that it is down.
func (f losses) fences(o Observed, w *Workload, nodes []string) ([]NodeTaint, time.Duration) {
	if w.Kind != holdfastv1alpha1.KindStatefulSet || !fencing(o.Policy) || !o.Consent.Fence || f.brake != "" {
		return nil, 0
	}
	var out []NodeTaint
	var next time.Duration
	for _, name := range nodes {
		proof := f.proof(o, name)
		if proof != "" && !Fenced(o.Nodes[name]) {
			out = append(out, NodeTaint{Node: name, Key: holdfastv1alpha1.OutOfServiceTaintKey, Proof: proof, Bystanders: o.Bystanders[name]})
		}
		// fenceAfter is proof by the clock alone: nothing else wakes the policy then.
		if after := o.Policy.Spec.NodeFailure.FenceAfter; proof == "" && after != nil && o.Consent.FenceAfter {
			if s := o.Health.Suspects[name]; !s.Renewed.IsZero() {
				next = sooner(next, s.Renewed.Add(after.Duration).Sub(o.Now))
			}
		}
	}
	return out, next
}

// proof says why a lost node is known to be down, or "" when it is not known: the
// node-down annotation a person or an agent set for this failure (NodeDown), its
// Karpenter NodeClaim gone, or the policy's fenceAfter passed since its Lease was last
// renewed, where the operator lets fenceAfter count (Consent).
func (f losses) proof(o Observed, name string) string {
	n := o.Nodes[name]
	if n == nil {
		return ""
	}
	if proof := NodeDown(n, o.Health.Suspects[name].Renewed); proof != "" {
		return proof
	}
	// Only gone: Karpenter drains a NodeClaim being deleted before it ends the instance.
	if _, karpenter := n.Labels[karpenterNodePoolLabel]; karpenter && o.Claims != nil {
		if _, ok := o.Claims[name]; !ok {
			return "its Karpenter NodeClaim is gone"
		}
	}
	if after := o.Policy.Spec.NodeFailure.FenceAfter; after != nil && o.Consent.FenceAfter {
		if s := o.Health.Suspects[name]; !s.Renewed.IsZero() && !o.Now.Before(s.Renewed.Add(after.Duration)) {
			return "no Lease renewal since " + stamp(s.Renewed) + ", fenceAfter " + after.Duration.String() + " (time, not proof)"
		}
	}
	return ""
}

// NodeDown is the proof NodeDownAnnotation gives that n is down now, or "": "true", or
// a time later than renewed, the node's last Lease renewal. A time before it tells of
// an earlier failure, which the node came back from.
func NodeDown(n *corev1.Node, renewed time.Time) string {
	v := n.Annotations[holdfastv1alpha1.NodeDownAnnotation]
	if v == "true" {
		return "annotation " + holdfastv1alpha1.NodeDownAnnotation + "=true"
	}
	if at, err := time.Parse(time.RFC3339, v); err == nil && at.After(renewed) {
		return "annotation " + holdfastv1alpha1.NodeDownAnnotation + " at " + stamp(at) + ", after the last Lease renewal at " + stamp(renewed)
	}
	return ""
}

// fencingMessage says where the fencing of a StatefulSet's lost pods stands.
func (f losses) fencingMessage(o Observed, lost int32, nodes []string) string {
	var fenced, waiting, bystanders []string
	for _, name := range nodes {
		if Fenced(o.Nodes[name]) || f.proof(o, name) != "" {
			fenced = append(fenced, name)
			bystanders = append(bystanders, o.Bystanders[name]...)
		} else {
			waiting = append(waiting, name)
		}
	}
	afterTime := ""
	if after := o.Policy.Spec.NodeFailure.FenceAfter; after != nil && o.Consent.FenceAfter {
		afterTime = after.Duration.String()
	}
	return msgFencing(lost, fenced, waiting, bystanders, afterTime)
}

// Fenced reports whether n carries the out-of-service taint.
func Fenced(n *corev1.Node) bool {
	return n != nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.OutOfServiceTaintKey })
}

// compactFences keeps one fence per node, sorted.
func compactFences(fs []NodeTaint) []NodeTaint {
	slices.SortFunc(fs, func(a, b NodeTaint) int { return strings.Compare(a.Node, b.Node) })
	return slices.CompactFunc(fs, func(a, b NodeTaint) bool { return a.Node == b.Node })
}

// Kubernetes' own timing of a lost node, as kube-controller-manager and the API server
// ship it: the node-lifecycle controller marks a node unreachable once its kubelet has
// been silent for the grace period, the DefaultTolerationSeconds admission plugin gives
// every pod 300 s of toleration for that, and the pod garbage collector, which deletes
// the pods of an out-of-service node, runs every 20 s.
const (
	NodeMonitorGracePeriod = 50 * time.Second
	DefaultToleration      = 300 * time.Second
	podGCPeriod            = 20 * time.Second
)

// Recovery is how long a workload takes to be whole again once a node running some of
// its pods dies: Kubernetes alone, and with the policy that manages it.
type Recovery struct {
	// Alone is Kubernetes' own time; 0 with AloneNever when it never replaces the pods.
	Alone      time.Duration
	AloneNever bool
	// With is the time with holdfast; 0 with WithNever when the pods are not replaced.
	With      time.Duration
	WithNever bool
	// How says what holdfast does, or why it does nothing.
	How string
}

// Spread is what a loss shares with the rest of the cluster: whether it is wide enough
// for the brake, and how many of the workload's lost pods would fit on no surviving
// node (plan.LostRoom).
type Spread struct {
	Braked   bool
	Homeless int32
}

// RecoveryOf predicts a workload's recovery from the loss of nodes running some of its
// pods, which tolerate being unreachable for toleration (DefaultToleration
// unless a pod says otherwise; negative for ever) and take startup to become Ready. p
// is the policy that manages the workload, nil for none; consent what the operator
// allows it (ConsentOf).
func RecoveryOf(p *holdfastv1alpha1.DisruptionPolicy, kind string, toleration, startup time.Duration, spread Spread, consent Consent) Recovery {
	r := Recovery{Alone: NodeMonitorGracePeriod + toleration + startup}
	if kind == holdfastv1alpha1.KindStatefulSet || toleration < 0 {
		// Two pods of one identity must never run: Kubernetes waits for the node.
		r.Alone, r.AloneNever = 0, true
	}
	r.With, r.WithNever = r.Alone, r.AloneNever
	switch responseTo(p, kind, spread.Braked, consent.Fence) {
	case respondNone:
		r.How = "no DisruptionPolicy"
	case respondBraked:
		r.How = "the brake holds: too many nodes lost at once"
	case respondFence:
		r.How = "fenced on proof that the node is down, not before"
		if after := p.Spec.NodeFailure.FenceAfter; after != nil && consent.FenceAfter {
			// Kubernetes deletes the pods of an out-of-service node once the node is
			// marked not Ready, at its next garbage collection.
			r.With, r.WithNever = max(after.Duration, NodeMonitorGracePeriod)+podGCPeriod+startup, false
			r.How = "fenced on proof, or once the node is unreachable for fenceAfter " + after.Duration.String() + ": time, not proof"
		} else if consent.Why != "" {
			r.How += "; " + consent.Why
		}
	case respondNotFenced:
		r.How = "not fenced: nodeFailure.fencing is Never"
		if fencing(p) {
			r.How = "not fenced: " + consent.Why
		}
	case respondNotSurged:
		r.How = "holdfast surges only Deployments"
	case respondSurgeNever:
		r.How = "not surged: nodeFailure.surge is Never"
	case respondSurge:
		r.With, r.WithNever = lostAfter(p)+startup, false
		if !r.AloneNever {
			r.With = min(r.With, r.Alone)
		}
		r.How = "surged once the node's Lease is " + lostAfter(p).String() + " old"
		if spread.Homeless > 0 {
			// Those wait for Kubernetes' own replacements, and for a node autoscaler to
			// add room for them.
			r.With, r.WithNever = r.Alone, r.AloneNever
			r.How += ", as far as the surviving nodes have room: " + Plural(spread.Homeless, "lost pod") + " would fit on none and wait for Kubernetes and the node autoscalers"
		}
	}
	return r
}

// Managing is the policy among policies (those in effect) that manages obj, a
// Deployment, StatefulSet or DaemonSet; nil for none.
func Managing(policies []holdfastv1alpha1.DisruptionPolicy, obj metav1.Object) *holdfastv1alpha1.DisruptionPolicy {
	if obj == nil {
		return nil
	}
	w := WorkloadOf(obj)
	var inNamespace []holdfastv1alpha1.DisruptionPolicy
	for _, p := range policies {
		if p.Namespace == obj.GetNamespace() {
			inNamespace = append(inNamespace, p)
		}
	}
	return WinnerOf(inNamespace, &w)
}

// UnreachableToleration is how long the pods of a template tolerate an unreachable
// node before Kubernetes evicts them: their own toleration, or the DefaultToleration
// the API server gives them; negative for ever.
func UnreachableToleration(t *corev1.PodTemplateSpec) time.Duration {
	if t == nil {
		return DefaultToleration
	}
	for _, tol := range t.Spec.Tolerations {
		if tol.Key != corev1.TaintNodeUnreachable && (tol.Key != "" || tol.Operator != corev1.TolerationOpExists) ||
			tol.Effect != "" && tol.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if tol.TolerationSeconds == nil {
			return -1
		}
		return time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second
	}
	return DefaultToleration
}
