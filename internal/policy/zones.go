package policy

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// Zone-aware budgets (spec.zoneAware) have two shapes, and every transition between
// them is written so that no state in between allows more than the states at either
// end, and no pod is ever under two budgets (see docs/zone-aware-budgets.md):
//
//   - no zone disrupted: the workload's budget, at maxUnavailable 1, over the pods
//     without the holdfast.dev/zone label: all of them. One object covers every zone, so
//     two disruptors racing in two zones are serialised by the Eviction API's optimistic
//     update of that one budget's status: the second finds no disruption left and is
//     refused.
//   - zone Z disrupted: one budget per zone, selecting the pods by the holdfast.dev/zone
//     label holdfast puts on them: Z's at minAvailable (its size less the per-zone
//     limit), every other zone's at maxUnavailable 0; the workload's budget stays, at
//     maxUnavailable 0, over the pods not labelled yet. Z's budget is held at 0 too while
//     another zone has a pod not Ready: a failure there and a disruption in Z would be
//     two zones down.
//
// Both shapes hold while the workload is Recovering or Surging (zonable): a pod on a
// lost node counts as not Ready, and a surge set's pods, never labelled, stay under the
// workload's budget.
//
// The budgets' selectors never change: a pod moves from one budget to another when its
// label is set or removed, one write, so that it is never under two budgets (the
// Eviction API would fail its evictions with a 500, which kubectl drain does not retry)
// nor under none. Writes go in this order: labels removed (a pod back under the
// workload's budget, at 0 until the end); budgets that tighten (every create, and updates
// that allow less); budgets that loosen; labels set (a pod into its zone's budget, which
// exists by then); deletions, of zone budgets that select no pod any more.
//
// A budget opens (a zone chosen, or the workload's budget back at 1) only on a snapshot
// in which every other budget of the workload already allowed nothing (othersClosed):
// an eviction accepted under one of them after the snapshot was read would otherwise go
// unseen while a second zone opens. The pass that closes them holds the zone shut; the
// next, woken by those writes, reads budgets that refuse every eviction from the write
// on (a 429 until the disruption controller has counted them, then none allowed), and
// pods listed after them: every eviction those budgets let through is then seen, as the
// pod gone or not Ready, or, while its deletion has not been seen yet, in the budget's
// status.disruptedPods (evictedAt).

const (
	// defaultSettle is how long a zone's pods must all have been Ready before another
	// zone may be disrupted, when spec.zoneAware.settleTime is unset.
	defaultSettle = 30 * time.Second
	// idleMaxUnavailable is the budget of a zone-aware workload while no zone is
	// disrupted: a second disruption may not start before holdfast has chosen the zone.
	idleMaxUnavailable = 1
)

// ZoneAware reports whether p gives w zone-aware budgets: Deployments and StatefulSets,
// whose budgets' maxUnavailable the disruption controller counts against their scale.
func ZoneAware(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) bool {
	return p.Spec.ZoneAware != nil && (w.Kind == holdfastv1alpha1.KindDeployment || w.Kind == holdfastv1alpha1.KindStatefulSet)
}

// PodZone sets a pod's holdfast.dev/zone label, or removes it (Zone "").
type PodZone struct {
	Pod  string
	Zone string
}

// zoneCount is what one zone's pods of a workload say.
type zoneCount struct {
	pods int32
	// unavailable counts the pods not Ready, or on a lost node.
	unavailable int32
	// stale counts the pods on a lost node whose status still says Ready: the
	// disruption controller counts them healthy until Kubernetes marks them not Ready.
	stale int32
	// draining says a node of the zone running a pod is cordoned or being drained.
	draining bool
	// settlesAt is when the last pod to become Ready has been Ready for the settle time.
	settlesAt time.Time
}

// disturbed says the zone is being disrupted, or not settled since it was.
func (c zoneCount) disturbed(now time.Time) bool {
	return c.unavailable > 0 || c.draining || c.settlesAt.After(now)
}

