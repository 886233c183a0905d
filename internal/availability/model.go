// Package availability turns a Snapshot into facts about how disruptions affect each
// workload: the budgets that cover its pods and what they allow (computed as the disruption
// controller computes them), where its pods run, and what losing a node or a zone does to
// it. It is pure: no API calls, no clock (the time is passed in), no logging.
package availability

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Model is built once from a Snapshot and answers every question the audit and the drain
// planner ask. It points into the Snapshot and must not outlive changes to it.
type Model struct {
	Source snapshot.Source
	Now    time.Time

	// Workloads are sorted by kind, namespace and name; Budgets by namespace and name.
	Workloads []*Workload
	Budgets   []*Budget
	// Members holds every pod, and from manifests every workload's template standing for
	// its replicas, in snapshot order.
	Members []Member
	// Nodes are sorted by name.
	Nodes []*Node
	// DisruptionPolicies are the snapshot's, whose response to a node's loss the audit
	// predicts.
	DisruptionPolicies []holdfastv1alpha1.DisruptionPolicy

	nodes     map[string]*Node
	zones     []string
	workloads map[WorkloadRef]*Workload
	pods      map[podKey]*Member
}

// WorkloadRef names a workload.
type WorkloadRef struct {
	Kind      string
	Namespace string
	Name      string
}

// String renders the reference as Kind/namespace/name.
func (r WorkloadRef) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

type podKey struct{ namespace, name string }

// Node is a node and the pods placed on it.
type Node struct {
	Name string
	Zone string
	Node *corev1.Node
	// Members are the pods bound to the node, in snapshot order.
	Members []*Member
}

// Member is one pod, or in a manifest snapshot one workload's pod template standing for all
// its replicas (Count of them). Budgets and placement are computed over members so that
// live clusters and manifests share one code path.
type Member struct {
	Namespace string
	// Name is the pod's name, or the workload's name for a template.
	Name   string
	Labels labels.Set
	// Pod is nil for a template.
	Pod *corev1.Pod
	// Workload is the controller the disruption controller would find for the pod, or nil
	// for a pod with no controller or one holdfast does not read (see UnknownOwner).
	Workload *Workload
	// UnknownOwner is set when the pod has a controller holdfast cannot resolve, and says
	// what the disruption controller would answer when asked for its scale.
	UnknownOwner string
	// Count is 1 for a pod and the replicas for a template.
	Count int32
	// Ready is true for a pod that is ready and not being deleted, and for a template.
	Ready bool
	// Terminating is true for a pod being deleted.
	Terminating bool
	// NodeName is where the pod runs; empty for pending pods and templates.
	NodeName string
	// Budgets are the PodDisruptionBudgets whose selector matches the pod; more than one
	// makes the Eviction API refuse every eviction of the pod.
	Budgets []*Budget
}

// Workload is a Deployment, StatefulSet, DaemonSet or a ReplicaSet without a Deployment.
type Workload struct {
	WorkloadRef
	Object   metav1.Object
	Template *corev1.PodTemplateSpec
	// LabelSelector is the workload's spec.selector; Selector the parsed form, nil when
	// missing or invalid.
	LabelSelector *metav1.LabelSelector
	Selector      labels.Selector

	// Desired is the replicas asked for: spec.replicas, or for a DaemonSet the nodes it
	// should run on.
	Desired int32
	// Ready counts ready pods; from manifests it is assumed equal to Desired.
	Ready int32
	// Scale is what the disruption controller reads as the workload's scale, and
	// ScaleError why it cannot read one (a DaemonSet has no scale subresource).
	Scale      int32
	ScaleError string

	// Projected is true when the workload's pods come from its template (manifests).
	Projected bool
	Members   []*Member
	Budgets   []*Budget
	HPA       *autoscalingv2.HorizontalPodAutoscaler
	// Companion is true for a DaemonSet that a holdfast NodeCompanion follows.
	Companion bool

	Placement Placement
	Facts     TemplateFacts
}

// Placement says where a workload's scheduled, non-terminating pods run.
type Placement struct {
	Scheduled int32
	PerNode   map[string]int32
	PerZone   map[string]int32
	// BusiestNode holds the most pods (ties broken by name); losing it loses OnBusiestNode.
	BusiestNode   string
	OnBusiestNode int32
	BusiestZone   string
	InBusiestZone int32
}

// NodeLoss returns how many of the workload's pods the loss of the node takes down.
func (p Placement) NodeLoss(node string) int32 { return p.PerNode[node] }

// ZoneLoss returns how many of the workload's pods the loss of the zone takes down.
func (p Placement) ZoneLoss(zone string) int32 { return p.PerZone[zone] }

