package availability

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Spread is how strongly a pod template keeps its replicas apart over one topology.
type Spread int

const (
	// SpreadNone: nothing keeps the replicas apart; the scheduler may pack them.
	SpreadNone Spread = iota
	// SpreadPreferred: preferred anti-affinity or a ScheduleAnyway spread constraint,
	// which the scheduler trades away against other scores.
	SpreadPreferred
	// SpreadRequired: required anti-affinity or a DoNotSchedule spread constraint.
	SpreadRequired
)

// String names the spread for messages.
func (s Spread) String() string {
	return [...]string{"none", "preferred", "required"}[s]
}

// Annotations that tell autoscalers and holdfast how to treat a pod.
const (
	// AnnotationKarpenterDoNotDisrupt keeps Karpenter from voluntarily disrupting (by
	// consolidation or drift) the node of the pod: "true" for good, a duration such as
	// "30m" for that long after the pod started. Drains by others ignore it.
	AnnotationKarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// AnnotationKarpenterDoNotEvict is do-not-disrupt's name before Karpenter v1beta1;
	// Karpenter v1 no longer reads it.
	AnnotationKarpenterDoNotEvict = "karpenter.sh/do-not-evict"
	// AnnotationSafeToEvict set to "false" keeps cluster-autoscaler from scaling the node
	// of the pod down ("true" lets it evict a pod it would otherwise keep, such as one
	// with local storage). Karpenter and drains ignore it.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// AnnotationCritical marks a workload, typically a DaemonSet holding per-node data,
	// whose pods must not all go down together even in --ignore-daemonsets drains.
	AnnotationCritical = "holdfast.dev/critical"
)

// TemplateFacts is what a pod template says about availability, readable from manifests.
type TemplateFacts struct {
	// NodeSpread is the strongest rule keeping replicas off a single node; a zone rule
	// counts, since pods in different zones are on different nodes.
	NodeSpread Spread
	ZoneSpread Spread
	// OnePerNode is true with required pod anti-affinity on the hostname against the
	// template's own labels: never two replicas on one node (a critical DaemonSet's
	// companion).
	OnePerNode bool
	Strategy   Strategy
	// NoReadiness and NoLiveness name the containers without that probe.
	NoReadiness []string
	NoLiveness  []string
	// DoNotDisrupt is true when Karpenter never voluntarily disrupts the node of a pod of
	// the template (karpenter.sh/do-not-disrupt: "true").
	DoNotDisrupt bool
	// DoNotDisruptFor is how long after it starts Karpenter leaves each pod's node alone
	// when do-not-disrupt is a duration; 0 otherwise.
	DoNotDisruptFor time.Duration
	// NotSafeToEvict is true when cluster-autoscaler does not scale down the node of a pod
	// of the template (safe-to-evict: "false"); Karpenter and drains still evict it.
	NotSafeToEvict bool
	// DoNotEvict is true when the template carries karpenter.sh/do-not-evict, which
	// Karpenter v1 ignores.
	DoNotEvict bool
	// Critical is true when the workload or its template carries holdfast.dev/critical.
	Critical bool
}

// Strategy is a rollout strategy with its surge and unavailability resolved to pod counts.
type Strategy struct {
	Type           string
	MaxSurge       int32
	MaxUnavailable int32
}

func templateFacts(kind string, obj metav1.Object, t *corev1.PodTemplateSpec) TemplateFacts {
	host := spread(t, corev1.LabelHostname)
	zone := max(spread(t, corev1.LabelTopologyZone), spread(t, corev1.LabelFailureDomainBetaZone))
	f := TemplateFacts{
		NodeSpread: max(host, zone),
		ZoneSpread: zone,
		OnePerNode: requiredAntiAffinity(t, corev1.LabelHostname),
	}
	for _, c := range t.Spec.Containers {
		if c.ReadinessProbe == nil {
			f.NoReadiness = append(f.NoReadiness, c.Name)
		}
		if c.LivenessProbe == nil {
			f.NoLiveness = append(f.NoLiveness, c.Name)
		}
	}
	a := t.Annotations
	f.DoNotDisrupt = a[AnnotationKarpenterDoNotDisrupt] == "true"
	f.DoNotDisruptFor, _ = doNotDisruptFor(a[AnnotationKarpenterDoNotDisrupt])
	f.NotSafeToEvict = a[AnnotationSafeToEvict] == "false"
	_, f.DoNotEvict = a[AnnotationKarpenterDoNotEvict]
	f.Critical = a[AnnotationCritical] == "true" || obj.GetAnnotations()[AnnotationCritical] == "true"
	if kind == snapshot.KindStatefulSet {
		// A StatefulSet replaces pods one at a time and never surges.
		f.Strategy = Strategy{Type: string(appsv1.RollingUpdateStatefulSetStrategyType), MaxUnavailable: 1}
	}
	return f
}

