package plan

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// cluster is the simulation's own state: where every pod is and what every node has left.
// It copies what it needs out of the model, so the Snapshot is never written.
type cluster struct {
	m     *availability.Model
	nodes []*node
	index map[string]int
	pods  []*pod
	// budgets index the model's budgets; lost counts, per budget, ready pods the
	// simulation took away for good (not re-placed). Indexes from len(m.Budgets) on are
	// the implicit budgets of workloads without one (see implicit).
	budgets map[*availability.Budget]int
	lost    []int32
	// ready counts each workload's ready, placed pods before any drain; replacements are
	// Ready before the next wave, so it holds between waves.
	ready []int32
	// workloads index the model's workloads for the per-node counts below.
	workloads map[*availability.Workload]int32
	// onNode counts each workload's placed pods per node, for spreading replacements;
	// where lists the nodes of each workload's placed pods, for keeping them together.
	onNode   map[[2]int32]int32
	where    [][]int32
	profiles map[*availability.Workload]*profile
	groups   map[string]*group
	domains  map[string]*domains
	// classes are the colours of the planned order, for the placer to put pods where
	// they take no room from a later wave.
	classes []*class
	// zoned are the zone rules of zone-aware policies' budgets, by budget index.
	zoned map[int]zoneRule
	// surged says, by budget index, that the budget's policy surges its single replica
	// before a drain's eviction (surges): read off the budgets once, not per pod.
	surged []bool
}

// resources are what a pod requests or a node offers. scalar holds every other resource
// the scheduler counts (extended resources such as nvidia.com/gpu, hugepages): nil for
// most pods and nodes, so that the common case allocates nothing.
type resources struct {
	cpu, memory, pods int64
	scalar            map[corev1.ResourceName]int64
}

// add adds o times sign to r in place.
func (r *resources) add(o resources, sign int64) {
	r.cpu += sign * o.cpu
	r.memory += sign * o.memory
	r.pods += sign * o.pods
	for name, q := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[name] += sign * q
	}
}

// newResources reads cpu, memory, pods and the scalar resources out of a list. Ephemeral
// storage is left out (see the package comment); a zero quantity asks for nothing.
func newResources(l corev1.ResourceList, pods int64) resources {
	r := resources{cpu: l.Cpu().MilliValue(), memory: l.Memory().Value(), pods: pods}
	for name, q := range l {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
			continue
		}
		if q.IsZero() {
			continue
		}
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[name] = q.Value()
	}
	return r
}

type node struct {
	idx  int
	name string
	obj  *corev1.Node
	// unlimited is set for a node whose status lists no allocatable resource.
	unlimited bool
	alloc     resources
	used      resources
	// unschedulable is true for a node cordoned in the snapshot, being drained, or
	// drained and kept cordoned.
	unschedulable bool
	// queued is true for a target node not drained yet: replacements go there last,
	// since they would have to move again.
	queued bool
	// rank is the node's place in the planned order, class its colour: replacements go
	// to the nodes drained last.
	rank  int
	class int
	pods  []*pod
	// demands caches demandsOf; stale is set when a pod comes or goes.
	demands []demand
	stale   bool
}

type pod struct {
	namespace, name string
	member          *availability.Member
	workload        *availability.Workload
	wl              int32 // index in cluster.workloads, -1 without a workload
	budget          int   // index of its only budget in cluster.budgets, else -1
	prof            *profile
	req             resources
	node            int // -1 while pending
	ready           bool
	// skip marks pods a drain leaves where they are: DaemonSet and mirror pods.
	skip bool
	// bare marks a pod with no controller: nothing recreates it.
	bare   bool
	groups []*group
}

