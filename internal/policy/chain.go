package policy

import (
	"slices"
	"time"

	policyv1 "k8s.io/api/policy/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// verdict is the decision on one workload: its status entry, its budget, and what must
// change for it. Each step of the chain returns one; Decide gathers them.
type verdict struct {
	status holdfastv1alpha1.WorkloadStatus
	budget *policyv1.PodDisruptionBudget
	surges []Surge
	// annotations are the changes to its pods' do-not-disrupt annotation.
	annotations []PodAnnotation
	// requeueAfter is when the decision must be made again; 0 for only on a change.
	requeueAfter time.Duration
}

// after returns v with first's changes put before its own, as they were decided first.
func (v verdict) after(first verdict) verdict {
	// A set's later change replaces its earlier one: a surge started anew, not ended.
	earlier := slices.DeleteFunc(slices.Clone(first.surges), func(e Surge) bool {
		return slices.ContainsFunc(v.surges, func(l Surge) bool { return l.Name == e.Name })
	})
	v.surges = append(earlier, v.surges...)
	v.annotations = append(slices.Clone(first.annotations), v.annotations...)
	v.requeueAfter = sooner(v.requeueAfter, first.requeueAfter)
	return v
}

// sooner returns the earlier of two requeue delays, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// subject is one selected workload with what every step reads about it, read once.
type subject struct {
	o Observed
	w *Workload
	// winner is the policy that manages w; lost says it is another one.
	winner *holdfastv1alpha1.DisruptionPolicy
	lost   bool
	// other is another budget that covers a pod w's budget would cover, or ""; managed
	// says holdfast manages it (for another workload, or another policy).
	other   string
	managed bool
	// surge is where a surge of w stands.
	surge surgeProgress
	// replicas is the size status shows: the original one while a surge is on.
	replicas int32
	win      windowState
	// closed says that the policy's maintenance windows are all closed.
	closed bool
}

func newSubject(o Observed, w *Workload, win windowState, closed bool, siblings []*policyv1.PodDisruptionBudget, f losses) *subject {
	s := &subject{o: o, w: w, win: win, closed: closed, winner: WinnerOf(o.Policies, w)}
	s.other, s.managed = overlap(o, w, siblings)
	s.lost = s.winner != nil && s.winner.Name != o.Policy.Name
	s.surge = followSurge(o, w, f)
	if s.lost {
		// The policy that wins w moves its surge: two writing it would take the set
		// from each other.
		s.surge.changes.surges = nil
	}
	s.replicas = s.surge.size
	return s
}

// entry is w's status entry before any step decides its state.
func (s *subject) entry() holdfastv1alpha1.WorkloadStatus {
	return holdfastv1alpha1.WorkloadStatus{Kind: s.w.Kind, Name: s.w.Name, Replicas: s.replicas}
}

// step decides a workload when its case applies, and reports whether it did.
type step func(s *subject) (verdict, bool)

// workloadSteps is the per-workload decision, in order: the first step whose case
// applies decides. A surge in progress comes first, whatever else changed, since its
// extra pods must never stay.
var workloadSteps = []step{
	surging,
	overridden,
	noSelector,
	conflict,
	zeroReplicas,
	closedWindow,
	singleReplica,
	severalReplicas,
}

// decideWorkload runs the chain over one selected workload, with siblings the budgets
// the policy makes for its other workloads. A surge's own changes (a resize, a scale
// back, a poll) hold whichever step decides; the response to lost nodes comes last, as
// it adds to whatever else the workload needs.
func decideWorkload(o Observed, w *Workload, win windowState, closed bool, siblings []*policyv1.PodDisruptionBudget, f losses) verdict {
	s := newSubject(o, w, win, closed, siblings, f)
	for _, decide := range workloadSteps {
		if v, ok := decide(s); ok {
			v = f.respond(s, v.after(s.surge.changes))
			if !closed {
				recordStrategy(o.Policy, w, v.budget)
			}
			return v
		}
	}
	panic("severalReplicas decides every workload")
}

// surging keeps a surge in progress going, under the budget that lets its eviction
// through. Surges are absolute, so two policies moving one surge agree.
func surging(s *subject) (verdict, bool) {
	if !s.surge.active || s.lost {
		return verdict{}, false
	}
	st := s.entry()
	st.State = holdfastv1alpha1.WorkloadSurging
	if s.other != "" {
		st.Message = msgSurgeUnderOtherBudget(s.surge.message, s.other)
		return verdict{status: st}, true
	}
	st.Message, st.Budget = s.surge.message, BudgetName(s.w.Kind, s.w.Name)
	v := verdict{status: st, budget: surgeBudget(s.o, s.w)}
	return pace(s.o, s.w, s.w.Replicas, assess(s.o, s.w), v), true
}

// overridden leaves w to an older policy that selects it too.
func overridden(s *subject) (verdict, bool) {
	if !s.lost {
		return verdict{}, false
	}
	st := s.entry()
	st.State, st.Message = holdfastv1alpha1.WorkloadOverridden, msgOverridden(s.o.Policy, s.winner)
	return verdict{status: st}, true
}

// noSelector skips an object of a scale target whose pods cannot be told.
func noSelector(s *subject) (verdict, bool) {
	if s.w.Selector != nil {
		return verdict{}, false
	}
	st := s.entry()
	st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, msgNoSelector
	return verdict{status: st}, true
}

// conflict adds no budget where another budget covers a pod w's budget would cover.
func conflict(s *subject) (verdict, bool) {
	if s.other == "" {
		return verdict{}, false
	}
	st := s.entry()
	st.State, st.Blocked = holdfastv1alpha1.WorkloadConflict, availability.AllowsNone(existingBudget(s.o.Budgets, s.other))
	st.Message = msgConflict(s.other)
	if s.managed {
		st.Message = msgOverlap(s.other)
	}
	return verdict{status: st}, true
}

// zeroReplicas has nothing to budget.
func zeroReplicas(s *subject) (verdict, bool) {
	if s.replicas != 0 {
		return verdict{}, false
	}
	st := s.entry()
	st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, msgNoReplicas
	return verdict{status: st}, true
}

// closedWindow holds w with a budget that allows nothing until the next window.
func closedWindow(s *subject) (verdict, bool) {
	if !s.closed {
		return verdict{}, false
	}
	return held(s.o.Policy, s.w, s.entry(), s.win.nextOpening), true
}

// Surges reports whether p surges a single replica of kind before the eviction that
// drains its node: only a Deployment's, whose pods are interchangeable and whose scale is
// holdfast's to raise (a StatefulSet's pod keeps its identity; a custom kind's
// controller owns its scale).
func Surges(p *holdfastv1alpha1.DisruptionPolicy, kind string) bool {
	return p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge && kind == holdfastv1alpha1.KindDeployment
}

// Protects reports whether p holds the drain of a single replica's node, until
// escapeAfter when it sets one.
func Protects(p *holdfastv1alpha1.DisruptionPolicy) bool {
	return p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaProtect
}

// recordStrategy records on a single replica's budget the strategy that makes room for
// a drain of its node (availability.Opening), while it does: not outside every
// maintenance window, where no surge starts and Protect does not escape. Plans read how
// the budget opens from the budget itself.
func recordStrategy(p *holdfastv1alpha1.DisruptionPolicy, w *Workload, b *policyv1.PodDisruptionBudget) {
	if b == nil || w.Replicas != 1 || b.Name != BudgetName(w.Kind, w.Name) || !Protects(p) && !Surges(p, w.Kind) {
		return
	}
	o := availability.Opening{Strategy: p.Spec.SingleReplica}
	if Protects(p) && p.Spec.EscapeAfter != nil {
		o.EscapeAfter = &p.Spec.EscapeAfter.Duration
	}
	o.Record(b)
}

// singleReplica applies the policy's single-replica strategy, paced.
func singleReplica(s *subject) (verdict, bool) {
	if s.replicas != 1 || s.w.Kind == holdfastv1alpha1.KindDaemonSet {
		return verdict{}, false
	}
	p, w, st := s.o.Policy, s.w, s.entry()
	var v verdict
	switch {
	case Protects(p):
		v = protect(s.o, w, st)
	case Surges(p, w.Kind):
		v = surgeOrHandOff(s.o, w, st)
	case p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge && w.Custom():
		st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, msgCustomNotSurged(w.Kind)
		v = verdict{status: st}
	case p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge:
		st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, msgStatefulNotSurged
		v = verdict{status: st}
	default:
		st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, msgSingleSkipped
		v = verdict{status: st}
	}
	return pace(s.o, w, s.replicas, assess(s.o, w), v), true
}

// severalReplicas gives a workload of several replicas the policy's budget, paced, and
// under surge: WhenBlocked surges it when that budget blocks a drain.
func severalReplicas(s *subject) (verdict, bool) {
	v := budgeted(s.o.Policy, s.w, s.entry())
	h := assess(s.o, s.w)
	if blocksDrain(s.o, s.w, h, v) {
		if start, ok := startSurge(s.o, s.w); ok {
			v.status.State, v.status.Message = holdfastv1alpha1.WorkloadSurging, start.status.Message
			v.budget = surgeBudget(s.o, s.w)
			v = v.after(start)
		}
	}
	return pace(s.o, s.w, s.replicas, h, v), true
}