// Workload returns the workload of that kind, namespace and name.
func (m *Model) Workload(ref WorkloadRef) (*Workload, bool) {
	w, ok := m.workloads[ref]
	return w, ok
}

// Pod returns the member for a pod, for the planner to go from a pod to its budgets and
// workload.
func (m *Model) Pod(namespace, name string) (*Member, bool) {
	p, ok := m.pods[podKey{namespace, name}]
	return p, ok
}

// DaemonSetExists reports whether the DaemonSet is in the model; a DaemonSets lookup for
// DrainFilter.Classify.
func (m *Model) DaemonSetExists(namespace, name string) bool {
	_, ok := m.workloads[WorkloadRef{Kind: snapshot.KindDaemonSet, Namespace: namespace, Name: name}]
	return ok
}

// Node returns the node of that name.
func (m *Model) Node(name string) (*Node, bool) {
	n, ok := m.nodes[name]
	return n, ok
}

// Zones returns the zones the nodes are in, sorted, without the empty zone.
func (m *Model) Zones() []string { return m.zones }

// Build models the snapshot at time now (used for budgets' recently evicted pods).
func Build(s *snapshot.Snapshot, now time.Time) *Model {
	m := &Model{
		Source:             s.Source,
		Now:                now,
		DisruptionPolicies: s.DisruptionPolicies,
		nodes:              make(map[string]*Node, len(s.Nodes)),
		workloads:          map[WorkloadRef]*Workload{},
		pods:               make(map[podKey]*Member, len(s.Pods)),
	}
	m.addNodes(s)
	m.addWorkloads(s)
	m.addMembers(s)
	m.addBudgets(s)
	m.addHPAs(s)
	m.addCompanions(s)
	for _, w := range m.Workloads {
		w.Placement = m.placement(w)
	}
	return m
}

