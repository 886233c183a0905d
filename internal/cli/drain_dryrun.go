package cli

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// dryRun prints the plan the drain would follow: for each wave, the plan's step for every
// pod (plan.Step: each budget's disruptions counted across all the pods of the wave,
// where kubectl's server-side dry run checks every pod against the budget as it is now,
// so two pods of one budget in a wave count as two), and the capacity each workload
// keeps; then the nodes that cannot be drained and why. With --dry-run=server, the API
// server then judges a dry-run eviction of each pod the plan would evict.
func (o *DrainOptions) dryRun(ctx context.Context, snap snapshot.Predicted, p *plan.Plan) error {
	w := &errWriter{w: o.Out}
	stopped := 0
	var evicted []types.NamespacedName
	for i, wave := range p.Waves {
		w.println(fmt.Sprintf("Wave %d: %s", i+1, strings.Join(wave.Nodes, ", ")))
		table := &metav1.Table{ColumnDefinitions: dryRunColumns}
		for _, s := range wave.Steps {
			switch s.Action {
			case plan.ActionBlocked, plan.ActionRefused:
				stopped++
			case plan.ActionEvict:
				evicted = append(evicted, types.NamespacedName{Namespace: s.Namespace, Name: s.Pod})
			}
			table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{s.Node, s.Namespace + "/" + s.Pod, string(s.Action), s.Why, s.Workload}})
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
		refused, err := o.serverDryRun(ctx, w, podsOf(snap, evicted))
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

// podsOf are the snapshot's pods of the given names, in their order.
func podsOf(snap snapshot.Predicted, names []types.NamespacedName) []*corev1.Pod {
	index := make(map[types.NamespacedName]*corev1.Pod, len(snap.Pods))
	for i := range snap.Pods {
		index[types.NamespacedName{Namespace: snap.Pods[i].Namespace, Name: snap.Pods[i].Name}] = &snap.Pods[i]
	}
	var out []*corev1.Pod
	for _, n := range names {
		if p := index[n]; p != nil {
			out = append(out, p)
		}
	}
	return out
}
