package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// health is what a workload's pods say at o.Now.
type health struct {
	ready int32
	// young say which Ready pods are not proven yet: Ready for less than minReadySeconds.
	young []string
	// stuck say which pods have not been Ready for startGrace, on nodes not being drained.
	stuck []string
	// starting counts the pods not Ready for less than startGrace.
	starting int
	// next is the soonest a young pod is proven or a starting pod becomes stuck.
	next time.Time
}

// assess reads w's pods, and the proof of its surge set's. Pods not Ready on a node being drained are left out: the
// drain explains them, and their budget lets them go (unhealthyPodEvictionPolicy).
func assess(o Observed, w *Workload) health {
	var h health
	soon := func(t time.Time) {
		if h.next.IsZero() || t.Before(h.next) {
			h.next = t
		}
	}
	gate := minReady(o.Policy, w)
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		switch {
		case pod.Ready:
			h.ready++
			// Condition times are stored in whole seconds, truncated: counting from the
			// end of that second never opens the gate early.
			proven := pod.Since.Add(time.Second + gate)
			if gate > 0 && o.Now.Before(proven) {
				h.young = append(h.young, fmt.Sprintf("pod %s Ready since %s, counted available from %s", pod.Name, stamp(pod.Since), stamp(proven)))
				soon(proven)
			}
		case BeingDrained(o.Nodes[pod.Node]):
		case o.Now.Before(pod.Since.Add(startGrace)):
			h.starting++
			soon(pod.Since.Add(startGrace))
		case pod.Node == "":
			h.stuck = append(h.stuck, fmt.Sprintf("pod %s not scheduled since %s", pod.Name, stamp(pod.Since)))
		default:
			h.stuck = append(h.stuck, fmt.Sprintf("pod %s not Ready on node %s since %s", pod.Name, pod.Node, stamp(pod.Since)))
		}
	}
	// A surge set's pods count in the budget too: one not proven yet takes a
	// disruption off it like the Deployment's own.
	if w.surging() {
		for _, pod := range w.Surge.Pods {
			if proven := pod.Since.Add(time.Second + gate); pod.Ready && gate > 0 && o.Now.Before(proven) {
				h.young = append(h.young, fmt.Sprintf("pod %s Ready since %s, counted available from %s", pod.Name, stamp(pod.Since), stamp(proven)))
				soon(proven)
			}
		}
	}
	slices.Sort(h.young)
	slices.Sort(h.stuck)
	return h
}

// stamp renders a time for a status message. Messages carry times, not ages, so that
// they stay the same from one reconcile to the next and status is not rewritten.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// minReady is how long a pod of w must have been Ready before its budget counts it: the
// policy's minReadySeconds, or the workload's own when the policy leaves it unset.
func minReady(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) time.Duration {
	if p.Spec.MinReadySeconds != nil {
		return time.Duration(*p.Spec.MinReadySeconds) * time.Second
	}
	return time.Duration(w.MinReadySeconds) * time.Second
}

// pace applies minReadySeconds to the budget v keeps for w (size pods wanted) and
// reports w degraded. Each pod Ready for less than minReadySeconds takes one disruption
// off the budget until it is proven, and a reconcile is due the moment it is: the gate
// always opens by the clock. A pod that is not Ready is not paced (the disruption
// controller already counts it unavailable); past startGrace it makes w Degraded.
func pace(o Observed, w *Workload, size int32, h health, v verdict) verdict {
	st := &v.status
	if v.budget == nil || st.State != holdfastv1alpha1.WorkloadBudgeted && st.State != holdfastv1alpha1.WorkloadSurging {
		return v
	}
	if !h.next.IsZero() {
		v.requeueAfter = sooner(v.requeueAfter, h.next.Sub(o.Now))
	}
	if minReady(o.Policy, w) > 0 && (w.Ready < w.Replicas || len(h.young) > 0) {
		// Until the replacements are proven, the next reconcile must read the pods even
		// if the workload's Ready count is whole again.
		if v.budget.Annotations == nil {
			v.budget.Annotations = map[string]string{}
		}
		v.budget.Annotations[holdfastv1alpha1.PacingAnnotation] = "true"
	}
	// A surge's message stays first; a budget's plain one gives way to what is wrong.
	var notes []string
	if st.State == holdfastv1alpha1.WorkloadSurging {
		notes = append(notes, st.Message)
	} else if len(h.stuck) > 0 && !w.RollingOut && h.ready < size {
		st.State = holdfastv1alpha1.WorkloadDegraded
		notes = append(notes, msgDegraded(h.ready, size, h.stuck))
	}
	// A budget that already allows nothing (a single replica's minAvailable 1) has nothing
	// to pace.
	if tight := tighten(v.budget.Spec, w.Replicas+w.extra(), int32(len(h.young))); len(h.young) > 0 && !equality.Semantic.DeepEqual(tight, v.budget.Spec) {
		v.budget.Spec = tight
		if st.State == holdfastv1alpha1.WorkloadBudgeted {
			st.State = holdfastv1alpha1.WorkloadPacing
		}
		notes = append(notes, msgPacing(h.young, minReady(o.Policy, w)))
	}
	if len(notes) > 0 {
		st.Message = strings.Join(notes, "; ")
	}
	return v
}

// tighten takes n disruptions off what spec allows at replicas pods, in the form the
// disruption controller follows: maxUnavailable stays maxUnavailable. What spec allows
// is counted from the floor, so that a maxUnavailable above the replicas allows only the
// replicas.
func tighten(spec policyv1.PodDisruptionBudgetSpec, replicas, n int32) policyv1.PodDisruptionBudgetSpec {
	floor := availability.Floor(spec, replicas)
	if spec.MaxUnavailable != nil {
		spec.MaxUnavailable = ptr.To(intstr.FromInt32(max(0, replicas-floor-n)))
		return spec
	}
	spec.MinAvailable = ptr.To(intstr.FromInt32(min(replicas, floor+n)))
	return spec
}