func newCluster(m *availability.Model) *cluster {
	c := &cluster{
		m:         m,
		budgets:   make(map[*availability.Budget]int, len(m.Budgets)),
		lost:      make([]int32, len(m.Budgets)+len(m.Workloads)),
		workloads: make(map[*availability.Workload]int32, len(m.Workloads)),
		onNode:    map[[2]int32]int32{},
		where:     make([][]int32, len(m.Workloads)),
		profiles:  map[*availability.Workload]*profile{},
		groups:    map[string]*group{},
		domains:   map[string]*domains{},
	}
	c.surged = make([]bool, len(m.Budgets))
	for i, b := range m.Budgets {
		c.budgets[b] = i
		c.surged[i] = b.Policy() != "" && b.AtFullHealth <= 0 && availability.OpeningOf(b.PDB).Surges()
	}
	for i, w := range m.Workloads {
		c.workloads[w] = int32(i)
	}
	c.nodes = make([]*node, len(m.Nodes))
	for i, n := range m.Nodes {
		c.nodes[i] = newNode(i, n.Node)
	}
	c.index = make(map[string]int, len(c.nodes))
	for i, n := range c.nodes {
		c.index[n.name] = i
	}
	byNamespace := map[string][]*pod{}
	var pending []*pod
	for i := range m.Members {
		mb := &m.Members[i]
		if mb.Terminating || (mb.Pod != nil && availability.Finished(mb.Pod)) {
			continue
		}
		count := mb.Count
		if mb.Pod == nil && mb.Workload.Kind == snapshot.KindDaemonSet {
			// placeProjected copies one template pod onto every node it fits.
			count = 1
		}
		for j := range count {
			p := c.newPod(mb, j)
			c.pods = append(c.pods, p)
			byNamespace[p.namespace] = append(byNamespace[p.namespace], p)
			if n, ok := c.index[mb.NodeName]; ok {
				p.node = n
			} else if mb.Pod == nil {
				// A live pod that is pending stays so: its budget already counts it.
				pending = append(pending, p)
			}
		}
	}
	for _, g := range c.groups {
		for _, p := range byNamespace[g.namespace] {
			if g.sel.Matches(p.labels()) {
				p.groups = append(p.groups, g)
			}
		}
	}
	for _, p := range c.pods {
		if n := p.node; n >= 0 {
			p.node = -1
			c.bind(p, n)
		}
	}
	c.placeProjected(pending)
	c.ready = make([]int32, len(m.Workloads))
	for _, p := range c.pods {
		if p.wl >= 0 && p.ready && p.node >= 0 && !p.skip {
			c.ready[p.wl]++
		}
	}
	return c
}

func newNode(i int, n *corev1.Node) *node {
	a := n.Status.Allocatable
	return &node{
		idx: i, name: n.Name, obj: n,
		unlimited:     len(a) == 0,
		alloc:         newResources(a, a.Pods().Value()),
		unschedulable: n.Spec.Unschedulable,
	}
}

// newPod makes the j-th pod of a member: the pod itself, or one replica of a template.
func (c *cluster) newPod(mb *availability.Member, j int32) *pod {
	p := &pod{namespace: mb.Namespace, name: mb.Name, member: mb, workload: mb.Workload, wl: -1, node: -1, ready: mb.Ready}
	var spec *corev1.PodSpec
	if mb.Pod != nil {
		spec = &mb.Pod.Spec
		p.skip = availability.SkippedByDrain(mb.Pod)
		p.bare = metav1.GetControllerOfNoCopy(mb.Pod) == nil
	} else {
		p.name = fmt.Sprintf("%s-%d", mb.Name, j)
		p.skip = mb.Workload.Kind == snapshot.KindDaemonSet
	}
	if w := mb.Workload; w != nil {
		p.wl = c.workloads[w]
		// A replacement is made from the controller's template as it is now, so that is
		// what has to fit; the old pods' specs may predate a rollout.
		spec = &w.Template.Spec
	}
	p.budget = -1
	if len(mb.Budgets) == 1 {
		p.budget = c.budgets[mb.Budgets[0]]
	}
	p.prof = c.profile(mb.Workload, mb.Namespace, spec, mb.Labels)
	p.req = p.prof.req
	return p
}

func (p *pod) labels() labels.Set { return p.member.Labels }

