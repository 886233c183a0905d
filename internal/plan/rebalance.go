package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// RebalanceTarget is one workload that opted into rebalancing, with its settings and
// its last move (which the caller keeps, so that a restart forgets neither).
type RebalanceTarget struct {
	Workload availability.WorkloadRef
	// TopologyKeys are the node labels whose domains the replicas should spread over;
	// empty means the hostname.
	TopologyKeys []string
	// MaxSkew is the most pods one domain may hold above the emptiest eligible one;
	// below 1 means 1.
	MaxSkew int32
	// Cooldown is the least time between two moves of the workload.
	Cooldown time.Duration
	// LastPod and LastMove are the previous move's pod and time, if any.
	LastPod  string
	LastMove time.Time
}

// RebalanceOutcome says what Rebalance decided for a workload.
type RebalanceOutcome string

// The outcomes of Rebalance. Only RebalanceEvict evicts; RebalanceNoBetterPlace and
// RebalanceBudgetExhausted are refusals a human may want to act on.
const (
	RebalanceEvict           RebalanceOutcome = "Evict"
	RebalanceBalanced        RebalanceOutcome = "Balanced"
	RebalanceSettling        RebalanceOutcome = "Settling"
	RebalanceCooldown        RebalanceOutcome = "Cooldown"
	RebalanceSingleReplica   RebalanceOutcome = "SingleReplica"
	RebalanceUnsupported     RebalanceOutcome = "Unsupported"
	RebalanceNoBetterPlace   RebalanceOutcome = "NoBetterPlace"
	RebalanceBudgetExhausted RebalanceOutcome = "BudgetExhausted"
)

// Rebalancing is the decision for one workload: a move, or why there is none.
type Rebalancing struct {
	Outcome RebalanceOutcome
	// Message says why, in terms of the workload's pods and domains.
	Message string
	// Move is set for RebalanceEvict.
	Move *RebalanceMove
	// Wait is how long the cooldown still runs, for RebalanceCooldown.
	Wait time.Duration
}

// RebalanceMove is one pod to evict and where the simulation puts its replacement.
type RebalanceMove struct {
	Namespace string
	Pod       string
	// From is the pod's node, To the node its replacement is expected on.
	From, To string
	// Key is the skewed topology key; FromDomain and ToDomain its values on From and To,
	// with the workload's pods there before the move.
	Key                  string
	FromDomain, ToDomain string
	FromCount, ToCount   int32
}

// rebalancedKinds are the workloads whose pods can go elsewhere when evicted: a
// DaemonSet's pod belongs to its node, and a bare ReplicaSet is left to its owner.
var rebalancedKinds = []string{snapshot.KindDeployment, snapshot.KindStatefulSet}

// Rebalance decides, on snap at time now, whether one pod of the target workload should
// be evicted so that its replicas spread better over the target's topology domains, and
// which. It moves at most one pod: the next decision is made once the replacement is
// Ready, on a new snapshot.
//
// The skew of a key is the most pods in one domain less the fewest in any domain the
// workload's pods can run in (a schedulable node matching the pod's node selector,
// required node affinity and tolerations): a workload pinned to two nodes is balanced
// with its pods on those two. A pod is moved only when every replica is Ready and placed,
// the cooldown since the last move is over, the skew of a key exceeds MaxSkew, the
// simulation (the same filters as drain plans, with the scheduler's spreading) puts the
// replacement in a domain that will then hold fewer pods than the source, no other key's
// skew grows beyond MaxSkew, and the pod's budget allows a disruption. The pod moved last
// is never picked again next; so a pod whose only place is where it is, a constraint of
// the workload's own, or more replicas than domains never lead to an eviction loop.
func Rebalance(snap *snapshot.Snapshot, now time.Time, t RebalanceTarget) Rebalancing {
	m := availability.Build(snap, now)
	w, ok := m.Workload(t.Workload)
	if !ok || !slices.Contains(rebalancedKinds, w.Kind) {
		return Rebalancing{Outcome: RebalanceUnsupported, Message: fmt.Sprintf("only Deployments and StatefulSets are rebalanced, not %s", t.Workload)}
	}
	if w.Desired < 2 {
		return Rebalancing{Outcome: RebalanceSingleReplica, Message: fmt.Sprintf("%d replica: moving it would take the workload down", w.Desired)}
	}
	c := newCluster(m)
	for _, n := range c.nodes {
		// A node whose maintenance is planned is about to be drained: a pod moved there
		// would move again. It is never a target, as a cordoned node is not.
		n.unschedulable = n.unschedulable || availability.MaintenancePlanned(n.obj)
	}
	wl := c.workloads[w]
	var pods []*pod
	for _, p := range c.pods {
		if p.wl == wl {
			pods = append(pods, p)
		}
	}
	if settling := settling(pods, w.Desired); settling != "" {
		return Rebalancing{Outcome: RebalanceSettling, Message: settling}
	}
	keys := t.TopologyKeys
	if len(keys) == 0 {
		keys = []string{corev1.LabelHostname}
	}
	maxSkew := max(t.MaxSkew, 1)
	spreads := make([]*spreadOver, len(keys))
	skewed := false
	for i, key := range keys {
		spreads[i] = c.spreadOver(pods[0], key)
		spreads[i].count(pods)
		skewed = skewed || spreads[i].skew() > maxSkew
	}
	if !skewed {
		return Rebalancing{Outcome: RebalanceBalanced, Message: describeSpreads(spreads, maxSkew)}
	}
	if wait := t.LastMove.Add(t.Cooldown).Sub(now); !t.LastMove.IsZero() && wait > 0 {
		return Rebalancing{Outcome: RebalanceCooldown, Wait: wait,
			Message: fmt.Sprintf("%s; last move %s ago (pod %s), cooldown %s", describeSpreads(spreads, maxSkew), now.Sub(t.LastMove).Round(time.Second), t.LastPod, t.Cooldown)}
	}
	move, stuck := c.bestMove(pods, spreads, maxSkew, t.LastPod)
	if move == nil {
		return Rebalancing{Outcome: RebalanceNoBetterPlace, Message: fmt.Sprintf("%s, but %s", describeSpreads(spreads, maxSkew), stuck)}
	}
	if held := c.budgetHeld(move.pod); held != "" {
		return Rebalancing{Outcome: RebalanceBudgetExhausted, Message: fmt.Sprintf("%s; pod %s could move from %s to %s, but %s", describeSpreads(spreads, maxSkew), move.pod.name, c.nodes[move.pod.node].name, c.nodes[move.to].name, held)}
	}
	mv := move.render(c)
	return Rebalancing{Outcome: RebalanceEvict, Move: &mv,
		Message: fmt.Sprintf("%s: pod %s moves from %s=%s (%d pods) to %s=%s (%d pods), expected on node %s",
			describeSpreads(spreads, maxSkew), mv.Pod, mv.Key, mv.FromDomain, mv.FromCount, mv.Key, mv.ToDomain, mv.ToCount, mv.To)}
}

