package cli

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// replacements are Ready. With --dry-run=server, the API server then judges a dry-run
// eviction of each pod the plan would evict.
func (o *DrainOptions) dryRun(ctx context.Context, snap snapshot.Predicted, p *plan.Plan) error {
	model := availability.Build(snap.Snapshot, o.Clock.Now())
	filter := o.filter()
	w := &errWriter{w: o.Out}
	stopped := 0
	var evicted []*corev1.Pod
	for i, wave := range p.Waves {
		w.println(fmt.Sprintf("Wave %d: %s", i+1, strings.Join(wave.Nodes, ", ")))
		table := &metav1.Table{ColumnDefinitions: dryRunColumns}
		left := map[snapshot.ObjectRef]*allowance{}
		for _, a := range wave.Allowances {
			left[a.Budget] = &allowance{allows: a.Allows, left: a.Allows}
		}
		surged := map[availability.WorkloadRef]bool{}
		for _, c := range wave.Capacity {
			surged[availability.WorkloadRef{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}] = c.Surged
		}
		for _, name := range wave.Nodes {
			node, ok := model.Node(name)
			if !ok {
				return fmt.Errorf("node %s is not in the cluster", name)
			}
			for _, m := range node.Members {
				if m.Pod == nil || m.Terminating {
					continue
				}
				step, why := preview(model, filter, m, left, m.Workload != nil && surged[m.Workload.WorkloadRef])
				switch step {
				case "blocked", "refused":
					stopped++
				case "evict":
					evicted = append(evicted, m.Pod)
				}
				workload := ""
				if m.Workload != nil {
					workload = m.Workload.Kind + "/" + m.Workload.Name
				}
				table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{name, m.Namespace + "/" + m.Name, step, why, workload}})
			}
		}
		if err := o.table.print(w, table); err != nil {
			return err
		}
		for _, c := range wave.Capacity {
			line := fmt.Sprintf("  %s %s/%s keeps %d of %d ready (%d on these nodes)", c.Kind, c.Namespace, c.Name, c.Ready, c.Desired, c.Evicted)
			if c.Surged {
				line += ", surged"
			}
			w.println(line)
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
	if o.DryRun == DryRunServer {
		refused, err := o.serverDryRun(ctx, w, evicted)
		if err != nil {
			return err
		}
		stopped += refused
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

// serverDryRun asks the API server to judge an eviction of each pod, with dryRun=All:
// each is judged against its budget as it is now, one at a time, so two pods of a budget
// that allows one are both allowed here. It returns how many the server refused.
func (o *DrainOptions) serverDryRun(ctx context.Context, w *errWriter, pods []*corev1.Pod) (int, error) {
	if len(pods) == 0 {
		w.println("The plan evicts no pod: nothing to ask the API server.")
		return 0, w.err
	}
	w.println("The API server's answers to dry-run evictions:")
	refused := 0
	for _, pod := range pods {
		err := o.cluster.kube.CoreV1().Pods(pod.Namespace).EvictV1(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, Preconditions: &metav1.Preconditions{UID: &pod.UID}},
		})
		switch {
		case err == nil:
			w.println(fmt.Sprintf("  allowed  %s/%s", pod.Namespace, pod.Name))
		case apierrors.IsTooManyRequests(err) || apierrors.IsConflict(err) || apierrors.IsInternalError(err) || apierrors.IsNotFound(err):
			refused++
			w.println(fmt.Sprintf("  refused  %s/%s: %v", pod.Namespace, pod.Name, err))
		default:
			return refused, fmt.Errorf("dry-run eviction of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return refused, w.err
}

// dryRunColumns are those of a wave's table: what becomes of each pod.
var dryRunColumns = []metav1.TableColumnDefinition{
	column("Node", false), column("Pod", false), column("Action", false), column("Reason", false), column("Workload", true),
}

// allowance is a budget's plan.Allowance in a wave, and what is left of it.
type allowance struct{ allows, left int32 }

// preview says what the drain would do with one pod, spending its budget in left: the
// eviction oracle's answer for the pod as the snapshot stands, then what the plan's wave
// lets each budget evict at once (plan.Allowance), shared by the pods of the wave.
// surged is whether the plan counts on the pod's DisruptionPolicy surging its workload
// in this wave.
func preview(model *availability.Model, filter drain.Filter, m *availability.Member, left map[snapshot.ObjectRef]*allowance, surged bool) (step, why string) {
	c := filter.Classify(m.Pod, model.DaemonSetExists)
	switch c.Verdict {
	case drain.Skip:
		return "skip", c.Reason
	case drain.Refuse:
		return "refused", c.Reason
	}
	ev := model.Eviction(m)
	switch {
	case surged && ev.Reason == availability.ReasonPolicyHeld:
		// Not asked of the API server with --dry-run=server: it refuses until the surge.
		return "surge", fmt.Sprintf("DisruptionPolicy %s starts an extra pod beside %s %s first: the budget lets the eviction through once that pod is Ready",
			availability.ManagedBy(ev.Budget.PDB), m.Workload.Kind, m.Workload.Name)
	case !ev.Allowed && ev.Permanent:
		return "blocked", ev.Message
	case !ev.Allowed:
		return "wait", ev.Message
	}
	var budget snapshot.ObjectRef
	switch {
	case ev.Reason == availability.ReasonDisruptionAllowed:
		budget = snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: m.Budgets[0].Namespace, Name: m.Budgets[0].Name}
	case ev.Reason == availability.ReasonNoBudget && m.Workload != nil:
		budget = snapshot.ObjectRef{Kind: m.Workload.Kind, Namespace: m.Workload.Namespace, Name: m.Workload.Name}
	}
	a := left[budget]
	switch {
	case a == nil:
		// No budget the wave counts, or a pod the budget lets go without spending a
		// disruption.
		return "evict", ev.Message
	case a.left > 0 && budget.Kind == snapshot.KindPodDisruptionBudget:
		a.left--
		return "evict", fmt.Sprintf("budget %s allows %d, %d left in this wave", budget.Name, a.allows, a.left)
	case a.left > 0:
		a.left--
		return "evict", fmt.Sprintf("no budget covers %s %s: the drain keeps one of its pods ready, %d more may go in this wave", budget.Kind, budget.Name, a.left)
	case budget.Kind == snapshot.KindPodDisruptionBudget:
		return "wait", fmt.Sprintf("budget %s has nothing left in this wave: evicted once an earlier replacement is Ready", budget.Name)
	}
	return "wait", fmt.Sprintf("no budget covers %s %s and the drain keeps one of its pods ready: evicted once an earlier replacement is Ready", budget.Kind, budget.Name)
}