// object names the pod in reasons: the pod, or for a replica that manifests only
// describe, its workload.
func (p *pod) object() snapshot.ObjectRef {
	if p.member.Pod == nil {
		return snapshot.ObjectRef{Kind: p.workload.Kind, Namespace: p.workload.Namespace, Name: p.workload.Name}
	}
	return snapshot.ObjectRef{Kind: snapshot.KindPod, Namespace: p.namespace, Name: p.name}
}

// asPod is the pod a drain finds: the pod itself, or for a replica that manifests only
// describe, one made from its workload's template and controlled by the workload.
func (p *pod) asPod() *corev1.Pod {
	if p.member.Pod != nil {
		return p.member.Pod
	}
	w := p.workload
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, Labels: w.Template.Labels, Annotations: w.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{Kind: w.Kind, Name: w.Name, UID: w.Object.GetUID(), Controller: ptr.To(true)}}},
		Spec: w.Template.Spec,
	}
}

// requests is what the scheduler counts for a pod of this spec. A container's limit
// stands for a request it leaves out, as the API server defaults it: manifests often give
// extended resources (nvidia.com/gpu) as limits only.
func requests(spec *corev1.PodSpec) resources {
	pod := &corev1.Pod{Spec: *spec}
	pod.Spec.InitContainers = withDefaultRequests(spec.InitContainers)
	pod.Spec.Containers = withDefaultRequests(spec.Containers)
	return newResources(resource.PodRequests(pod, resource.PodResourcesOptions{}), 1)
}

// withDefaultRequests returns the containers, copied when some has a limit and no
// request for it, with the request set to the limit.
func withDefaultRequests(containers []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for i, c := range containers {
		var req corev1.ResourceList
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; ok {
				continue
			}
			if req == nil {
				req = maps.Clone(c.Resources.Requests)
				if req == nil {
					req = corev1.ResourceList{}
				}
			}
			req[name] = q
		}
		if req == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(containers)
		}
		out[i].Resources.Requests = req
	}
	if out == nil {
		return containers
	}
	return out
}

// allowed is what budget b allows at once now: what the disruption controller would
// say (for an implicit budget, all ready pods but one), less the ready pods the plan lost
// for good.
func (c *cluster) allowed(b int) int32 {
	if wl := b - len(c.m.Budgets); wl >= 0 {
		return c.ready[wl] - 1 - c.lost[b]
	}
	if r, ok := c.zoned[b]; ok {
		// A wave takes from one zone only (fitsBudgets): at most the largest zone's limit.
		var most int32
		for zone := range r.limits {
			most = max(most, c.zoneAllowed(b, zone))
		}
		return most
	}
	return c.m.Budgets[b].Status.DisruptionsAllowed - c.lost[b]
}

// budgetOf returns the budget a drain of the pod counts against: its only
// PodDisruptionBudget or, for a workload with several ready pods and no budget at all, an
// implicit one that keeps one ready. That stops a plan from emptying a workload nobody
// protected (an upgrade that drains every node at once); holdfast drain's pacing keeps
// the same promise. It returns -1 for pods no budget applies to.
func (c *cluster) budgetOf(p *pod) int {
	if p.budget >= 0 || len(p.member.Budgets) > 0 || p.wl < 0 || c.ready[p.wl] < 2 {
		return p.budget
	}
	return len(c.m.Budgets) + int(p.wl)
}

// budgetRef names budget b: a PodDisruptionBudget, or the workload an implicit budget
// protects.
func (c *cluster) budgetRef(b int) snapshot.ObjectRef {
	if wl := b - len(c.m.Budgets); wl >= 0 {
		w := c.m.Workloads[wl]
		return snapshot.ObjectRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
	}
	return snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: c.m.Budgets[b].Namespace, Name: c.m.Budgets[b].Name}
}

// bind puts the pod on node n and counts it everywhere.
func (c *cluster) bind(p *pod, n int) {
	nd := c.nodes[n]
	p.node = n
	nd.pods = append(nd.pods, p)
	nd.used.add(p.req, 1)
	nd.stale = true
	c.count(p, n, 1)
}

