// Package plan decides, on a Snapshot and without touching a cluster, how nodes can be
// drained: in which waves, what blocks each node that cannot go, what capacity every
// workload keeps during each wave, and what the loss of one node or one zone would do.
//
// A small scheduling simulation says where evicted pods can go. It honours resource
// requests (cpu, memory, pods, extended resources such as nvidia.com/gpu and hugepages; a
// limit given without its request counts as the request) against allocatable minus the
// pods placed, NoSchedule and NoExecute taints, nodeSelector and required node affinity,
// required pod anti-affinity and DoNotSchedule topology spread constraints (any topology
// key: hostname and zone in practice), cordoned nodes and the nodes being drained. It does not model required pod
// affinity, anti-affinity terms of other workloads' pods against the pod being placed,
// namespace selectors in affinity terms, minDomains, matchLabelKeys, preemption or
// ephemeral storage. A node whose status lists no allocatable resource at all (a nodes file
// that only names nodes and labels) is taken to have room for anything.
//
// The package is pure: it reads the Snapshot and never changes it, the time is passed
// in, and nothing is logged.
package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Targets says which nodes to drain: the named ones, those Selector matches, or All.
// They add up; a name that is not in the snapshot is an error.
type Targets struct {
	Names    []string
	Selector labels.Selector
	All      bool
}

// Options tune a drain plan.
type Options struct {
	// MaxConcurrent caps the nodes of one wave; 0 means no cap.
	MaxConcurrent int
	// Uncordon says drained nodes come back, empty and schedulable, once their wave is
	// over, as in a rolling upgrade that uncordons or replaces each node. Without it the
	// drained nodes stay cordoned for the rest of the plan, as `holdfast drain` leaves
	// them, so every later wave has less room.
	Uncordon bool
	// DrainFilter is kubectl drain's rules and flags, as the drain applies them: pods with
	// no controller need Force (they are lost, not re-placed), pods with emptyDir volumes
	// DeleteEmptyDirData, DaemonSet pods IgnoreDaemonSets; a pod refused blocks its node,
	// and the pods PodSelector leaves out stay where they are, counted as on any node.
	availability.DrainFilter
}

// Plan is the answer to "how can these nodes be drained".
type Plan struct {
	// Waves are drained one after the other. The nodes of one wave can be drained at the
	// same time: no budget goes below its floor, counting the pods already unavailable
	// and those earlier waves could not re-place, no workload without a budget loses its
	// last ready replica, and every evicted pod fits somewhere.
	// Before the next wave starts, the evicted pods run Ready where the plan put them.
	Waves []Wave `json:"waves"`
	// Blocked lists the target nodes no wave drains, sorted by name, each with why.
	Blocked []Blocker `json:"blocked"`
	// LowerBound is the fewest waves any plan could have for the nodes this one drains.
	LowerBound LowerBound `json:"lowerBound"`
}

// Wave is a set of nodes drained together.
type Wave struct {
	// Nodes are sorted by name.
	Nodes []string `json:"nodes"`
	// Capacity lists the workloads that lose ready pods in this wave, the most hurt
	// first.
	Capacity []Capacity `json:"capacity"`
	// Moves says where each evicted pod's replacement goes, in eviction order.
	Moves []Move `json:"moves,omitempty"`
	// Allowances are what each budget the wave draws on lets it evict at once.
	Allowances []Allowance `json:"allowances,omitempty"`
	// Steps say what the drain does with each pod of the wave's nodes, node by node.
	Steps []Step `json:"steps,omitempty"`
}

// Allowance is what one budget lets a wave evict before replacements are Ready: the one
// count of a wave's budgets, which Capacity and the wave's Steps follow.
// Budget is a PodDisruptionBudget or, for a workload with several ready pods and none,
// the workload itself, of which a drain keeps one pod ready.
type Allowance struct {
	Budget snapshot.ObjectRef `json:"budget"`
	Allows int32              `json:"allows"`
}

// Move is one evicted pod and the node its replacement lands on. To is empty for a pod
// that is not replaced (a pod with no controller, evicted with Force). With Uncordon, a
// replacement that fits nowhere else waits for the wave's nodes to come back, and To may
// be the node it was evicted from.
type Move struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	From      string `json:"from"`
	To        string `json:"to,omitempty"`
}

