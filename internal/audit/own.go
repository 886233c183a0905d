package audit

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Own is one of holdfast's own objects, with what the operator will decide for it: the
// subject of the rules on DisruptionPolicies and NodeCompanions.
type Own struct {
	Kind, Namespace, Name string
	// Outcome is a DisruptionPolicy's decision; nil for a NodeCompanion.
	Outcome *predict.Outcome
	// Companion is the NodeCompanion; nil for a DisruptionPolicy.
	Companion *holdfastv1alpha1.NodeCompanion
	// Snapshot is the cluster as the operator will make it.
	Snapshot snapshot.Predicted
}

// RunOwn applies the rules on holdfast's own objects: every policy in effect (cluster
// policies' copies included) and every NodeCompanion of s.
func RunOwn(s snapshot.Predicted, outcomes []predict.Outcome, origins map[snapshot.ObjectRef]snapshot.Origin) []Finding {
	var objects []Own
	for i := range outcomes {
		p := &outcomes[i].Policy
		objects = append(objects, Own{Kind: snapshot.KindDisruptionPolicy, Namespace: p.Namespace, Name: p.Name, Outcome: &outcomes[i], Snapshot: s})
	}
	for i := range s.NodeCompanions {
		nc := &s.NodeCompanions[i]
		objects = append(objects, Own{Kind: snapshot.KindNodeCompanion, Namespace: nc.Namespace, Name: nc.Name, Companion: nc, Snapshot: s})
	}
	var out []Finding
	for _, r := range rules {
		if r.Own == nil {
			continue
		}
		for i := range objects {
			o := &objects[i]
			if res := r.Own(o); res != nil {
				f := Finding{Rule: r.ID, Severity: r.Severity, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Message: res.Message, Fix: res.Fix}
				if at, ok := origins[snapshot.ObjectRef{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}]; ok {
					f.File, f.Line = at.File, at.Line
				}
				out = append(out, f)
			}
		}
	}
	return out
}

// Merge puts two sorted lists of findings into one, in Run's order.
func Merge(a, b []Finding) []Finding {
	return byObject(slices.Concat(a, b))
}

// describeOwn names the object, and the ClusterDisruptionPolicy a copy comes from.
func describeOwn(o *Own) string {
	if o.Outcome != nil {
		if cp := o.Outcome.Policy.Labels[holdfastv1alpha1.ClusterPolicyLabel]; cp != "" {
			return fmt.Sprintf("DisruptionPolicy %s (ClusterDisruptionPolicy %s's copy)", o.Name, cp)
		}
	}
	return o.Kind + " " + o.Name
}

func invalidWindow(o *Own) *Result {
	if o.Outcome == nil {
		return nil
	}
	c := meta.FindStatusCondition(o.Outcome.Decision.Status.Conditions, holdfastv1alpha1.ConditionWindowOpen)
	if c == nil || c.Reason != holdfastv1alpha1.ReasonInvalidWindow {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s: %s. The window never opens: outside the policy's other windows its budgets allow no voluntary disruption, so drains wait until it is fixed.", describeOwn(o), c.Message),
		Fix: snippet(describeOwn(o)+": a standard five-field cron schedule and an IANA time zone",
			obj{"spec": obj{"maintenanceWindows": []obj{{"schedule": "0 2 * * 6", "duration": "4h", "timeZone": "Europe/Berlin"}}}}),
	}
}

func policySelectsNothing(o *Own) *Result {
	if o.Outcome == nil || o.Outcome.Decision.Status.Selected > 0 {
		return nil
	}
	c := meta.FindStatusCondition(o.Outcome.Decision.Status.Conditions, holdfastv1alpha1.ConditionBudgetsReady)
	if c != nil && c.Reason == holdfastv1alpha1.ReasonInvalidSelector {
		return &Result{Message: fmt.Sprintf("%s selects nothing: %s.", describeOwn(o), c.Message), Fix: snippet(describeOwn(o)+": a valid selector", obj{"spec": obj{"selector": obj{"matchLabels": obj{"app": "web"}}}})}
	}
	return &Result{
		Message: fmt.Sprintf("%s selects no Deployment, StatefulSet or DaemonSet of namespace %s: it makes no budget, and the workloads it was written for are not protected by it.", describeOwn(o), o.Namespace),
		Fix:     snippet(describeOwn(o)+": select the workloads' own labels (an empty selector selects every workload of the namespace)", obj{"spec": obj{"selector": obj{}}}),
	}
}

func policyOverridden(o *Own) *Result {
	if o.Outcome == nil {
		return nil
	}
	st := o.Outcome.Decision.Status
	if st.Selected == 0 || int(st.Selected) != len(st.Workloads) ||
		slices.ContainsFunc(st.Workloads, func(w holdfastv1alpha1.WorkloadStatus) bool { return w.State != holdfastv1alpha1.WorkloadOverridden }) {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s selects %s, but another policy that comes first selects every one of them too: %s. This policy's settings apply to none of them.",
			describeOwn(o), policy.Plural(st.Selected, "workload"), st.Workloads[0].Message),
		Fix: "# narrow one of the two policies' selectors so that each workload is selected by the policy meant for it, or delete this one",
	}
}

func companionSpecInvalid(o *Own) *Result {
	nc := o.Companion
	if nc == nil || len(nc.Spec.DecodeErrors) == 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("NodeCompanion %s: the operator cannot use its spec (%s): it makes and changes nothing for it and reports Ready=False, reason InvalidSpec. The CRD does not check the template's fields, so the API server accepts them.",
			nc.Name, strings.Join(nc.Spec.DecodeErrors, "; ")),
		Fix: "# correct or remove the fields named; `kubectl explain pod.spec` lists a pod's fields",
	}
}

func companionDaemonSetMissing(o *Own) *Result {
	nc := o.Companion
	if nc == nil || nc.Spec.DaemonSet == nil {
		return nil
	}
	ns := policy.CompanionNamespace(nc)
	if slices.ContainsFunc(o.Snapshot.DaemonSets, func(d appsv1.DaemonSet) bool { return d.Namespace == ns && d.Name == nc.Spec.DaemonSet.Name }) {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("NodeCompanion %s follows DaemonSet %s/%s, which is not there: the operator leaves its companions as they are and reports TargetNotFound, so new nodes get no companion and the nodes' drains are not paced by it.",
			nc.Name, ns, nc.Spec.DaemonSet.Name),
		Fix: snippet("NodeCompanion "+nc.Name+": name the DaemonSet it runs next to (and its namespace, when another)", obj{"spec": obj{"daemonSet": obj{"name": "node-agent", "namespace": ns}}}),
	}
}

func handedOff(o *Own) *Result {
	if o.Outcome == nil {
		return nil
	}
	d := o.Outcome.Decision
	var surges []string
	for _, sc := range policy.EffectsOf[policy.Surge](d.Effects) {
		if sc.HandOff == "" || sc.Replicas == 0 {
			continue
		}
		at := slices.IndexFunc(d.Status.Workloads, func(w holdfastv1alpha1.WorkloadStatus) bool {
			return w.Kind == holdfastv1alpha1.KindDeployment && w.Name == sc.Deployment
		})
		if at >= 0 {
			surges = append(surges, fmt.Sprintf("Deployment %s %s", sc.Name, d.Status.Workloads[at].Message))
		}
	}
	if len(surges) == 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s hands a single replica's node over to its autoscaler: %s.", describeOwn(o), strings.Join(surges, "; ")),
		Fix:     "# nothing to fix: the surge lets the autoscaler take the node without an outage. To keep such a node instead, singleReplica: Protect",
	}
}
