package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// BudgetWatch samples the test namespace's PodDisruptionBudgets and records every sample
// where the Ready pods a budget covers are below its floor.
type BudgetWatch struct {
	mu         sync.Mutex
	samples    int
	violations []string
	// lowest is each budget's fewest Ready pods seen, and floor its desiredHealthy.
	lowest map[string]int32
	floor  map[string]int32
	stop   context.CancelFunc
	done   chan struct{}
}

// WatchBudgets starts sampling every interval until Stop. A budget's floor is the
// desiredHealthy the disruption controller computed for it; Ready pods are counted
// directly from the pods, not from the budget's status, which lags.
func (f *Framework) WatchBudgets(interval time.Duration) *BudgetWatch {
	return WatchBudgetsOf(f.Ctx, interval, func(ctx context.Context) ([]policyv1.PodDisruptionBudget, ReadyCounter, error) {
		pdbs, err := f.Clientset.PolicyV1().PodDisruptionBudgets(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		pods, err := f.Clientset.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		return pdbs.Items, func(sel labels.Selector, _ string) int32 {
			var ready int32
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp == nil && PodReady(p) && sel.Matches(labels.Set(p.Labels)) {
					ready++
				}
			}
			return ready
		}, nil
	})
}

// ReadyCounter counts the Ready pods of a namespace that a budget's selector matches,
// leaving out those being deleted.
type ReadyCounter func(sel labels.Selector, namespace string) int32

// BudgetSampler reads the budgets to check and how to count their pods, once a sample.
type BudgetSampler func(ctx context.Context) ([]policyv1.PodDisruptionBudget, ReadyCounter, error)

// WatchBudgetsOf is WatchBudgets over whatever budgets and pods read returns, such as a
// whole cluster's from informers, where listing every interval would cost too much.
func WatchBudgetsOf(ctx context.Context, interval time.Duration, read BudgetSampler) *BudgetWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &BudgetWatch{lowest: map[string]int32{}, floor: map[string]int32{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if pdbs, ready, err := read(ctx); err == nil {
				w.record(pdbs, ready)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *BudgetWatch) record(pdbs []policyv1.PodDisruptionBudget, count ReadyCounter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	for _, pdb := range pdbs {
		key := pdb.Namespace + "/" + pdb.Name
		if pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DesiredHealthy > w.floor[key] {
			w.floor[key] = pdb.Status.DesiredHealthy
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		ready := count(sel, pdb.Namespace)
		if low, ok := w.lowest[key]; !ok || ready < low {
			w.lowest[key] = ready
		}
		if ready < w.floor[key] {
			w.violations = append(w.violations, fmt.Sprintf("%s: %d Ready, floor %d at %s",
				key, ready, w.floor[key], time.Now().Format(time.TimeOnly+".000")))
		}
	}
}

// Stop ends the sampling and returns the number of samples and the violations seen.
func (w *BudgetWatch) Stop() (samples int, violations []string) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.violations
}

// Lowest describes each budget's fewest Ready pods seen against its floor.
func (w *BudgetWatch) Lowest() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for name, low := range w.lowest {
		parts = append(parts, fmt.Sprintf("%s min %d (floor %d)", name, low, w.floor[name]))
	}
	return strings.Join(parts, ", ")
}

// Uncordon marks a node schedulable again.
func (f *Framework) Uncordon(node string) {
	f.T.Helper()
	f.setUnschedulable(context.Background(), node, false)
}

// Kubectl returns the path of the testbed's kubectl, of the same release as the control
// plane, building the testbed's binaries first if needed.
func Kubectl() (string, error) {
	out, err := testbed("build").Output()
	if err != nil {
		return "", fmt.Errorf("finding the testbed binaries: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return filepath.Join(lines[len(lines)-1], "kubectl"), nil
}

// NodeDrained reports whether no pod of the test namespace is on the node.
func (f *Framework) NodeDrained(ctx context.Context, node string) (bool, error) {
	pods, err := f.Clientset.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return false, err
	}
	return len(pods.Items) == 0, nil
}
