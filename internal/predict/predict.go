// Package predict makes a snapshot into the cluster holdfast's operator will make of it:
// the DisruptionPolicies in effect (ClusterDisruptionPolicies' copies included) and the
// budgets they keep, decided by the operator's own core, internal/policy, over what the
// snapshot holds. audit and plan then reason about that cluster, so that what they
// predict is what the controllers do.
package predict

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Outcome is one DisruptionPolicy in effect and what the operator decides for it.
type Outcome struct {
	Policy   holdfastv1alpha1.DisruptionPolicy
	Decision policy.Decision
}

// Operator returns a copy of s as the operator will make it at now, and the decision
// for each policy in effect, sorted by namespace and name. s is not modified.
func Operator(s *snapshot.Snapshot, now time.Time) (*snapshot.Snapshot, []Outcome) {
	out := *s
	inEffect := policy.InEffect(Namespaces(s), s.DisruptionPolicies, s.ClusterDisruptionPolicies, now)
	out.DisruptionPolicies = inEffect
	budgets := slices.Clone(s.PodDisruptionBudgets)
	idx := index(s)
	var outcomes []Outcome
	for i := range inEffect {
		p := &inEffect[i]
		o := idx.observe(p, inEffect, now)
		d := policy.Decide(o)
		outcomes = append(outcomes, Outcome{Policy: *p, Decision: d})
		for _, b := range d.Delete {
			budgets = slices.DeleteFunc(budgets, func(c policyv1.PodDisruptionBudget) bool { return c.Namespace == b.Namespace && c.Name == b.Name })
		}
		for _, b := range d.Apply {
			at := slices.IndexFunc(budgets, func(c policyv1.PodDisruptionBudget) bool { return c.Namespace == b.Namespace && c.Name == b.Name })
			switch {
			case at < 0:
				budgets = append(budgets, *b)
			case !equality.Semantic.DeepEqual(budgets[at].Spec, b.Spec) || budgets[at].Labels[holdfastv1alpha1.PolicyLabel] != p.Name:
				// The operator rewrites it; the disruption controller counts it anew.
				budgets[at] = *b
			}
		}
	}
	out.PodDisruptionBudgets = budgets
	return &out, outcomes
}

