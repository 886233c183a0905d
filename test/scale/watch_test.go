//go:build scale

package scale

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// byLabel indexes pods by namespace/key=value for each of their labels, so that a
// budget's pods are found without scanning the cluster every 200 ms.
const byLabel = "namespace-label"

// cluster is the benchmark's own view of every pod and budget, from informers: listing
// tens of thousands of pods every 200 ms would load the API server more than what is
// measured.
type cluster struct {
	pods cache.SharedIndexInformer
	pdbs cache.SharedIndexInformer
}

func watchCluster(ctx context.Context, cs kubernetes.Interface) (*cluster, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(trimPod))
	c := &cluster{pods: factory.Core().V1().Pods().Informer(), pdbs: factory.Policy().V1().PodDisruptionBudgets().Informer()}
	if err := c.pods.AddIndexers(cache.Indexers{byLabel: func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		keys := make([]string, 0, len(p.Labels))
		for k, v := range p.Labels {
			keys = append(keys, p.Namespace+"/"+k+"="+v)
		}
		return keys, nil
	}}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("syncing the informer of %v", typ)
		}
	}
	return c, nil
}

// trimPod keeps what readiness and placement need.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	var ready []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = append(ready, c)
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, DeletionTimestamp: p.DeletionTimestamp, ResourceVersion: p.ResourceVersion},
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status:     corev1.PodStatus{Phase: p.Status.Phase, Conditions: ready},
	}, nil
}

// podCounts are the pods that are not being deleted, and how many of them are Ready.
func (c *cluster) podCounts() (live, ready int) {
	for _, obj := range c.pods.GetStore().List() {
		p := obj.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if framework.PodReady(p) {
			ready++
		}
	}
	return live, ready
}

// waitSettled waits until exactly pods pods exist, all Ready, and budgets budgets, each
// counted by the disruption controller, and returns how long that took.
func (c *cluster) waitSettled(ctx context.Context, pods, budgets int, timeout time.Duration, progress func(string)) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	last := time.Time{}
	for {
		live, ready := c.podCounts()
		n, stale := c.budgetCounts()
		if live == pods && ready == pods && n == budgets && stale == 0 {
			return time.Since(start), nil
		}
		state := fmt.Sprintf("%d pods, %d Ready, want %d; %d budgets, want %d, %d not counted yet", live, ready, pods, n, budgets, stale)
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("after %s: %s", timeout, state)
		}
		if time.Since(last) > 30*time.Second {
			progress(fmt.Sprintf("%6.0fs %s", time.Since(start).Seconds(), state))
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// budgetCounts are the budgets, and how many of them the disruption controller has not
// counted since their last change.
func (c *cluster) budgetCounts() (n, stale int) {
	for _, obj := range c.pdbs.GetStore().List() {
		pdb := obj.(*policyv1.PodDisruptionBudget)
		n++
		if pdb.Status.ObservedGeneration != pdb.Generation {
			stale++
		}
	}
	return n, stale
}

// watchBudgets samples every budget of the cluster every interval, as the e2e tests'
// sampler does for one namespace.
func (c *cluster) watchBudgets(ctx context.Context, interval time.Duration) *framework.BudgetWatch {
	return framework.WatchBudgetsOf(ctx, interval, func(context.Context) ([]policyv1.PodDisruptionBudget, framework.ReadyCounter, error) {
		objs := c.pdbs.GetStore().List()
		pdbs := make([]policyv1.PodDisruptionBudget, 0, len(objs))
		for _, obj := range objs {
			pdbs = append(pdbs, *obj.(*policyv1.PodDisruptionBudget))
		}
		return pdbs, c.readyMatching, nil
	})
}

// readyMatching counts the Ready pods of namespace that sel matches, looking up the
// pods by one of sel's equalities when it has one.
func (c *cluster) readyMatching(sel labels.Selector, namespace string) int32 {
	var candidates []any
	reqs, _ := sel.Requirements()
	indexed := false
	for _, r := range reqs {
		if vals := r.Values().UnsortedList(); len(vals) == 1 && (r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals || r.Operator() == selection.In) {
			candidates, _ = c.pods.GetIndexer().ByIndex(byLabel, namespace+"/"+r.Key()+"="+vals[0])
			indexed = true
			break
		}
	}
	if !indexed {
		candidates, _ = c.pods.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	}
	var ready int32
	for _, obj := range candidates {
		p := obj.(*corev1.Pod)
		if p.DeletionTimestamp == nil && framework.PodReady(p) && sel.Matches(labels.Set(p.Labels)) {
			ready++
		}
	}
	return ready
}