// Capacity is one workload's ready replicas during a wave, against those it asks for.
// Ready is the lowest the wave takes it to: the ready pods before the wave, less those on
// the wave's nodes, except that a workload under one budget loses at most what the budget
// allows at once (holdfast drain and kubectl drain evict the rest only as replacements
// become Ready).
type Capacity struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Desired   int32  `json:"desired"`
	Ready     int32  `json:"ready"`
	// Evicted is how many of its pods the wave's nodes hold.
	Evicted int32 `json:"evicted"`
	// Surged is true when its DisruptionPolicy surges it: a replacement is Ready before
	// the eviction, so it keeps its Ready pods.
	Surged bool `json:"surged,omitempty"`
}

// Blocker is a node that cannot be drained, with every reason.
type Blocker struct {
	Node    string   `json:"node"`
	Reasons []Reason `json:"reasons"`
}

// ReasonType classifies why a node cannot be drained.
type ReasonType string

// The reasons a node cannot be drained.
const (
	// BudgetExhausted: a budget has no disruption to give now, but will once its
	// unavailable pods are healthy again.
	BudgetExhausted = ReasonType(availability.ReasonBudgetExhausted)
	// BudgetNeverAllows: a budget cannot allow a disruption even with every pod
	// healthy (minAvailable equal to the replicas, maxUnavailable 0).
	BudgetNeverAllows = ReasonType(availability.ReasonBudgetNeverAllows)
	// SingleReplicaBudget: a budget over a single replica that needs it available; the
	// drain waits forever.
	SingleReplicaBudget = ReasonType(availability.ReasonSingleReplicaBudget)
	// PolicyHeld: a budget that a DisruptionPolicy manages allows nothing now; the
	// policy makes room (it surges a replacement first, or lets the drain through after
	// escapeAfter), so the node drains once the operator has acted.
	PolicyHeld = ReasonType(availability.ReasonPolicyHeld)
	// OverlappingBudgets: the pod is covered by more than one budget, and the Eviction
	// API answers 500 to every eviction of it.
	OverlappingBudgets = ReasonType(availability.ReasonOverlappingBudgets)
	// NoController: nothing would recreate the pod; kubectl and holdfast drain refuse
	// it without --force.
	NoController = ReasonType(availability.RuleNoController)
	// EmptyDirData: the pod's emptyDir data would be lost; refused without
	// --delete-emptydir-data.
	EmptyDirData = ReasonType(availability.RuleEmptyDirData)
	// DaemonSetPod: a DaemonSet's pod, which kubectl and holdfast drain refuse to leave
	// without --ignore-daemonsets.
	DaemonSetPod = ReasonType(availability.RuleDaemonSetPod)
	// UnhealthyPod: the pod is not ready and its budget, with the default
	// unhealthyPodEvictionPolicy IfHealthyBudget, is not healthy enough to let it go.
	UnhealthyPod = ReasonType(availability.ReasonUnhealthyPod)
	// NoRoom: an evicted pod would fit on no other node.
	NoRoom ReasonType = "NoRoom"
	// BudgetUncomputable: the disruption controller cannot compute the budget
	// (maxUnavailable or a percentage over DaemonSet pods), so it allows nothing.
	BudgetUncomputable = ReasonType(availability.ReasonBudgetUncomputable)
	// BudgetStale: the budget's status was counted for an older spec.
	BudgetStale = ReasonType(availability.ReasonBudgetStale)
	// BudgetInvalid: the budget's status is one the Eviction API refuses to trust.
	BudgetInvalid = ReasonType(availability.ReasonBudgetInvalid)
	// CompanionPending: the pod is one per node by design (a NodeCompanion, or required
	// hostname anti-affinity with as many replicas as eligible nodes), so its
	// replacement would stay Pending while the node is drained.
	CompanionPending ReasonType = "CompanionPending"
)

// Reason is one object that stops a node's drain.
type Reason struct {
	Type      ReasonType `json:"type"`
	Kind      string     `json:"kind"`
	Namespace string     `json:"namespace,omitempty"`
	Name      string     `json:"name"`
	Message   string     `json:"message"`
	// Permanent is true when waiting cannot help: the budget, the workload or the
	// drain's flags must change.
	Permanent bool `json:"permanent"`
}