// zoneView is what a zone-aware workload's pods and budgets say: the pods per zone, the
// zone being disrupted, and the labels its pods lack.
type zoneView struct {
	counts map[string]zoneCount
	// sizes are the zones' sizes recorded on the workload's budget (ZoneSizesAnnotation).
	sizes map[string]int32
	// missing counts the pods of the workload's size not running in a known zone:
	// evicted and not back, or not scheduled yet.
	missing int32
	// active is the zone being disrupted, "" when none is.
	active string
	// size is the active zone's size: the recorded one, or its pods when more.
	size int32
	// labels are the pods whose holdfast.dev/zone label is missing or wrong.
	labels []PodZone
	// labelled are the pods that carry a holdfast.dev/zone label.
	labelled []string
	// unzoned are the pods on nodes without the topology label: counted in no zone,
	// they stay under the workload's budget, and are not missing.
	unzoned []string
	// next is the soonest a zone settles.
	next time.Time
	// budgets are w's zone-aware budgets as the snapshot has them: its own, and its
	// zones' (zoneBudget).
	budgets []*policyv1.PodDisruptionBudget
}

// zones are the zones with pods of the workload, or recorded with some, sorted: a zone
// whose pods are all evicted keeps its budget, and its record of being disrupted.
func (v zoneView) zones() []string {
	all := slices.AppendSeq(slices.Collect(maps.Keys(v.counts)), maps.Keys(v.sizes))
	slices.Sort(all)
	return slices.Compact(all)
}

// viewZones reads w's pods (o.Pods) and the budgets it has, and chooses the zone being
// disrupted: the one already chosen while it is not whole again (a pod not Ready or
// Ready for less than the settle time, a node being drained, pods missing from its
// size or from the workload's), else a disturbed zone (one short of pods first: a pod
// not Ready, or fewer than its recorded size; then by name), else none. A pod on a lost
// node counts as not Ready, whatever its status still says: its kubelet no longer
// reports. A surge set's pods are not w's (o.Pods holds none): they are counted in no
// zone, and stay under the workload's budget, so that every zone is counted at the
// workload's own size.
func viewZones(o Observed, w *Workload, lost map[string]bool) zoneView {
	za := o.Policy.Spec.ZoneAware
	settle := defaultSettle
	if za.SettleTime != nil {
		settle = za.SettleTime.Duration
	}
	v := zoneView{counts: map[string]zoneCount{}, budgets: budgetsOf(o, w)}
	evicted := v.evictedAt()
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if pod.Zone != "" {
			v.labelled = append(v.labelled, pod.Name)
		}
		node := o.Nodes[pod.Node]
		zone := NodeZone(za, node)
		if zone == "" {
			if node != nil {
				v.unzoned = append(v.unzoned, pod.Name)
			}
			continue
		}
		if pod.Zone != zone {
			v.labels = append(v.labels, PodZone{Pod: pod.Name, Zone: zone})
		}
		c := v.counts[zone]
		c.pods++
		if pod.Ready && lost[pod.Node] {
			c.stale++
		}
		if !pod.Ready || lost[pod.Node] || pod.Created.Before(evicted[pod.Name]) {
			c.unavailable++
		} else if t := pod.Since.Add(settle); t.After(c.settlesAt) {
			c.settlesAt = t
		}
		c.draining = c.draining || BeingDrained(node)
		v.counts[zone] = c
	}
	for _, c := range v.counts {
		if c.settlesAt.After(o.Now) && (v.next.IsZero() || c.settlesAt.Before(v.next)) {
			v.next = c.settlesAt
		}
	}
	v.missing = w.Replicas - int32(len(v.unzoned))
	for _, c := range v.counts {
		v.missing -= c.pods
	}
	v.missing = max(0, v.missing)
	v.sizes = recordedSizes(o, w)
	active, size := recordedZone(o, w)
	c := v.counts[active]
	size = max(size, v.sizes[active])
	// A zone chosen that has lost nothing yet gives way to one that has: a pod evicted
	// under the budget of no zone disrupted, or failed, while the choice was made.
	shortElsewhere := slices.ContainsFunc(v.zones(), func(z string) bool { return z != active && v.short(z) })
	if active != "" && (c.unavailable > 0 || c.pods < size || !shortElsewhere && (c.disturbed(o.Now) || v.missing > 0)) {
		v.active, v.size = active, max(size, c.pods)
		return v
	}
	var best string
	for _, z := range v.zones() {
		if (v.short(z) || v.counts[z].disturbed(o.Now)) && (best == "" || v.short(z) && !v.short(best)) {
			best = z
		}
	}
	v.active, v.size = best, max(v.counts[best].pods, v.sizes[best])
	return v
}