// KarpenterDoNotDisrupt reports whether a pod's karpenter.sh/do-not-disrupt value keeps
// Karpenter off its node at now, as Karpenter reads it: "true" always; a positive
// duration until that long after the pod started (and while it has not started); any
// other value not at all.
func KarpenterDoNotDisrupt(value string, started *metav1.Time, now time.Time) bool {
	if value == "true" {
		return true
	}
	d, ok := doNotDisruptFor(value)
	return ok && (started == nil || now.Sub(started.Time) < d)
}

// doNotDisruptFor parses a do-not-disrupt duration; false for "true" and for values
// Karpenter ignores.
func doNotDisruptFor(value string) (time.Duration, bool) {
	d, err := time.ParseDuration(value)
	return d, err == nil && d > 0
}

func selects(sel *metav1.LabelSelector, own map[string]string) bool {
	s, err := Selector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(own))
}

func requiredAntiAffinity(t *corev1.PodTemplateSpec, key string) bool {
	a := t.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey == key && selects(term.LabelSelector, t.Labels) {
			return true
		}
	}
	return false
}

func spread(t *corev1.PodTemplateSpec, key string) Spread {
	if requiredAntiAffinity(t, key) {
		return SpreadRequired
	}
	s := SpreadNone
	for _, c := range t.Spec.TopologySpreadConstraints {
		if c.TopologyKey != key || !selects(c.LabelSelector, t.Labels) {
			continue
		}
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return SpreadRequired
		}
		s = SpreadPreferred
	}
	if a := t.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if w.PodAffinityTerm.TopologyKey == key && selects(w.PodAffinityTerm.LabelSelector, t.Labels) {
				s = SpreadPreferred
			}
		}
	}
	return s
}

// deploymentStrategy resolves a Deployment's rollout as the deployment controller does:
// surge rounds up, unavailability rounds down, and both zero means one unavailable.
func deploymentStrategy(d *appsv1.Deployment, replicas int32) Strategy {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return Strategy{Type: string(appsv1.RecreateDeploymentStrategyType)}
	}
	defaultQuarter := intstr.FromString("25%")
	surge, unavailable := &defaultQuarter, &defaultQuarter
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = ru.MaxUnavailable
		}
	}
	s := Strategy{Type: string(appsv1.RollingUpdateDeploymentStrategyType)}
	// Invalid values are the API server's to reject; they resolve to zero here.
	ms, _ := intstr.GetScaledValueFromIntOrPercent(surge, int(replicas), true)
	mu, _ := intstr.GetScaledValueFromIntOrPercent(unavailable, int(replicas), false)
	s.MaxSurge, s.MaxUnavailable = int32(ms), int32(mu)
	if s.MaxSurge == 0 && s.MaxUnavailable == 0 {
		s.MaxUnavailable = 1
	}
	return s
}

// daemonSetStrategy resolves a DaemonSet's rollout; by default one node at a time, no surge.
func daemonSetStrategy(ds *appsv1.DaemonSet, nodes int32) Strategy {
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return Strategy{Type: string(appsv1.OnDeleteDaemonSetStrategyType)}
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	surge, unavailable := &zero, &one
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = ru.MaxUnavailable
		}
	}
	ms, _ := intstr.GetScaledValueFromIntOrPercent(surge, int(nodes), true)
	mu, _ := intstr.GetScaledValueFromIntOrPercent(unavailable, int(nodes), true)
	return Strategy{Type: string(appsv1.RollingUpdateDaemonSetStrategyType), MaxSurge: int32(ms), MaxUnavailable: int32(mu)}
}

// EligibleNodes counts the nodes a pod of the template could run on (Eligible with the
// template's node selector, affinity and tolerations): a cordoned node counts only for
// a pod that tolerates the cordon, as a DaemonSet's pods do (DaemonTolerations). It
// returns -1 when the snapshot has no nodes (manifests without a nodes file).
func (m *Model) EligibleNodes(t *corev1.PodTemplateSpec) int {
	return m.eligibleNodes(t.Spec.NodeSelector, t.Spec.Affinity, t.Spec.Tolerations)
}