// unbind takes the pod off its node.
func (c *cluster) unbind(p *pod) {
	nd := c.nodes[p.node]
	for i, q := range nd.pods {
		if q == p {
			nd.pods = append(nd.pods[:i], nd.pods[i+1:]...)
			break
		}
	}
	nd.used.add(p.req, -1)
	nd.stale = true
	c.count(p, p.node, -1)
	p.node = -1
}

func (c *cluster) count(p *pod, n int, delta int32) {
	if p.wl >= 0 {
		c.onNode[[2]int32{p.wl, int32(n)}] += delta
		if delta > 0 {
			c.where[p.wl] = append(c.where[p.wl], int32(n))
		} else if i := slices.Index(c.where[p.wl], int32(n)); i >= 0 {
			c.where[p.wl] = slices.Delete(c.where[p.wl], i, i+1)
		}
	}
	for _, g := range p.groups {
		for key, counts := range g.byKey {
			if d := c.domains[key].of[n]; d >= 0 {
				counts[d] += delta
				g.totals[key] += delta
			}
		}
	}
}

// placeProjected places the replicas that manifests only describe as the default
// scheduler would spread them: DaemonSet pods on every node they fit, others on their
// spreadingNode. Those that fit nowhere stay pending and count as lost to
// their budget.
func (c *cluster) placeProjected(pending []*pod) {
	daemons := map[*availability.Workload]bool{}
	for _, p := range pending {
		if !p.skip || p.member.Pod != nil || daemons[p.workload] {
			continue
		}
		// One template member stands for the DaemonSet; put one pod on each node it fits,
		// cordoned or not, as the DaemonSet controller does.
		daemons[p.workload] = true
		for _, n := range c.nodes {
			if c.fixed(p, n) == accepted {
				q := *p
				q.groups = p.groups
				c.pods = append(c.pods, &q)
				c.bind(&q, n.idx)
			}
		}
	}
	for _, p := range pending {
		if p.skip && p.member.Pod == nil {
			continue
		}
		best := c.spreadingNode(p)
		if best < 0 {
			p.ready = false
			if b := p.budget; b >= 0 && p.member.Pod == nil {
				c.lost[b]++
			}
			continue
		}
		c.bind(p, best)
	}
}

// spreadingNode returns the node the default scheduler's spreading would pick for the
// pod among those that fit it: where its workload has the fewest pods in the zone, then
// on the node, then the emptiest node; -1 when none fits.
func (c *cluster) spreadingNode(p *pod) int {
	best := -1
	var bestScore [3]int64
	mins := c.spreadMins(p)
	for _, n := range c.nodes {
		if ok, _ := c.feasible(p, n, mins); !ok {
			continue
		}
		score := [3]int64{c.zoneCount(p, n), int64(c.onNode[[2]int32{p.wl, int32(n.idx)}]), int64(len(n.pods))}
		if best < 0 || less(score, bestScore) {
			best, bestScore = n.idx, score
		}
	}
	return best
}

