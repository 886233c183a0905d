package predict

import (
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// applier makes a policy's effects on a snapshot, as the reconciler makes them on the
// cluster. It copies the snapshot's lists, and the objects it changes, before the first
// change to them: the snapshot it was given is left as it was.
type applier struct {
	s   *snapshot.Snapshot
	now time.Time
	// copied says which of s's lists are s's own already.
	copied map[string]bool
}

// own makes the list named name s's own before its first change.
func own[T any](a *applier, name string, list *[]T) {
	if !a.copied[name] {
		*list = slices.Clone(*list)
		a.copied[name] = true
	}
}

// apply makes each of p's effects on a.s, in their order.
func (a *applier) apply(p *holdfastv1alpha1.DisruptionPolicy, effects []policy.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case policy.ApplyBudget:
			a.applyBudget(p, e.Budget)
		case policy.DeleteBudget:
			own(a, "budgets", &a.s.PodDisruptionBudgets)
			a.s.PodDisruptionBudgets = slices.DeleteFunc(a.s.PodDisruptionBudgets, func(c policyv1.PodDisruptionBudget) bool { return same(&c, e.Budget) })
		case policy.PodZone:
			a.pod(p.Namespace, e.Pod, func(pod *corev1.Pod) {
				pod.Labels = edit(pod.Labels, holdfastv1alpha1.ZoneLabel, e.Zone)
			})
		case policy.PodAnnotation:
			a.pod(p.Namespace, e.Pod, func(pod *corev1.Pod) {
				value, by := "", ""
				if e.Set {
					value, by = "true", p.Name
				}
				pod.Annotations = edit(edit(pod.Annotations, e.Mark.Key, value), e.Mark.By, by)
			})
		case policy.NodeTaint:
			if at := slices.IndexFunc(a.s.Nodes, func(n corev1.Node) bool { return n.Name == e.Node }); at >= 0 {
				own(a, "nodes", &a.s.Nodes)
				a.s.Nodes[at] = *e.On(&a.s.Nodes[at], a.now)
			}
		case policy.Surge:
			a.surge(p, e)
		}
	}
}

// applyBudget writes b. A budget whose spec and policy do not change keeps its status;
// one the operator rewrites is counted anew by the disruption controller.
func (a *applier) applyBudget(p *holdfastv1alpha1.DisruptionPolicy, b *policyv1.PodDisruptionBudget) {
	own(a, "budgets", &a.s.PodDisruptionBudgets)
	at := slices.IndexFunc(a.s.PodDisruptionBudgets, func(c policyv1.PodDisruptionBudget) bool { return same(&c, b) })
	switch {
	case at < 0:
		a.s.PodDisruptionBudgets = append(a.s.PodDisruptionBudgets, *b)
	case !equality.Semantic.DeepEqual(a.s.PodDisruptionBudgets[at].Spec, b.Spec) || a.s.PodDisruptionBudgets[at].Labels[holdfastv1alpha1.PolicyLabel] != p.Name:
		a.s.PodDisruptionBudgets[at] = *b
	}
}

// surge makes, resizes or deletes a surge set, as policy.SurgeReplicaSet makes it of
// its Deployment; a set resized keeps its status.
func (a *applier) surge(p *holdfastv1alpha1.DisruptionPolicy, s policy.Surge) {
	own(a, "replicasets", &a.s.ReplicaSets)
	at := slices.IndexFunc(a.s.ReplicaSets, func(rs appsv1.ReplicaSet) bool { return rs.Namespace == p.Namespace && rs.Name == s.Name })
	if s.Delete {
		if at >= 0 {
			a.s.ReplicaSets = slices.Delete(a.s.ReplicaSets, at, at+1)
		}
		return
	}
	d := slices.IndexFunc(a.s.Deployments, func(d appsv1.Deployment) bool {
		return d.Namespace == p.Namespace && d.Name == s.Deployment && d.UID == s.DeploymentUID
	})
	if d < 0 {
		return // the reconciler decides again, as it does for a Deployment made anew
	}
	set := policy.SurgeReplicaSet(p, &a.s.Deployments[d], s)
	if at < 0 {
		a.s.ReplicaSets = append(a.s.ReplicaSets, *set)
		return
	}
	set.Status = a.s.ReplicaSets[at].Status
	a.s.ReplicaSets[at] = *set
}

// pod changes the pod ns/name with change, on a copy of it; a pod gone needs nothing.
func (a *applier) pod(ns, name string, change func(*corev1.Pod)) {
	at := slices.IndexFunc(a.s.Pods, func(pod corev1.Pod) bool { return pod.Namespace == ns && pod.Name == name })
	if at < 0 {
		return
	}
	own(a, "pods", &a.s.Pods)
	pod := a.s.Pods[at].DeepCopy()
	change(pod)
	a.s.Pods[at] = *pod
}

// edit sets key to value in a copy of m, or removes it for "".
func edit(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if value == "" {
		delete(out, key)
		return out
	}
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

func same(a, b *policyv1.PodDisruptionBudget) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name
}
