package disruptionpolicy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Event reasons, one per decision a human would want to know about.
const (
	EventBudgetConflict     = "BudgetConflict"
	EventNoDisruption       = "NoDisruptionAllowed"
	EventSingleReplicaNoPDB = "SingleReplicaUnbudgeted"
	EventSurgeStarted       = "SurgeStarted"
	EventSurgeFinished      = "SurgeFinished"
	EventDrainEscaped       = "DrainEscaped"
	EventOverridden         = "Overridden"
	EventDegraded           = "WorkloadDegraded"
	EventPaced              = "DisruptionPaced"
	EventUnreadable         = "ScaleTargetUnreadable"
	EventNodeLost           = "NodeLost"
	EventRecovered          = "Recovered"
	EventFenced             = "Fenced"
	EventFencingNotAllowed  = "FencingNotAllowed"
	EventZoneDisrupted      = "ZoneDisrupted"
	EventZoneSettled        = "ZoneSettled"
)

// stateEvents maps a workload state to the Event that announces it.
var stateEvents = map[holdfastv1alpha1.WorkloadState]struct{ typ, reason string }{
	holdfastv1alpha1.WorkloadConflict:     {corev1.EventTypeWarning, EventBudgetConflict},
	holdfastv1alpha1.WorkloadNoDisruption: {corev1.EventTypeWarning, EventNoDisruption},
	holdfastv1alpha1.WorkloadSkipped:      {corev1.EventTypeWarning, EventSingleReplicaNoPDB},
	holdfastv1alpha1.WorkloadSurging:      {corev1.EventTypeNormal, EventSurgeStarted},
	holdfastv1alpha1.WorkloadEscaped:      {corev1.EventTypeWarning, EventDrainEscaped},
	holdfastv1alpha1.WorkloadOverridden:   {corev1.EventTypeNormal, EventOverridden},
	holdfastv1alpha1.WorkloadDegraded:     {corev1.EventTypeWarning, EventDegraded},
	holdfastv1alpha1.WorkloadPacing:       {corev1.EventTypeNormal, EventPaced},
	holdfastv1alpha1.WorkloadRecovering:   {corev1.EventTypeWarning, EventNodeLost},
}

// statusEvents returns the Events that explain the move from one status of a policy in
// namespace to the next, in the order of cur's workloads, each related to the workload
// it names. They are derived from status, so that a repeated reconcile or a restarted
// operator does not repeat them.
func statusEvents(namespace string, old, cur holdfastv1alpha1.DisruptionPolicyStatus) []announce.Event {
	was := make(map[string]holdfastv1alpha1.WorkloadStatus, len(old.Workloads))
	for _, w := range old.Workloads {
		was[policy.WorkloadKey(w.Kind, w.Name)] = w
	}
	var out []announce.Event
	// A scale target the operator may not read is fixed by a human granting RBAC: say
	// so once per new message, not on every poll.
	if c := meta.FindStatusCondition(cur.Conditions, holdfastv1alpha1.ConditionBudgetsReady); c != nil && c.Reason == holdfastv1alpha1.ReasonScaleTargetUnreadable {
		if prev := meta.FindStatusCondition(old.Conditions, holdfastv1alpha1.ConditionBudgetsReady); prev == nil || prev.Message != c.Message {
			out = append(out, announce.Warning(EventUnreadable, c.Message))
		}
	}
	// Fencing asked for and not (wholly) allowed: a cluster administrator's decision,
	// said once per new message.
	if c := meta.FindStatusCondition(cur.Conditions, holdfastv1alpha1.ConditionFencingAllowed); c != nil && c.Reason != holdfastv1alpha1.ReasonFencingConsented {
		if prev := meta.FindStatusCondition(old.Conditions, holdfastv1alpha1.ConditionFencingAllowed); prev == nil || prev.Message != c.Message {
			out = append(out, announce.Warning(EventFencingNotAllowed, c.Message))
		}
	}
	for _, w := range cur.Workloads {
		before, seen := was[policy.WorkloadKey(w.Kind, w.Name)]
		ref := workloadRef(namespace, w)
		out = append(out, zoneEvents(before.Zone, w, ref)...)
		prev := before.State
		if seen && prev == w.State {
			continue
		}
		switch prev {
		case holdfastv1alpha1.WorkloadSurging:
			out = append(out, announce.Normal(EventSurgeFinished, fmt.Sprintf("%s %s: surge over, its extra pods removed beside its %s", w.Kind, w.Name, policy.Plural(w.Replicas, "replica"))).About(ref))
		case holdfastv1alpha1.WorkloadRecovering:
			out = append(out, announce.Normal(EventRecovered, fmt.Sprintf("%s %s: no pod left on a lost node, %d replicas", w.Kind, w.Name, w.Replicas)).About(ref))
		}
		if e, ok := stateEvents[w.State]; ok {
			out = append(out, announce.Event{Type: e.typ, Reason: e.reason, Message: fmt.Sprintf("%s %s: %s", w.Kind, w.Name, w.Message), Related: ref})
		}
	}
	return out
}

// zoneEvents announce a change of the zone w's zone-aware budgets let be disrupted: the
// end of zone was, and the start of w.Zone.
func zoneEvents(was string, w holdfastv1alpha1.WorkloadStatus, ref *corev1.ObjectReference) []announce.Event {
	if was == w.Zone {
		return nil
	}
	var out []announce.Event
	if was != "" {
		out = append(out, announce.Normal(EventZoneSettled, fmt.Sprintf("%s %s: zone %s is no longer being disrupted", w.Kind, w.Name, was)).About(ref))
	}
	if w.Zone != "" {
		out = append(out, announce.Normal(EventZoneDisrupted, fmt.Sprintf("%s %s: zone %s is being disrupted, every other zone is held", w.Kind, w.Name, w.Zone)).About(ref))
	}
	return out
}

// workloadRef refers to a workload of the status. Custom kinds go without apiVersion,
// which status does not keep; kind, namespace and name tell them apart.
func workloadRef(namespace string, w holdfastv1alpha1.WorkloadStatus) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{Kind: w.Kind, Namespace: namespace, Name: w.Name}
	switch w.Kind {
	case holdfastv1alpha1.KindDeployment, holdfastv1alpha1.KindStatefulSet, holdfastv1alpha1.KindDaemonSet:
		ref.APIVersion = "apps/v1"
	}
	return ref
}