// short says zone z has a pod not Ready, or fewer pods than its recorded size.
func (v zoneView) short(z string) bool {
	return v.counts[z].unavailable > 0 || v.counts[z].pods < v.sizes[z]
}

// recordedSizes reads ZoneSizesAnnotation from w's budget.
func recordedSizes(o Observed, w *Workload) map[string]int32 {
	b := existingBudget(o.Budgets, BudgetName(w.Kind, w.Name))
	if b == nil || b.Labels[holdfastv1alpha1.PolicyLabel] != o.Policy.Name {
		return map[string]int32{}
	}
	return availability.ZoneCounts(b.Annotations[holdfastv1alpha1.ZoneSizesAnnotation])
}

// sizesAnnotation is ZoneSizesAnnotation's value: the zones' pods when none is missing,
// else what was recorded.
func (v zoneView) sizesAnnotation() string {
	sizes := v.sizes
	if v.missing == 0 {
		sizes = map[string]int32{}
		for z, c := range v.counts {
			sizes[z] = c.pods
		}
	}
	return availability.FormatZoneCounts(sizes)
}

// recordedZone is the zone whose budget of w says it is being disrupted, and the size
// recorded with it.
func recordedZone(o Observed, w *Workload) (string, int32) {
	for i := range o.Budgets {
		b := &o.Budgets[i]
		n, active := b.Annotations[holdfastv1alpha1.ZoneActiveAnnotation]
		if !active || b.Labels[holdfastv1alpha1.PolicyLabel] != o.Policy.Name || !ownedBy(b, w) {
			continue
		}
		size, err := strconv.ParseInt(n, 10, 32)
		if err != nil {
			continue // not holdfast's writing: the zone is chosen afresh
		}
		return b.Labels[holdfastv1alpha1.ZoneLabel], int32(size)
	}
	return "", 0
}

// budgetsOf are w's zone-aware budgets as the snapshot has them: its own, and its
// zones'.
func budgetsOf(o Observed, w *Workload) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	own := BudgetName(w.Kind, w.Name)
	for i := range o.Budgets {
		b := &o.Budgets[i]
		_, zone := b.Labels[holdfastv1alpha1.ZoneLabel]
		if b.Labels[holdfastv1alpha1.PolicyLabel] == o.Policy.Name && (b.Name == own || zone && ownedBy(b, w)) {
			out = append(out, b)
		}
	}
	return out
}

// zoneBudgets are w's zones' budgets.
func (v zoneView) zoneBudgets() []*policyv1.PodDisruptionBudget {
	return slices.DeleteFunc(slices.Clone(v.budgets), func(b *policyv1.PodDisruptionBudget) bool {
		_, zone := b.Labels[holdfastv1alpha1.ZoneLabel]
		return !zone
	})
}

// othersClosed says every budget of w but the one named allowed nothing when the
// snapshot was read, so that no eviction accepted under one of them can be missing from
// the pods read after: the one named may open.
func (v zoneView) othersClosed(name string) bool {
	return !slices.ContainsFunc(v.budgets, func(b *policyv1.PodDisruptionBudget) bool { return b.Name != name && allowance(b) > 0 })
}

// evictedAt is when the Eviction API let each pod of w go, by pod name, as w's budgets'
// status.disruptedPods list them until the disruption controller sees the pod being
// deleted. A pod created before that time is the one evicted, and counts as not Ready;
// a StatefulSet's pod made again under the same name is not (a timestamp counts whole
// seconds: one created in the second of its predecessor's eviction is taken for the
// new one).
func (v zoneView) evictedAt() map[string]time.Time {
	out := map[string]time.Time{}
	for _, b := range v.budgets {
		for pod, at := range b.Status.DisruptedPods {
			if at.After(out[pod]) {
				out[pod] = at.Time
			}
		}
	}
	return out
}