// DaemonSetNodes counts the nodes a DaemonSet runs a pod on, as the DaemonSet
// controller counts them: its template's rules with the tolerations it adds to every
// daemon pod, so that cordoned nodes count. It returns -1 without nodes.
func (m *Model) DaemonSetNodes(t *corev1.PodTemplateSpec) int {
	tolerations := append(slices.Clone(t.Spec.Tolerations), DaemonTolerations(t.Spec.HostNetwork)...)
	return m.eligibleNodes(t.Spec.NodeSelector, t.Spec.Affinity, tolerations)
}

func (m *Model) eligibleNodes(nodeSelector map[string]string, affinity *corev1.Affinity, tolerations []corev1.Toleration) int {
	if len(m.Nodes) == 0 {
		return -1
	}
	n := 0
	for _, node := range m.Nodes {
		if Eligible(node.Node, nodeSelector, affinity, tolerations) {
			n++
		}
	}
	return n
}

// cordonTaint is the taint the node lifecycle controller puts on a cordoned node.
var cordonTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// Eligible reports whether a pod with this node selector, affinity and tolerations may
// run on node, with the rules the scheduler and the DaemonSet controller share: the
// required node affinity (node selector included) matches and no NoSchedule or
// NoExecute taint is left untolerated. A cordoned node (Cordoned: a node whose
// maintenance is planned too) counts as tainted node.kubernetes.io/unschedulable:NoSchedule
// even when the snapshot's copy does not carry the taint (manifests, or a cordon the node
// controller has not seen yet).
func Eligible(node *corev1.Node, nodeSelector map[string]string, affinity *corev1.Affinity, tolerations []corev1.Toleration) bool {
	var required *corev1.Affinity
	if affinity != nil && affinity.NodeAffinity != nil {
		required = &corev1.Affinity{NodeAffinity: affinity.NodeAffinity}
	}
	if ok, err := nodeaffinity.NewRequiredNodeAffinity(nodeSelector, required).Match(node); err != nil || !ok {
		return false
	}
	taints := node.Spec.Taints
	if Cordoned(node) && !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&cordonTaint) }) {
		taints = append(slices.Clone(taints), cordonTaint)
	}
	return !Untolerated(taints, tolerations)
}

// Untolerated reports whether a NoSchedule or NoExecute taint is not tolerated.
func Untolerated(taints []corev1.Taint, tolerations []corev1.Toleration) bool {
	if len(taints) == 0 {
		return false
	}
	// The zero logr.Logger discards: this package does not log.
	_, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Logger{}, taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return found
}

// DaemonTolerations are the tolerations the DaemonSet controller adds to every daemon
// pod (pkg/controller/daemon/util), so that a node under pressure, not ready, or
// cordoned still counts as a node of the DaemonSet; hostNetwork pods also tolerate an
// unavailable network.
func DaemonTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

// labelIndex finds the members a selector matches without testing every member: members
// are indexed by namespace and by each label, and a selector is tested only against the
// members of its most selective equality requirement.
type labelIndex map[string]*namespaceIndex

type namespaceIndex struct {
	all     []int32
	byLabel map[string]map[string][]int32
}

func newLabelIndex(members []Member) labelIndex {
	idx := labelIndex{}
	for i := range members {
		p := &members[i]
		ns := idx[p.Namespace]
		if ns == nil {
			ns = &namespaceIndex{byLabel: map[string]map[string][]int32{}}
			idx[p.Namespace] = ns
		}
		ns.all = append(ns.all, int32(i))
		for k, v := range p.Labels {
			values := ns.byLabel[k]
			if values == nil {
				values = map[string][]int32{}
				ns.byLabel[k] = values
			}
			values[v] = append(values[v], int32(i))
		}
	}
	return idx
}

// matching returns the indexes of the members of namespace that sel matches, in order.
func (idx labelIndex) matching(namespace string, sel labels.Selector, members []Member) []int32 {
	ns := idx[namespace]
	if ns == nil {
		return nil
	}
	candidates := ns.all
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
		default:
			continue
		}
		var c []int32
		for _, v := range r.Values().List() {
			c = append(c, ns.byLabel[r.Key()][v]...)
		}
		if r.Values().Len() > 1 {
			// One label has one value per member, so the lists are disjoint; only order is lost.
			slices.Sort(c)
		}
		if len(c) < len(candidates) {
			candidates = c
		}
	}
	var out []int32
	for _, i := range candidates {
		if sel.Matches(members[i].Labels) {
			out = append(out, i)
		}
	}
	return out
}
