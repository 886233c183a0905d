package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// dryRun prints the plan the drain would follow: for each wave, what becomes of every pod,
// counting each budget's disruptions across all the pods of the wave (where kubectl's
// server-side dry run checks every pod against the budget as it is now, two pods of one
// budget in a wave count as two), and the capacity each workload keeps; then the nodes
// that cannot be drained and why. Within a wave a pod beyond its budget waits for pacing;
// between waves the budgets are whole again, because pacing holds each node until its
// replacements are Ready.
func (o *DrainOptions) dryRun(snap *snapshot.Snapshot, p *plan.Plan) error {
	model := availability.Build(snap, o.Clock.Now())
	filter := drain.Filter{Force: o.Force, DeleteEmptyDirData: o.DeleteEmptyDirData}
	w := &errWriter{w: o.Out}
	stopped := 0
	for i, wave := range p.Waves {
		w.println(fmt.Sprintf("Wave %d: %s", i+1, strings.Join(wave.Nodes, ", ")))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		left := map[*availability.Budget]int32{}
		for _, name := range wave.Nodes {
			node, ok := model.Node(name)
			if !ok {
				return fmt.Errorf("node %s is not in the cluster", name)
			}
			fmt.Fprintf(tw, "  %s\t\t\n", name)
			for _, m := range node.Members {
				if m.Pod == nil || m.Terminating {
					continue
				}
				step, why := preview(model, filter, m, left)
				if step == "blocked" || step == "refused" {
					stopped++
				}
				fmt.Fprintf(tw, "    %s\t%s/%s\t%s\n", step, m.Namespace, m.Name, why)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range wave.Capacity {
			w.println(fmt.Sprintf("  %s %s/%s keeps %d of %d ready (%d on these nodes)", c.Kind, c.Namespace, c.Name, c.Ready, c.Desired, c.Evicted))
		}
	}
	for _, b := range p.Blocked {
		w.println("Cannot drain " + b.Node + ":")
		for _, r := range b.Reasons {
			when := "until it changes"
			if !r.Permanent {
				when = "for now"
			}
			w.println(fmt.Sprintf("  %s/%s/%s (%s, %s): %s", r.Kind, r.Namespace, r.Name, r.Type, when, r.Message))
		}
	}
	if len(p.Waves) > 0 {
		w.println(fmt.Sprintf("%d wave(s); the budgets and --max-concurrent allow no fewer than %d.", len(p.Waves), p.LowerBound.Waves))
	}
	if stopped > 0 || len(p.Blocked) > 0 {
		w.println(fmt.Sprintf("Dry run, nothing changed: %d node(s) cannot be drained, %d pod(s) would stop the drain.", len(p.Blocked), stopped))
		if w.err != nil {
			return w.err
		}
		return &ExitCodeError{Code: ExitIncomplete}
	}
	w.println("Dry run, nothing changed: every node would drain.")
	return w.err
}

// preview says what the drain would do with one pod, spending its budget in left: the
// eviction oracle's answer for the pod as the snapshot stands, then each budget's
// disruptions shared by the pods of the wave.
func preview(model *availability.Model, filter drain.Filter, m *availability.Member, left map[*availability.Budget]int32) (step, why string) {
	c := filter.Classify(m.Pod)
	switch c.Verdict {
	case drain.Skip:
		return "skip", c.Reason
	case drain.Refuse:
		return "refused", c.Reason
	}
	ev := model.Eviction(m)
	switch {
	case !ev.Allowed && ev.Permanent:
		return "blocked", ev.Message
	case !ev.Allowed:
		return "wait", ev.Message
	case ev.Reason != availability.ReasonDisruptionAllowed:
		// No budget, or a pod the budget lets go without spending a disruption.
		return "evict", ev.Message
	}
	b := m.Budgets[0]
	if _, seen := left[b]; !seen {
		left[b] = b.Status.DisruptionsAllowed
	}
	if left[b] > 0 {
		left[b]--
		return "evict", fmt.Sprintf("budget %s allows %d, %d left in this wave", b.Name, b.Status.DisruptionsAllowed, left[b])
	}
	return "wait", fmt.Sprintf("budget %s has nothing left in this wave: evicted once an earlier replacement is Ready", b.Name)
}