func ownedBy(b *policyv1.PodDisruptionBudget, w *Workload) bool {
	return slices.ContainsFunc(b.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == w.UID })
}

// limit is how many of the active zone's pods may be disrupted.
func (v zoneView) limit(za *holdfastv1alpha1.ZoneAwareSpec) int32 { return ZoneLimit(za, v.size) }

// ZoneLimit is how many pods of a zone of size pods za lets be disrupted at once.
func ZoneLimit(za *holdfastv1alpha1.ZoneAwareSpec, size int32) int32 {
	n, err := intstr.GetScaledValueFromIntOrPercent(&za.MaxUnavailable, int(size), true)
	if err != nil || n < 1 {
		return 1 // the schema refuses such values; one stored before it never blocks
	}
	return min(int32(n), size)
}

// ZoneTopologyKey is the node label whose values are za's zones.
func ZoneTopologyKey(za *holdfastv1alpha1.ZoneAwareSpec) string {
	return cmp.Or(za.TopologyKey, holdfastv1alpha1.DefaultZoneTopologyKey)
}

// NodeZone is the zone za counts the pods on node in: the node's value of the topology
// key; "" for a pod not scheduled (nil), or on a node without the label. The operator,
// the drain plan and the audit all place pods with it.
func NodeZone(za *holdfastv1alpha1.ZoneAwareSpec, node *corev1.Node) string {
	if node == nil {
		return ""
	}
	return node.Labels[ZoneTopologyKey(za)]
}

// TemplateZone is the zone a pod template pins its pods to with a node selector on za's
// topology key, "" when it does not: where manifests say a workload runs.
func TemplateZone(za *holdfastv1alpha1.ZoneAwareSpec, t *corev1.PodTemplateSpec) string {
	if t == nil {
		return ""
	}
	return t.Spec.NodeSelector[ZoneTopologyKey(za)]
}

// open says the active zone may be disrupted: no other zone has a pod not Ready, and
// no more pods are missing than the active zone lost. Pods evicted under the budget of
// no zone disrupted, and not back, may be any zone's.
func (v zoneView) open() bool {
	for z, c := range v.counts {
		if z != v.active && c.unavailable > 0 {
			return false
		}
	}
	return v.missing <= v.size-v.counts[v.active].pods
}

// zonable says w's budget v is the workload's own, for zone-aware budgets to replace:
// not a single replica's, nor one another budget stands in for. A closed window's hold,
// a surge's budget and a recovery's are zone-aware too: going back to one budget over
// every pod would put the labelled pods under two budgets until the zones' were
// deleted, forget the zone being disrupted, and let a second zone go while the first is
// degraded. A surge's extra pods are under the workload's budget (viewZones), so the
// zones' budgets count the workload's own pods at its own size, as the surge's budget
// does (surgeBudget).
func zonable(o Observed, w *Workload, v verdict) bool {
	if !ZoneAware(o.Policy, w) || w.Replicas < 2 || v.budget == nil || v.budget.Name != BudgetName(w.Kind, w.Name) {
		return false
	}
	switch v.status.State {
	case holdfastv1alpha1.WorkloadBudgeted, holdfastv1alpha1.WorkloadPacing, holdfastv1alpha1.WorkloadDegraded,
		holdfastv1alpha1.WorkloadSurging, holdfastv1alpha1.WorkloadRecovering:
		return true
	}
	return false
}

// keepsMessage says a workload's status message says more than its zones' would: a
// surge's or a recovery's, which the zones' is added to.
func keepsMessage(st holdfastv1alpha1.WorkloadState) bool {
	return st == holdfastv1alpha1.WorkloadSurging || st == holdfastv1alpha1.WorkloadRecovering
}

