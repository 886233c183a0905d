package policy

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Issue 17 item 7: overlap is found on the pods, both ways, against the user's budgets
// and the managed ones.
func TestDecideOverlap(t *testing.T) {
	db := workload(holdfastv1alpha1.KindStatefulSet, "db", 3)
	web := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	// canary's pods carry app=web too: web's budget would cover them.
	canary := workload(holdfastv1alpha1.KindDeployment, "canary", 2)
	canary.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "track": "canary"}}
	canary.TemplateLabels = map[string]string{"app": "web", "track": "canary"}
	pod := func(template map[string]string, extra ...string) map[string]string {
		l := map[string]string{}
		for k, v := range template {
			l[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	dbPods := []map[string]string{
		pod(db.TemplateLabels, "statefulset.kubernetes.io/pod-name", "db-0"),
		pod(db.TemplateLabels, "statefulset.kubernetes.io/pod-name", "db-1"),
		pod(db.TemplateLabels, "statefulset.kubernetes.io/pod-name", "db-2"),
	}
	webPods := []map[string]string{
		pod(web.TemplateLabels, "pod-template-hash", "5d8f"), pod(web.TemplateLabels, "pod-template-hash", "5d8f"),
		pod(web.TemplateLabels, "pod-template-hash", "5d8f"),
	}
	canaryPods := []map[string]string{pod(canary.TemplateLabels, "pod-template-hash", "77aa"), pod(canary.TemplateLabels, "pod-template-hash", "77aa")}
	conflict := func(w Workload, other string) holdfastv1alpha1.WorkloadStatus {
		return holdfastv1alpha1.WorkloadStatus{Kind: w.Kind, Name: w.Name, Replicas: w.Replicas, State: holdfastv1alpha1.WorkloadConflict, Message: msgConflict(other)}
	}
	overlapping := func(w Workload, other string) holdfastv1alpha1.WorkloadStatus {
		return holdfastv1alpha1.WorkloadStatus{Kind: w.Kind, Name: w.Name, Replicas: w.Replicas, State: holdfastv1alpha1.WorkloadConflict, Message: msgOverlap(other)}
	}
	conflicted := map[string]string{holdfastv1alpha1.ConditionConflicted: holdfastv1alpha1.ReasonConflictingBudgets}
	older := policy("older", 2*time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}
	})
	canaryOfOlder := canary
	canaryOfOlder.Labels = map[string]string{"tier": "canary"}

	runDecide(t, map[string]decideCase{
		"a user's per-pod budget of a StatefulSet: conflict, ours deleted": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{db},
			podLabels: dbPods,
			budgets: []policyv1.PodDisruptionBudget{
				userBudget("db-0", map[string]string{"statefulset.kubernetes.io/pod-name": "db-0"}),
				*budget("p", db, maxUnavailable(intstr.FromInt32(1)), nil),
			},
			want:     result{Delete: []string{"holdfast-sts-db"}, Workloads: []holdfastv1alpha1.WorkloadStatus{conflict(db, "db-0")}},
			wantCond: conflicted,
		},
		"a user's budget on pod-template-hash: conflict": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{web},
			podLabels: webPods,
			budgets:   []policyv1.PodDisruptionBudget{userBudget("by-hash", map[string]string{"pod-template-hash": "5d8f"})},
			want:      result{Workloads: []holdfastv1alpha1.WorkloadStatus{conflict(web, "by-hash")}},
			wantCond:  conflicted,
		},
		"a user's budget over another workload's pods that ours would cover too: conflict": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{web},
			podLabels: append(append([]map[string]string{}, webPods...), canaryPods...),
			budgets:   []policyv1.PodDisruptionBudget{userBudget("canary-by-hand", map[string]string{"track": "canary"})},
			want:      result{Workloads: []holdfastv1alpha1.WorkloadStatus{conflict(web, "canary-by-hand")}},
			wantCond:  conflicted,
		},
		"two selected Deployments with overlapping selectors: both conflict, neither budget made": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{web, canary},
			podLabels: append(append([]map[string]string{}, webPods...), canaryPods...),
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{
				overlapping(canary, "holdfast-deploy-web"), overlapping(web, "holdfast-deploy-canary"),
			}},
			wantCond: conflicted,
		},
		"two overlapping Deployments whose budgets exist: both deleted": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{web, canary},
			podLabels: append(append([]map[string]string{}, webPods...), canaryPods...),
			budgets: []policyv1.PodDisruptionBudget{
				*budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil), *budget("p", canary, maxUnavailable(intstr.FromInt32(1)), nil),
			},
			want: result{
				Delete: []string{"holdfast-deploy-web", "holdfast-deploy-canary"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{
					overlapping(canary, "holdfast-deploy-web"), overlapping(web, "holdfast-deploy-canary"),
				},
			},
		},
		"overlapping Deployments read from manifests (no pods): their templates stand for their pods": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{web, canary},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{
				overlapping(canary, "holdfast-deploy-web"), overlapping(web, "holdfast-deploy-canary"),
			}},
		},
		"an older policy's budget over our pods: we yield": {
			policy:    policy("p", time.Hour, nil),
			others:    []holdfastv1alpha1.DisruptionPolicy{older},
			work:      []Workload{web},
			podLabels: append(append([]map[string]string{}, webPods...), canaryPods...),
			budgets:   []policyv1.PodDisruptionBudget{*budget("older", canaryOfOlder, maxUnavailable(intstr.FromInt32(1)), nil)},
			want:      result{Workloads: []holdfastv1alpha1.WorkloadStatus{overlapping(web, "holdfast-deploy-canary")}},
		},
		"a younger policy's budget over our pods: we keep ours, it yields": {
			policy:    older,
			others:    []holdfastv1alpha1.DisruptionPolicy{policy("p", time.Hour, nil)},
			work:      []Workload{canaryOfOlder},
			podLabels: append(append([]map[string]string{}, webPods...), canaryPods...),
			budgets:   []policyv1.PodDisruptionBudget{*budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("older", canaryOfOlder, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "canary", Replicas: 2, State: holdfastv1alpha1.WorkloadBudgeted,
					Budget: "holdfast-deploy-canary", Message: "1 of 2 pods may be disrupted at once"}},
			},
		},
		"a gone policy's budget over our pods: conflict until the sweep deletes it": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{canary},
			podLabels: canaryPods,
			budgets:   []policyv1.PodDisruptionBudget{*budget("gone", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			want:      result{Workloads: []holdfastv1alpha1.WorkloadStatus{overlapping(canary, "holdfast-deploy-web")}},
		},
		"pods of other workloads the selector does not catch: no conflict": {
			policy:    policy("p", time.Hour, nil),
			work:      []Workload{canary},
			podLabels: append(append([]map[string]string{}, webPods...), canaryPods...),
			budgets:   []policyv1.PodDisruptionBudget{userBudget("by-hash", map[string]string{"pod-template-hash": "5d8f"})},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", canary, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "canary", Replicas: 2, State: holdfastv1alpha1.WorkloadBudgeted,
					Budget: "holdfast-deploy-canary", Message: "1 of 2 pods may be disrupted at once"}},
			},
		},
	})
}
