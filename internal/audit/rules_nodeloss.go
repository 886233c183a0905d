package audit

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// recoveryStartup is the start-up the audit assumes for a replacement: a pod's own is
// not in manifests, and plan failure measures it on a live cluster.
const recoveryStartup = 10 * time.Second

// recoveryNote says how long w takes to be whole again after its node's crash, alone
// and with the policy that manages it, by the model the operator acts on.
func recoveryNote(m *availability.Model, w *availability.Workload) string {
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	r := policy.RecoveryOf(p, w.Kind, policy.UnreachableToleration(w.Template), recoveryStartup, policy.Spread{}, policy.StatedConsent(p))
	switch {
	case r.WithNever:
		return fmt.Sprintf("after its node's crash it is not whole again until the node returns (%s)", r.How)
	case r.AloneNever:
		return fmt.Sprintf("after its node's crash it is whole again in about %s with holdfast (%s), never without", r.With, r.How)
	case r.With < r.Alone:
		return fmt.Sprintf("after its node's crash it is whole again in about %s (%s; Kubernetes alone: %s)", r.With, r.How, r.Alone)
	}
	return fmt.Sprintf("after its node's crash it is whole again in about %s (%s)", r.Alone, r.How)
}

func longUnreachableToleration(m *availability.Model, w *availability.Workload) *Result {
	tol := policy.UnreachableToleration(w.Template)
	if w.Kind == snapshot.KindDaemonSet || tol >= 0 && tol <= policy.DefaultToleration {
		return nil
	}
	how := fmt.Sprintf("for %s", tol)
	if tol < 0 {
		how = "for ever"
	}
	return &Result{
		Message: fmt.Sprintf("%s tolerates node.kubernetes.io/unreachable %s: %s.", describe(w), how, recoveryNote(m, w)),
		Fix: snippet(describe(w)+": tolerate an unreachable node no longer than the default (or drop the toleration)",
			obj{"spec": obj{"template": obj{"spec": obj{"tolerations": []obj{{"key": corev1.TaintNodeUnreachable, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}}}}}}),
	}
}

func stuckOnNodeLoss(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindStatefulSet {
		return nil
	}
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	if policy.StatedConsent(p).Fence {
		return nil
	}
	ns := w.Namespace
	return &Result{
		Message: fmt.Sprintf("%s: %s, one replica short meanwhile.", describe(w), recoveryNote(m, w)),
		// Fencing releases every StatefulSet pod on the node: a cluster administrator's
		// ClusterDisruptionPolicy consents to it (a namespace's own policy needs the
		// operator's --allow-namespaced-fencing).
		Fix: snippet("release its pods once their node is proven down (a cluster administrator's policy: the taint releases every StatefulSet pod on the node)",
			obj{"apiVersion": "holdfast.dev/v1alpha1", "kind": "ClusterDisruptionPolicy", "metadata": obj{"name": "fencing"},
				"spec": obj{"namespaceSelector": obj{"matchLabels": obj{"kubernetes.io/metadata.name": ns}},
					"template": obj{"selector": obj{}, "maxUnavailable": 1, "nodeFailure": obj{"fencing": "Verified"}}}}),
	}
}

func singleReplicaNoFailureResponse(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindDeployment || w.Desired != 1 {
		return nil
	}
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	if p == nil || p.Spec.NodeFailure == nil || p.Spec.NodeFailure.Surge != holdfastv1alpha1.FailureSurgeNever {
		return nil // HF013 speaks for a single replica no policy manages
	}
	return &Result{
		Message: fmt.Sprintf("%s runs a single replica and DisruptionPolicy %s sets nodeFailure.surge: Never: %s.", describe(w), p.Name, recoveryNote(m, w)),
		Fix: snippet("let holdfast start a second replica when its node is lost",
			obj{"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": obj{"name": p.Name, "namespace": w.Namespace},
				"spec": obj{"nodeFailure": obj{"surge": "Replace"}}}),
	}
}