// zoneVerdict is the budgets of a zone-aware workload, in the order they are written.
type zoneVerdict struct {
	tighten, loosen []*policyv1.PodDisruptionBudget
	// labels are set after the budgets are written, unlabel removed before.
	labels  []PodZone
	unlabel []PodZone
	// keep are zone budgets to leave as they are: no zone is disrupted, and they allow
	// nothing, but pods are still seen under them.
	keep    []string
	message string
	// budget is the name status shows: the active zone's budget, or the workload's.
	budget string
	// zone is the zone being disrupted, "" when none is.
	zone         string
	requeueAfter time.Duration
}

// budgets are all of the verdict's budgets.
func (z zoneVerdict) budgets() []*policyv1.PodDisruptionBudget {
	return append(slices.Clone(z.tighten), z.loosen...)
}

// decideZones turns base, the budget the policy gives w, into w's zone-aware budgets;
// closed, outside every maintenance window, they keep their shape and allow nothing.
// lost are the lost nodes, whose pods count as not Ready.
func decideZones(o Observed, w *Workload, base *policyv1.PodDisruptionBudget, closed bool, lost map[string]bool) zoneVerdict {
	p := o.Policy
	v := viewZones(o, w, lost)
	out := zoneVerdict{zone: v.active}
	if !v.next.IsZero() {
		out.requeueAfter = v.next.Sub(o.Now)
	}
	var want []*policyv1.PodDisruptionBudget
	// The workload's budget covers the pods not labelled: every pod while no zone is
	// disrupted, else those not labelled yet, at 0.
	u := zoneBudget(base, base.Name, metav1.LabelSelectorRequirement{Key: holdfastv1alpha1.ZoneLabel, Operator: metav1.LabelSelectorOpDoesNotExist})
	if a := v.sizesAnnotation(); a != "" {
		u.Annotations = map[string]string{holdfastv1alpha1.ZoneSizesAnnotation: a}
		zoneOpening(p.Spec.ZoneAware, a).Record(u)
	}
	want = append(want, u)
	if v.active == "" {
		b := u
		quiet := v.othersClosed(b.Name)
		if !closed && quiet {
			// A zone-aware budget is not paced: the settle time stands for it.
			b.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(idleMaxUnavailable))
		}
		for _, pod := range v.labelled {
			out.unlabel = append(out.unlabel, PodZone{Pod: pod})
		}
		for _, zb := range v.zoneBudgets() {
			switch z := zb.Labels[holdfastv1alpha1.ZoneLabel]; {
			case allowance(zb) > 0:
				// Closed before the workload's budget opens, and before it is deleted.
				want = append(want, closedZone(base, w, z))
			case len(v.labelled) > 0:
				// Deleted only once no pod is seen under it: an eviction in flight under
				// a budget deleted meanwhile fails with a 404, which kubectl drain takes
				// for the pod gone.
				out.keep = append(out.keep, zb.Name)
			}
		}
		out.budget, out.message = b.Name, msgZonesIdle(idleMaxUnavailable, w.Replicas)
		if !quiet {
			out.message = msgZonesClosing(w.Replicas)
		}
	} else {
		quiet := v.othersClosed(zoneBudgetName(w, zoneSuffix(v.active)))
		open := v.open() && !closed && quiet
		for _, z := range v.zones() {
			b := closedZone(base, w, z)
			if z == v.active {
				b.Annotations = map[string]string{holdfastv1alpha1.ZoneActiveAnnotation: strconv.Itoa(int(v.size))}
				if open {
					// An integer minAvailable: the disruption controller counts it against
					// the pods the budget selects, where a maxUnavailable would be counted
					// against the whole workload's scale. A lost pod the disruption
					// controller still counts healthy is taken from the zone's share.
					floor := v.size - v.limit(p.Spec.ZoneAware) + v.counts[z].stale
					b.Spec.MaxUnavailable, b.Spec.MinAvailable = nil, ptr.To(intstr.FromInt32(floor))
				}
				out.budget = b.Name
			}
			want = append(want, b)
		}
		out.labels = v.labels
		if v.open() && !quiet {
			out.message = msgZoneClosing(v.active)
		} else {
			out.message = msgZoneActive(v.active, v.limit(p.Spec.ZoneAware), v.size, open)
		}
	}
	if len(v.unzoned) > 0 {
		out.message += msgUnzoned(ZoneTopologyKey(p.Spec.ZoneAware), v.unzoned)
	}
	for _, b := range want {
		if loosens(existingBudget(o.Budgets, b.Name), b) {
			out.loosen = append(out.loosen, b)
		} else {
			out.tighten = append(out.tighten, b)
		}
	}
	return out
}