// settling says why the workload is not at rest, or "": a rollout, a surge, a pending or
// unready replica all mean pods are moving already, and counting them would be wrong.
func settling(pods []*pod, desired int32) string {
	var placed, ready int32
	for _, p := range pods {
		if p.node >= 0 {
			placed++
		}
		if p.ready && p.node >= 0 {
			ready++
		}
	}
	if int32(len(pods)) != desired || placed != desired || ready != desired {
		return fmt.Sprintf("waiting for its pods to settle: %d pods, %d placed, %d Ready, %d wanted", len(pods), placed, ready, desired)
	}
	return ""
}

// spreadOver counts a workload's pods per domain of one key, over the domains they can
// run in.
type spreadOver struct {
	key  string
	of   *domains
	name []string
	// eligible marks the domains with a schedulable node that fits the workload's fixed
	// filters; counts holds the workload's pods per domain.
	eligible []bool
	counts   []int32
}

func (c *cluster) spreadOver(p *pod, key string) *spreadOver {
	d := c.domainsOf(key)
	s := &spreadOver{key: key, of: d, name: make([]string, d.n), eligible: make([]bool, d.n), counts: make([]int32, d.n)}
	for _, n := range c.nodes {
		dom := d.of[n.idx]
		if dom < 0 {
			continue
		}
		if s.name[dom] == "" {
			s.name[dom] = cmp.Or(n.obj.Labels[key], n.name)
		}
		if !n.unschedulable && c.fixed(p, n) == accepted {
			s.eligible[dom] = true
		}
	}
	return s
}

func (s *spreadOver) count(pods []*pod) {
	for _, p := range pods {
		if dom := s.of.of[p.node]; dom >= 0 {
			s.counts[dom]++
		}
	}
}

// bounds returns the most and fewest pods in an eligible domain, and how many domains
// are eligible.
func (s *spreadOver) bounds() (most, fewest int32, domains int) {
	for dom, ok := range s.eligible {
		if !ok {
			continue
		}
		most = max(most, s.counts[dom])
		if domains == 0 || s.counts[dom] < fewest {
			fewest = s.counts[dom]
		}
		domains++
	}
	return most, fewest, domains
}

func (s *spreadOver) skew() int32 {
	most, fewest, _ := s.bounds()
	return most - fewest
}

// describeSpreads renders each key's skew: "kubernetes.io/hostname: 3 to 0 pods over 6
// domains (skew 3, max 1)".
func describeSpreads(spreads []*spreadOver, maxSkew int32) string {
	parts := make([]string, len(spreads))
	for i, s := range spreads {
		most, fewest, n := s.bounds()
		parts[i] = fmt.Sprintf("%s: %d to %d pods over %d eligible domains (skew %d, max %d)", s.key, most, fewest, n, most-fewest, maxSkew)
	}
	return strings.Join(parts, "; ")
}

