// Package predict makes a snapshot into the cluster holdfast's operator will make of it:
// the DisruptionPolicies in effect (ClusterDisruptionPolicies' copies included) and the
// budgets they keep, decided by the operator's own core, internal/policy, over what the
// snapshot holds. audit and plan then reason about that cluster, so that what they
// predict is what the controllers do.
package predict

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
}

func index(s *snapshot.Snapshot) *namespaced {
	x := &namespaced{s: s, nodes: map[string]*corev1.Node{}, budgets: map[string][]policyv1.PodDisruptionBudget{}, pods: map[string][]*corev1.Pod{},
		deployments: map[string][]*appsv1.Deployment{}, sets: map[string][]*appsv1.StatefulSet{}, daemons: map[string][]*appsv1.DaemonSet{}}
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
	return x
}

// observe gathers what the DisruptionPolicy controller gathers for p from the cluster:
// the namespace's workloads, budgets, live pods and their nodes. Workloads read from
// manifests carry no status: they count as fully Ready, as the model assumes.
func (x *namespaced) observe(p *holdfastv1alpha1.DisruptionPolicy, policies []holdfastv1alpha1.DisruptionPolicy, now time.Time) policy.Observed {
	ns := p.Namespace
	o := policy.Observed{Policy: p, Now: now, Pods: map[string][]policy.Pod{}, Nodes: x.nodes, Budgets: x.budgets[ns]}
	for _, q := range policies {
		if q.Namespace == ns {
			o.Policies = append(o.Policies, q)
		}
	}
	add := func(obj metav1.Object, assumeReady bool) {
		w := policy.WorkloadOf(obj)
		if assumeReady {
			w.Ready, w.Available, w.RollingOut = w.Replicas, w.Replicas, false
		}
		o.Workloads = append(o.Workloads, w)
		if _, surging := w.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation]; surging && w.Kind == holdfastv1alpha1.KindDeployment {
			o.Surging = append(o.Surging, w)
		}
		o.Pods[policy.WorkloadKey(w.Kind, w.Name)] = podsOf(x.pods[ns], w.Selector)
	}
	// Overlap is found on the pods when the snapshot has them; from manifests without
	// pods, each workload's template stands for its pods.
	for _, pod := range x.pods[ns] {
		if pod.DeletionTimestamp == nil {
			o.PodLabels = append(o.PodLabels, pod.Labels)
		}
	}
	manifests := x.s.Source == snapshot.SourceManifests
	for _, d := range x.deployments[ns] {
		add(d, manifests && d.Status.ObservedGeneration == 0)
	}
	for _, d := range x.sets[ns] {
		add(d, manifests && d.Status.ObservedGeneration == 0)
	}
	for _, d := range x.daemons[ns] {
		assume := manifests && d.Status.ObservedGeneration == 0
		if assume {
			d = withScheduled(d, x.s.Nodes)
		}
		add(d, assume)
	}
	return o
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