func (m *Model) addNodes(s *snapshot.Snapshot) {
	m.Nodes = make([]*Node, len(s.Nodes))
	for i := range s.Nodes {
		n := &s.Nodes[i]
		m.Nodes[i] = &Node{Name: n.Name, Zone: zoneOf(n.Labels), Node: n}
		m.nodes[n.Name] = m.Nodes[i]
	}
	slices.SortFunc(m.Nodes, func(a, b *Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, n := range m.Nodes {
		if n.Zone != "" {
			m.zones = append(m.zones, n.Zone)
		}
	}
	slices.Sort(m.zones)
	m.zones = slices.Compact(m.zones)
}

func zoneOf(l map[string]string) string {
	if z, ok := l[corev1.LabelTopologyZone]; ok {
		return z
	}
	return l[corev1.LabelFailureDomainBetaZone]
}

func (m *Model) add(w *Workload, obj metav1.Object, template *corev1.PodTemplateSpec, sel *metav1.LabelSelector) {
	w.Object, w.Template = obj, template
	w.Namespace, w.Name = obj.GetNamespace(), obj.GetName()
	w.LabelSelector = sel
	if sel != nil {
		// An invalid selector is the API server's to reject; here it only means the
		// workload's own selector is unknown.
		w.Selector, _ = Selector(sel)
	}
	w.Facts = templateFacts(w.Kind, obj, template)
	m.Workloads = append(m.Workloads, w)
	m.workloads[w.WorkloadRef] = w
}

func replicas(r *int32) int32 {
	// The API server defaults replicas to 1; manifests often leave them out.
	if r == nil {
		return 1
	}
	return *r
}

func (m *Model) addWorkloads(s *snapshot.Snapshot) {
	deployments := map[podKey]*appsv1.Deployment{}
	for i := range s.Deployments {
		d := &s.Deployments[i]
		deployments[podKey{d.Namespace, d.Name}] = d
		w := &Workload{WorkloadRef: WorkloadRef{Kind: snapshot.KindDeployment}}
		w.Desired = replicas(d.Spec.Replicas)
		w.Scale = w.Desired
		m.add(w, d, &d.Spec.Template, d.Spec.Selector)
		w.Facts.Strategy = deploymentStrategy(d, w.Desired)
	}
	for i := range s.ReplicaSets {
		rs := &s.ReplicaSets[i]
		// The disruption controller counts a Deployment's ReplicaSets as the Deployment.
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == snapshot.KindDeployment {
			if d, ok := deployments[podKey{rs.Namespace, ref.Name}]; ok && sameUID(d.UID, ref.UID) {
				continue
			}
		}
		w := &Workload{WorkloadRef: WorkloadRef{Kind: snapshot.KindReplicaSet}}
		w.Desired = replicas(rs.Spec.Replicas)
		w.Scale = w.Desired
		m.add(w, rs, &rs.Spec.Template, rs.Spec.Selector)
	}
	for i := range s.StatefulSets {
		ss := &s.StatefulSets[i]
		w := &Workload{WorkloadRef: WorkloadRef{Kind: snapshot.KindStatefulSet}}
		w.Desired = replicas(ss.Spec.Replicas)
		w.Scale = w.Desired
		m.add(w, ss, &ss.Spec.Template, ss.Spec.Selector)
	}
	for i := range s.DaemonSets {
		ds := &s.DaemonSets[i]
		w := &Workload{WorkloadRef: WorkloadRef{Kind: snapshot.KindDaemonSet}}
		w.ScaleError = "daemonsets.apps does not implement the scale subresource"
		m.add(w, ds, &ds.Spec.Template, ds.Spec.Selector)
		if s.Source == snapshot.SourceLive {
			w.Desired = ds.Status.DesiredNumberScheduled
		} else {
			// Without nodes the count is unknown; the template still stands for the pods.
			w.Desired = int32(max(0, m.DaemonSetNodes(&ds.Spec.Template)))
		}
		w.Facts.Strategy = daemonSetStrategy(ds, w.Desired)
	}
	slices.SortFunc(m.Workloads, func(a, b *Workload) int { return compareRefs(a.WorkloadRef, b.WorkloadRef) })
}

func compareRefs(a, b WorkloadRef) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// sameUID compares UIDs when both are known; manifests have none.
func sameUID[T ~string](a, b T) bool { return a == "" || b == "" || a == b }

// controllerOf finds the workload the disruption controller would find for a pod: a
// ReplicaSet's Deployment, else the ReplicaSet, a StatefulSet, a DaemonSet.
func (m *Model) controllerOf(pod *corev1.Pod, replicaSets map[podKey]*appsv1.ReplicaSet) (*Workload, string) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil, ""
	}
	lookup := func(kind, name string, uid string) *Workload {
		w, ok := m.workloads[WorkloadRef{Kind: kind, Namespace: pod.Namespace, Name: name}]
		if !ok || !sameUID(string(w.Object.GetUID()), uid) {
			return nil
		}
		return w
	}
	switch ref.Kind {
	case snapshot.KindReplicaSet:
		rs, ok := replicaSets[podKey{pod.Namespace, ref.Name}]
		if !ok || !sameUID(rs.UID, ref.UID) {
			return nil, notFound(pod)
		}
		if d := metav1.GetControllerOf(rs); d != nil && d.Kind == snapshot.KindDeployment {
			if w := lookup(snapshot.KindDeployment, d.Name, string(d.UID)); w != nil {
				return w, ""
			}
		}
		if w := lookup(snapshot.KindReplicaSet, ref.Name, string(ref.UID)); w != nil {
			return w, ""
		}
	case snapshot.KindStatefulSet, snapshot.KindDaemonSet:
		if w := lookup(ref.Kind, ref.Name, string(ref.UID)); w != nil {
			return w, ""
		}
	case "Job":
		return nil, "jobs.batch does not implement the scale subresource"
	default:
		return nil, fmt.Sprintf("holdfast cannot read the scale of %s %q", ref.Kind, ref.Name)
	}
	return nil, notFound(pod)
}

func notFound(pod *corev1.Pod) string {
	return fmt.Sprintf("found no controllers for pod %q", pod.Name)
}

func (m *Model) addMembers(s *snapshot.Snapshot) {
	replicaSets := make(map[podKey]*appsv1.ReplicaSet, len(s.ReplicaSets))
	for i := range s.ReplicaSets {
		rs := &s.ReplicaSets[i]
		replicaSets[podKey{rs.Namespace, rs.Name}] = rs
	}
	m.Members = make([]Member, 0, len(s.Pods)+len(m.Workloads))
	for i := range s.Pods {
		pod := &s.Pods[i]
		w, unknown := m.controllerOf(pod, replicaSets)
		m.Members = append(m.Members, Member{
			Namespace:    pod.Namespace,
			Name:         pod.Name,
			Labels:       pod.Labels,
			Pod:          pod,
			Workload:     w,
			UnknownOwner: unknown,
			Count:        1,
			Ready:        pod.DeletionTimestamp == nil && PodReady(pod),
			Terminating:  pod.DeletionTimestamp != nil,
			NodeName:     pod.Spec.NodeName,
		})
	}
	// From manifests, a workload with no pod in the snapshot stands for its replicas
	// through its template.
	if s.Source != snapshot.SourceLive {
		hasPods := map[*Workload]bool{}
		for _, p := range m.Members {
			hasPods[p.Workload] = true
		}
		for _, w := range m.Workloads {
			if !hasPods[w] {
				w.Projected = true
				m.Members = append(m.Members, Member{
					Namespace: w.Namespace, Name: w.Name, Labels: w.Template.Labels,
					Workload: w, Count: w.Desired, Ready: true,
				})
			}
		}
	}
	for i := range m.Members {
		p := &m.Members[i]
		if p.Pod != nil {
			m.pods[podKey{p.Namespace, p.Name}] = p
		}
		if p.Workload != nil {
			p.Workload.Members = append(p.Workload.Members, p)
			if p.Ready {
				p.Workload.Ready += p.Count
			}
		}
		if n, ok := m.nodes[p.NodeName]; ok {
			n.Members = append(n.Members, p)
		}
	}
}