func less(a, b [3]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// zoneCount counts the pod's workload's pods in the node's zone.
func (c *cluster) zoneCount(p *pod, n *node) int64 {
	if p.wl < 0 {
		return 0
	}
	zone := c.m.Nodes[n.idx].Zone
	var sum int64
	for _, o := range c.nodes {
		if c.m.Nodes[o.idx].Zone == zone {
			sum += int64(c.onNode[[2]int32{p.wl, int32(o.idx)}])
		}
	}
	return sum
}

// domains maps each node to its domain of one topology key, -1 for a node without the
// label.
type domains struct {
	of []int
	n  int
}

func (c *cluster) domainsOf(key string) *domains {
	if d, ok := c.domains[key]; ok {
		return d
	}
	d := &domains{of: make([]int, len(c.m.Nodes))}
	ids := map[string]int{}
	for i, n := range c.m.Nodes {
		v, ok := n.Node.Labels[key]
		if !ok && key == corev1.LabelHostname {
			// The kubelet always sets the hostname label; a nodes file may leave it out.
			v, ok = n.Name, true
		}
		if !ok {
			d.of[i] = -1
			continue
		}
		id, seen := ids[v]
		if !seen {
			id = len(ids)
			ids[v] = id
		}
		d.of[i] = id
	}
	d.n = len(ids)
	c.domains[key] = d
	return d
}

// group is the pods one label selector matches in one namespace, counted per domain of
// each topology key a term uses it with.
type group struct {
	namespace string
	sel       labels.Selector
	byKey     map[string][]int32
	// totals sums byKey's counts per key.
	totals map[string]int32
}

func (c *cluster) group(namespace string, ls *metav1.LabelSelector, key string) *group {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		// The API server rejects such a term; here it selects nothing.
		sel = labels.Nothing()
	}
	id := namespace + "\x00" + sel.String()
	g, ok := c.groups[id]
	if !ok {
		g = &group{namespace: namespace, sel: sel, byKey: map[string][]int32{}, totals: map[string]int32{}}
		c.groups[id] = g
	}
	if _, ok := g.byKey[key]; !ok {
		g.byKey[key] = make([]int32, c.domainsOf(key).n)
	}
	return g
}

// profile is what a pod's spec asks of a node, compiled once per workload.
type profile struct {
	req      resources
	affinity nodeaffinity.RequiredNodeAffinity
	// anyNode is set when the pod has no node selector or required node affinity.
	anyNode     bool
	tolerations []corev1.Toleration
	anti        []antiTerm
	spread      []spreadTerm
	// companion is set for one-pod-per-node workloads, whose evicted pod has nowhere
	// else to go by design.
	companion bool
	// nodeOK caches affinity and taints per node: 0 unknown, 1 fits, 2 does not.
	nodeOK []int8
}

type antiTerm struct {
	g   *group
	key string
}

type spreadTerm struct {
	g       *group
	key     string
	maxSkew int32
	self    bool
	// honourTaints is nodeTaintsPolicy Honor: nodes whose taints the pod does not
	// tolerate are not domains. By default they are, cordoned nodes included, which is
	// why drained nodes can leave DoNotSchedule pods Pending.
	honourTaints bool
	// ignoreAffinity is nodeAffinityPolicy Ignore.
	ignoreAffinity bool
	// eligible caches the domains that count, once known.
	eligible []int
	known    bool
}

func (c *cluster) profile(w *availability.Workload, namespace string, spec *corev1.PodSpec, own labels.Set) *profile {
	if w != nil {
		if p, ok := c.profiles[w]; ok {
			return p
		}
	}
	p := &profile{
		req:         requests(spec),
		affinity:    nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: *spec}),
		tolerations: spec.Tolerations,
		nodeOK:      make([]int8, len(c.m.Nodes)),
		anyNode: len(spec.NodeSelector) == 0 &&
			(spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil),
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			p.anti = append(p.anti, antiTerm{g: c.group(namespace, t.LabelSelector, t.TopologyKey), key: t.TopologyKey})
		}
	}
	for _, t := range spec.TopologySpreadConstraints {
		if t.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		g := c.group(namespace, t.LabelSelector, t.TopologyKey)
		p.spread = append(p.spread, spreadTerm{
			g: g, key: t.TopologyKey, maxSkew: t.MaxSkew, self: g.sel.Matches(own),
			honourTaints:   t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
			ignoreAffinity: t.NodeAffinityPolicy != nil && *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore,
		})
	}
	if w != nil {
		p.companion = w.Facts.OnePerNode && int(w.Desired) >= c.m.EligibleNodes(w.Template)
		if ref := metav1.GetControllerOf(w.Object); ref != nil && ref.Kind == snapshot.KindNodeCompanion {
			p.companion = true
		}
		c.profiles[w] = p
	}
	return p
}