type candidate struct {
	pod *pod
	to  int
	s   *spreadOver
}

func (m *candidate) render(c *cluster) RebalanceMove {
	from, to := m.s.of.of[m.pod.node], m.s.of.of[m.to]
	return RebalanceMove{
		Namespace: m.pod.namespace, Pod: m.pod.name,
		From: c.nodes[m.pod.node].name, To: c.nodes[m.to].name,
		Key: m.s.key, FromDomain: m.s.name[from], ToDomain: m.s.name[to],
		FromCount: m.s.counts[from], ToCount: m.s.counts[to],
	}
}

// bestMove tries the pods of the most crowded domains of each skewed key, one pod per
// node (the simulation answers the same for pods of one workload on one node), and
// returns the first whose replacement lands where the spread gets better; otherwise why
// none does.
func (c *cluster) bestMove(pods []*pod, spreads []*spreadOver, maxSkew int32, lastPod string) (*candidate, string) {
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *pod) int { return cmp.Compare(a.name, b.name) })
	var stuck []string
	for _, s := range spreads {
		if s.skew() <= maxSkew {
			continue
		}
		_, fewest, _ := s.bounds()
		// Only a domain at least two above the emptiest can give a pod away and stay
		// at or above where the pod lands.
		var sources []int
		for dom, n := range s.counts {
			if s.eligible[dom] && n >= fewest+2 {
				sources = append(sources, dom)
			}
		}
		slices.SortFunc(sources, func(a, b int) int {
			return cmp.Or(cmp.Compare(s.counts[b], s.counts[a]), cmp.Compare(s.name[a], s.name[b]))
		})
		for _, dom := range sources {
			tried := map[int]bool{}
			for _, p := range pods {
				if s.of.of[p.node] != dom || tried[p.node] {
					continue
				}
				if p.name == lastPod {
					stuck = append(stuck, fmt.Sprintf("pod %s moved last", p.name))
					continue
				}
				tried[p.node] = true
				to, why := c.simulateMove(p, s, spreads, maxSkew)
				if to >= 0 {
					return &candidate{pod: p, to: to, s: s}, ""
				}
				stuck = append(stuck, why)
			}
		}
	}
	if len(stuck) == 0 {
		stuck = append(stuck, "no domain holds two pods more than the emptiest")
	}
	return nil, strings.Join(stuck, "; ")
}

// simulateMove takes the pod off its node, asks where the scheduler's spreading puts
// its replacement, and puts it back. It returns the destination when the move lowers the
// crowding of s's key (the destination then holds no more than the source) without
// pushing another key's skew above both maxSkew and where it was; else -1 and why not.
func (c *cluster) simulateMove(p *pod, s *spreadOver, spreads []*spreadOver, maxSkew int32) (int, string) {
	from := p.node
	c.unbind(p)
	to := c.spreadingNode(p)
	c.bind(p, from)
	if to < 0 {
		return -1, fmt.Sprintf("pod %s's replacement fits nowhere: %s", p.name, c.refusals(p))
	}
	src, dst := s.of.of[from], s.of.of[to]
	if dst < 0 || dst == src || s.counts[dst]+2 > s.counts[src] {
		where := c.nodes[to].name
		if dst >= 0 {
			where = fmt.Sprintf("%s (%s=%s, %d pods)", where, s.key, s.name[dst], s.counts[dst])
		}
		if to == from {
			return -1, fmt.Sprintf("pod %s would land where it is, on %s", p.name, where)
		}
		return -1, fmt.Sprintf("pod %s would land on %s, no better", p.name, where)
	}
	for _, o := range spreads {
		if o == s {
			continue
		}
		before := o.skew()
		a, b := o.of.of[from], o.of.of[to]
		if a == b || a < 0 || b < 0 {
			continue
		}
		o.counts[a]--
		o.counts[b]++
		after := o.skew()
		o.counts[a]++
		o.counts[b]--
		if after > max(before, maxSkew) {
			return -1, fmt.Sprintf("moving pod %s to %s would skew %s to %d", p.name, c.nodes[to].name, o.key, after)
		}
	}
	return to, ""
}

// refusals says why no node takes the pod, with the pod off its node.
func (c *cluster) refusals(p *pod) string {
	from := p.node
	c.unbind(p)
	defer c.bind(p, from)
	mins := c.spreadMins(p)
	var why [refusals]int
	for _, n := range c.nodes {
		_, r := c.feasible(p, n, mins)
		why[r]++
	}
	return describe(len(c.nodes), why)
}

// budgetHeld says why the Eviction API would refuse the pod now, or "". Without a
// budget every replica is Ready (see settling), so one can go.
func (c *cluster) budgetHeld(p *pod) string {
	if e := c.m.Eviction(p.member); !e.Allowed {
		return "the Eviction API would refuse it: " + e.Message
	}
	return ""
}