// PodReady reports whether the pod's Ready condition is True: what the disruption
// controller counts as healthy, and every part of holdfast with it.
func PodReady(pod *corev1.Pod) bool {
	ready, _ := Readiness(pod)
	return ready
}

// Readiness returns whether the pod is Ready and since when: the Ready condition's last
// transition, or the pod's creation before it has one.
func Readiness(pod *corev1.Pod) (bool, time.Time) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, pod.CreationTimestamp.Time
}

func (m *Model) addBudgets(s *snapshot.Snapshot) {
	idx := newLabelIndex(m.Members)
	m.Budgets = make([]*Budget, len(s.PodDisruptionBudgets))
	for i := range s.PodDisruptionBudgets {
		pdb := &s.PodDisruptionBudgets[i]
		b := &Budget{Namespace: pdb.Namespace, Name: pdb.Name, PDB: pdb}
		m.Budgets[i] = b
		b.Selector, b.SelectorErr = BudgetSelector(pdb)
		if b.SelectorErr != nil {
			b.Selector = nil
			b.compute(m.Now)
			continue
		}
		ref := snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: pdb.Namespace, Name: pdb.Name}
		// policy/v1beta1 read an empty selector as "no pod"; policy/v1 as "every pod".
		if s.LegacySelectorPDBs[ref] && b.Selector.Empty() {
			b.Selector = labels.Nothing()
		}
		for _, i := range idx.matching(pdb.Namespace, b.Selector, m.Members) {
			p := &m.Members[i]
			b.Members = append(b.Members, p)
			p.Budgets = append(p.Budgets, b)
			if p.Workload != nil && !slices.Contains(b.Workloads, p.Workload) {
				b.Workloads = append(b.Workloads, p.Workload)
			}
			b.Projected = b.Projected || p.Pod == nil
		}
		b.compute(m.Now)
	}
	slices.SortFunc(m.Budgets, func(a, b *Budget) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, b := range m.Budgets {
		for _, w := range b.Workloads {
			w.Budgets = append(w.Budgets, b)
		}
	}
}

func (m *Model) addHPAs(s *snapshot.Snapshot) {
	for i := range s.HorizontalPodAutoscalers {
		h := &s.HorizontalPodAutoscalers[i]
		ref := WorkloadRef{Kind: h.Spec.ScaleTargetRef.Kind, Namespace: h.Namespace, Name: h.Spec.ScaleTargetRef.Name}
		if w, ok := m.workloads[ref]; ok {
			w.HPA = h
		}
	}
}

func (m *Model) addCompanions(s *snapshot.Snapshot) {
	for _, nc := range s.NodeCompanions {
		if nc.Spec.DaemonSet == nil {
			continue
		}
		ns := cmp.Or(nc.Spec.DaemonSet.Namespace, nc.Namespace)
		if w, ok := m.workloads[WorkloadRef{Kind: snapshot.KindDaemonSet, Namespace: ns, Name: nc.Spec.DaemonSet.Name}]; ok {
			w.Companion = true
		}
	}
}

func (m *Model) placement(w *Workload) Placement {
	p := Placement{PerNode: map[string]int32{}, PerZone: map[string]int32{}}
	for _, member := range w.Members {
		if member.NodeName == "" || member.Terminating {
			continue
		}
		p.Scheduled += member.Count
		p.PerNode[member.NodeName] += member.Count
		if n, ok := m.nodes[member.NodeName]; ok && n.Zone != "" {
			p.PerZone[n.Zone] += member.Count
		}
	}
	p.BusiestNode, p.OnBusiestNode = busiest(p.PerNode)
	p.BusiestZone, p.InBusiestZone = busiest(p.PerZone)
	return p
}

func busiest(counts map[string]int32) (string, int32) {
	var name string
	var most int32
	for k, v := range counts {
		if v > most || (v == most && k < name) {
			name, most = k, v
		}
	}
	return name, most
}