// Namespaces are the snapshot's namespaces, and for every namespace its objects name but
// it does not hold, one with only the name label the API server gives every namespace.
func Namespaces(s *snapshot.Snapshot) []corev1.Namespace {
	out := slices.Clone(s.Namespaces)
	seen := map[string]bool{}
	for _, ns := range out {
		seen[ns.Name] = true
	}
	add := func(name string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		out = append(out, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}})
	}
	for _, d := range s.Deployments {
		add(d.Namespace)
	}
	for _, d := range s.StatefulSets {
		add(d.Namespace)
	}
	for _, d := range s.DaemonSets {
		add(d.Namespace)
	}
	for _, p := range s.DisruptionPolicies {
		add(p.Namespace)
	}
	slices.SortFunc(out, func(a, b corev1.Namespace) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// namespaced is the snapshot's objects by namespace, read once for every policy.
type namespaced struct {
	s           *snapshot.Snapshot
	nodes       map[string]*corev1.Node
	budgets     map[string][]policyv1.PodDisruptionBudget
	pods        map[string][]*corev1.Pod
	deployments map[string][]*appsv1.Deployment
	sets        map[string][]*appsv1.StatefulSet
	daemons     map[string][]*appsv1.DaemonSet
	autoscalers map[string][]autoscalingv2.HorizontalPodAutoscaler
}

func index(s *snapshot.Snapshot) *namespaced {
	x := &namespaced{s: s, nodes: map[string]*corev1.Node{}, budgets: map[string][]policyv1.PodDisruptionBudget{}, pods: map[string][]*corev1.Pod{},
		deployments: map[string][]*appsv1.Deployment{}, sets: map[string][]*appsv1.StatefulSet{}, daemons: map[string][]*appsv1.DaemonSet{},
		autoscalers: map[string][]autoscalingv2.HorizontalPodAutoscaler{}}
	for i := range s.Nodes {
		x.nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for _, b := range s.PodDisruptionBudgets {
		x.budgets[b.Namespace] = append(x.budgets[b.Namespace], b)
	}
	for i := range s.Pods {
		x.pods[s.Pods[i].Namespace] = append(x.pods[s.Pods[i].Namespace], &s.Pods[i])
	}
	for i := range s.Deployments {
		x.deployments[s.Deployments[i].Namespace] = append(x.deployments[s.Deployments[i].Namespace], &s.Deployments[i])
	}
	for i := range s.StatefulSets {
		x.sets[s.StatefulSets[i].Namespace] = append(x.sets[s.StatefulSets[i].Namespace], &s.StatefulSets[i])
	}
	for i := range s.DaemonSets {
		x.daemons[s.DaemonSets[i].Namespace] = append(x.daemons[s.DaemonSets[i].Namespace], &s.DaemonSets[i])
	}
	for _, h := range s.HorizontalPodAutoscalers {
		x.autoscalers[h.Namespace] = append(x.autoscalers[h.Namespace], h)
	}
	return x
}

// observe gathers from the snapshot what the DisruptionPolicy controller's gather reads
// for p: the namespace's policies, the workloads p selects, its Deployments in the
// middle of a surge, its budgets and the labels of its live pods; and, for the
// workloads whose pods Decide reads (policy.NeedsPods), their pods, nodes and
// autoscalers. Workloads read from manifests carry no status: they count as fully Ready,
// as the model assumes, and their templates stand for the pods the manifests lack. A
// snapshot holds no objects of a scale target's kind: each scale target is unreadable,
// so that the budgets of its objects are kept as they are, as the operator keeps them
// while it cannot read them.
func (x *namespaced) observe(p *holdfastv1alpha1.DisruptionPolicy, policies []holdfastv1alpha1.DisruptionPolicy, now time.Time) policy.Observed {
	ns := p.Namespace
	o := policy.Observed{Policy: p, Now: now, Pods: map[string][]policy.Pod{}, Nodes: x.nodes, Budgets: x.budgets[ns]}
	for _, q := range policies {
		if q.Namespace == ns {
			o.Policies = append(o.Policies, q)
		}
	}
	manifests := x.s.Source == snapshot.SourceManifests
	for _, w := range x.workloads(ns, manifests) {
		if _, surging := w.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation]; surging && w.Kind == holdfastv1alpha1.KindDeployment {
			o.Surging = append(o.Surging, w)
		}
		if selected, _ := policy.Selects(p, &w); selected {
			o.Workloads = append(o.Workloads, w)
		}
		if manifests {
			o.PodLabels = append(o.PodLabels, w.TemplateLabels)
		}
	}
	for _, pod := range x.pods[ns] {
		if pod.DeletionTimestamp == nil {
			o.PodLabels = append(o.PodLabels, pod.Labels)
		}
	}
	for _, t := range p.Spec.ScaleTargets {
		o.Unreadable = append(o.Unreadable, policy.Unreadable{Target: t,
			Message: fmt.Sprintf("holdfast reads no %s (%s) into a snapshot, from a cluster or from manifests", t.Kind, t.APIVersion)})
	}
	needs := func(w *policy.Workload) bool { return policy.NeedsPods(&o, w) }
	var deployments []*policy.Workload
	for _, ws := range [][]policy.Workload{o.Workloads, o.Surging} {
		for i := range ws {
			if ws[i].Kind == holdfastv1alpha1.KindDeployment && needs(&ws[i]) {
				deployments = append(deployments, &ws[i])
			}
		}
	}
	policy.AttachAutoscalers(x.autoscalers[ns], deployments)
	for i := range o.Workloads {
		if w := &o.Workloads[i]; needs(w) {
			o.Pods[policy.WorkloadKey(w.Kind, w.Name)] = podsOf(x.pods[ns], w.Selector)
		}
	}
	return o
}

// workloads are the namespace's Deployments, StatefulSets and DaemonSets as Workloads;
// with assumeReady, those with no status count as fully Ready.
func (x *namespaced) workloads(ns string, assumeReady bool) []policy.Workload {
	var out []policy.Workload
	add := func(obj metav1.Object, ready bool) {
		w := policy.WorkloadOf(obj)
		if ready {
			w.Ready, w.Available, w.RollingOut = w.Replicas, w.Replicas, false
		}
		out = append(out, w)
	}
	for _, d := range x.deployments[ns] {
		add(d, assumeReady && d.Status.ObservedGeneration == 0)
	}
	for _, d := range x.sets[ns] {
		add(d, assumeReady && d.Status.ObservedGeneration == 0)
	}
	for _, d := range x.daemons[ns] {
		ready := assumeReady && d.Status.ObservedGeneration == 0
		if ready {
			d = withScheduled(d, x.s.Nodes)
		}
		add(d, ready)
	}
	return out
}

// withScheduled gives a DaemonSet read from a manifest the count of nodes its node
// selector picks, the pods its controller would schedule (taints aside).
func withScheduled(ds *appsv1.DaemonSet, nodes []corev1.Node) *appsv1.DaemonSet {
	c := ds.DeepCopy()
	sel := labels.SelectorFromSet(ds.Spec.Template.Spec.NodeSelector)
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			c.Status.DesiredNumberScheduled++
		}
	}
	return c
}

// podsOf are the live pods among the namespace's that the selector matches.
func podsOf(pods []*corev1.Pod, selector *metav1.LabelSelector) []policy.Pod {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || selector == nil {
		return nil
	}
	var out []policy.Pod
	for _, pod := range pods {
		if !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if p, ok := policy.PodOf(pod); ok {
			out = append(out, p)
		}
	}
	return out
}