// zoneOpening is how a drain may take the zones' pods, recorded beside their sizes for
// plans to read: each zone's limit at its recorded size.
func zoneOpening(za *holdfastv1alpha1.ZoneAwareSpec, sizes string) availability.Opening {
	limits := availability.ZoneCounts(sizes)
	for z, n := range limits {
		limits[z] = ZoneLimit(za, n)
	}
	return availability.Opening{ZoneKey: ZoneTopologyKey(za), ZoneLimits: limits}
}

// closedZone is w's budget of zone z, allowing no disruption.
func closedZone(base *policyv1.PodDisruptionBudget, w *Workload, z string) *policyv1.PodDisruptionBudget {
	b := zoneBudget(base, zoneBudgetName(w, zoneSuffix(z)), metav1.LabelSelectorRequirement{Key: holdfastv1alpha1.ZoneLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{z}})
	b.Labels[holdfastv1alpha1.ZoneLabel] = z
	return b
}

// zoneBudget is base narrowed to the pods that also match req, allowing no disruption.
func zoneBudget(base *policyv1.PodDisruptionBudget, name string, req metav1.LabelSelectorRequirement) *policyv1.PodDisruptionBudget {
	b := base.DeepCopy()
	b.Name, b.Annotations = name, nil
	b.Spec.MinAvailable, b.Spec.MaxUnavailable = nil, ptr.To(intstr.FromInt32(0))
	if b.Spec.Selector == nil {
		b.Spec.Selector = &metav1.LabelSelector{}
	}
	b.Spec.Selector.MatchExpressions = append(b.Spec.Selector.MatchExpressions, req)
	return b
}

// allowance is how many disruptions a budget of holdfast's zone-aware shapes allows
// at most: maxUnavailable's integer, or the active zone's size less its minAvailable.
func allowance(b *policyv1.PodDisruptionBudget) int64 {
	if m := b.Spec.MaxUnavailable; m != nil && m.Type == intstr.Int {
		return int64(m.IntVal)
	}
	size, _ := strconv.ParseInt(b.Annotations[holdfastv1alpha1.ZoneActiveAnnotation], 10, 32)
	if m := b.Spec.MinAvailable; m != nil && m.Type == intstr.Int {
		return size - int64(m.IntVal)
	}
	return size // any other shape is the user's or older: assume it allows everything
}

// loosens says writing want over cur lets more disruptions through: it allows more,
// or its selector changes (pods it stops covering may be left to a budget that allows
// more). A budget that does not exist yet never does: it covers pods that no budget
// covered, or that another budget covers too, whose evictions the Eviction API then
// refuses.
func loosens(cur, want *policyv1.PodDisruptionBudget) bool {
	return cur != nil && (allowance(want) > allowance(cur) || !equality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector))
}

// zoneBudgetName is the name of one of w's zone-aware budgets, within the 253
// characters of an object name.
func zoneBudgetName(w *Workload, suffix string) string {
	base := BudgetName(w.Kind, w.Name)
	return strings.TrimRight(base[:min(len(base), 252-len(suffix))], "-.") + "-" + suffix
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// zoneSuffix makes a zone name fit a budget's name: label values may hold capitals,
// dots and underscores; one that needs changing gets a hash, so that two zones never
// share a budget.
func zoneSuffix(zone string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(zone), "-"), "-")
	if s == zone {
		return s
	}
	h := fnv.New32a()
	h.Write([]byte(zone))
	return fmt.Sprintf("%s-%08x", s, h.Sum32())
}