// LowerBound is the fewest waves the nodes a plan drains need, whatever the order, as the
// budgets as they are now impose it (a node the plan finds blocked is not counted): a
// budget that allows a disruptions and has ready pods on n of them needs at least
// ceil(n/a) waves, more when a node holds several of its pods (see BudgetBound);
// MaxConcurrent c needs ceil(nodes/c); nodes no two of which can share a wave need one
// each. Pods moved by earlier waves
// can make the best plan longer than the bound, never shorter.
type LowerBound struct {
	Waves int `json:"waves"`
	// Budgets are the budgets that impose Waves, at most ten, sorted by namespace and
	// name; BudgetsAtBound counts them all.
	Budgets        []BudgetBound `json:"budgets,omitempty"`
	BudgetsAtBound int           `json:"budgetsAtBound"`
	// Conflicting is set when a set of that many nodes, no two of which can share a wave
	// (each pair holds more pods of some budget than it allows at once), imposes Waves,
	// more than any budget alone.
	Conflicting int `json:"conflicting,omitempty"`
	// LargestWave is set when no wave can hold more than that many of the nodes (among
	// any more, two hold more pods of some budget than it allows at once), so that
	// ceil(nodes/LargestWave) imposes Waves, more than any budget or set of conflicting
	// nodes.
	LargestWave int `json:"largestWave,omitempty"`
}

// BudgetBound is the waves one budget imposes. Kind is PodDisruptionBudget, or the kind
// of a workload with no budget and several replicas, which the plan never empties: it
// counts as a budget allowing all its ready pods but one.
type BudgetBound struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Nodes is how many of the drained nodes hold its ready pods.
	Nodes int `json:"nodes"`
	// Allowed is the disruptions it allows at once.
	Allowed int32 `json:"allowed"`
	// Waves is one per node holding more than Allowed of its pods, plus
	// ceil(pods on the other nodes / Allowed), at least ceil(Nodes/Allowed).
	Waves int `json:"waves"`
}

// maxBoundBudgets caps LowerBound.Budgets: on a large cluster thousands of budgets can
// share the bound, and a few of them say enough.
const maxBoundBudgets = 10

// DrainWaves plans the drain of targets in snap at time now. It never changes snap.
func DrainWaves(snap snapshot.Predicted, now time.Time, targets Targets, opts Options) (*Plan, error) {
	m := availability.Build(snap.Snapshot, now)
	names, err := resolve(m, targets)
	if err != nil {
		return nil, err
	}
	c := newCluster(m)
	c.zoned = zoneRules(m)
	return c.drainWaves(names, opts), nil
}

// Unplaceable explains, for the drain of node name alone in snap at time now with the drain's
// rules f, each pod whose replacement would fit on no other node (NoRoom, or
// CompanionPending for a companion). Unlike a plan, it looks past whatever else keeps
// the node (a budget that allows nothing for now, a pod refused): a drain asks it before
// each eviction, and such a reason must not hide that another pod's replacement would
// stay Pending. It never changes snap.
func Unplaceable(snap *snapshot.Snapshot, now time.Time, name string, f availability.DrainFilter) ([]Reason, error) {
	m := availability.Build(snap, now)
	if _, err := resolve(m, Targets{Names: []string{name}}); err != nil {
		return nil, err
	}
	c := newCluster(m)
	target := []*node{c.nodes[c.index[name]]}
	target[0].queued = true
	c.filter(target, f)
	opts := Options{DrainFilter: f}
	c.order(target, c.boundStart(target), 1, opts)
	_, failed := c.evict(target, opts, nil)
	return c.roomReasons(failed, 0), nil
}

// resolve turns targets into node names in the model's order, without repeats.
func resolve(m *availability.Model, t Targets) ([]string, error) {
	want := map[string]bool{}
	for _, n := range t.Names {
		if _, ok := m.Node(n); !ok {
			return nil, fmt.Errorf("node %q is not in the snapshot", n)
		}
		want[n] = true
	}
	for _, n := range m.Nodes {
		if t.All || (t.Selector != nil && t.Selector.Matches(labels.Set(n.Node.Labels))) {
			want[n.Name] = true
		}
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no node to drain: name nodes, give a selector that matches some, or ask for all")
	}
	var out []string
	for _, n := range m.Nodes {
		if want[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// sortReasons orders a node's reasons: permanent first, then by type, object and message.
func sortReasons(rs []Reason) {
	slices.SortFunc(rs, func(a, b Reason) int {
		return cmp.Or(-cmp.Compare(boolInt(a.Permanent), boolInt(b.Permanent)), cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Message, b.Message))
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
