//go:build e2e

package disruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// settle bounds waits for the control plane and the operator to converge.
const settle = 60 * time.Second

func TestMain(m *testing.M) {
	// Pods take 3 s to become Ready, like an application starting: a surge that let the
	// eviction through before its new pod was Ready would show as time at zero Ready.
	framework.Main(m, framework.Options{Nodes: 5, Zones: 3, PodReadyDelay: 3 * time.Second})
}

// env is one test's cluster, with a client that knows holdfast's types.
type env struct {
	*framework.Framework
	c client.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	f := framework.New(t)
	return &env{Framework: f, c: f.Holdfast(&holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{})}
}

// policy creates a DisruptionPolicy over the workloads labelled tier=name.
func (e *env) policy(name string, mod func(*holdfastv1alpha1.DisruptionPolicySpec)) *holdfastv1alpha1.DisruptionPolicy {
	e.T.Helper()
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": name}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	if mod != nil {
		mod(&p.Spec)
	}
	if err := e.c.Create(e.Ctx, p); err != nil {
		e.T.Fatalf("creating DisruptionPolicy %s: %v", name, err)
	}
	return p
}

// deployment creates a Deployment selected by the policy tier, changed by mods, and
// waits until it is Ready.
func (e *env) deployment(name, tier string, replicas int32, mods ...func(*appsv1.Deployment)) *appsv1.Deployment {
	e.T.Helper()
	d := e.Deployment(name, replicas)
	d.Labels["tier"] = tier
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	for _, mod := range mods {
		mod(d)
	}
	e.Create(d)
	e.WaitReady(d)
	return d
}

// budget returns the managed budget of a workload, nil when there is none.
func (e *env) budget(ctx context.Context, kind, name string) (*policyv1.PodDisruptionBudget, error) {
	pdb, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).Get(ctx, policy.BudgetName(kind, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pdb, err
}

// waitManagedBudget waits until the budget holdfast keeps for the workload satisfies ok
// (nil: is absent); framework.WaitBudget waits on a named budget's count.
func (e *env) waitManagedBudget(kind, name, what string, ok func(*policyv1.PodDisruptionBudget) bool) {
	e.T.Helper()
	e.waitManagedBudgetWithin(settle, kind, name, what, ok)
}

// waitManagedBudgetWithin is waitManagedBudget for changes that take longer than settle.
func (e *env) waitManagedBudgetWithin(timeout time.Duration, kind, name, what string, ok func(*policyv1.PodDisruptionBudget) bool) {
	e.T.Helper()
	e.Eventually(timeout, fmt.Sprintf("budget of %s %s: %s", kind, name, what), func(ctx context.Context) (bool, error) {
		pdb, err := e.budget(ctx, kind, name)
		if err != nil {
			return false, err
		}
		if ok == nil {
			return pdb == nil, nil
		}
		return pdb != nil && ok(pdb), nil
	})
}

// waitState waits until the policy's status lists the workload in state.
func (e *env) waitState(p *holdfastv1alpha1.DisruptionPolicy, kind, name string, state holdfastv1alpha1.WorkloadState) holdfastv1alpha1.WorkloadStatus {
	e.T.Helper()
	var got holdfastv1alpha1.WorkloadStatus
	e.Eventually(settle, fmt.Sprintf("%s %s to be %s", kind, name, state), func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		i := slices.IndexFunc(cur.Status.Workloads, func(w holdfastv1alpha1.WorkloadStatus) bool { return w.Kind == kind && w.Name == name })
		if i < 0 || cur.Status.ObservedGeneration != cur.Generation {
			return false, nil
		}
		got = cur.Status.Workloads[i]
		return got.State == state, nil
	})
	return got
}

// waitEvent waits for an Event of the given reason on obj and returns its note.
func (e *env) waitEvent(obj client.Object, reason string) string {
	e.T.Helper()
	return e.WaitEvents(obj, reason, 1)[0].Note
}

func (e *env) getDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	e.T.Helper()
	cur := &appsv1.Deployment{}
	if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(d), cur); err != nil {
		e.T.Fatal(err)
	}
	return cur
}

// onlyPod returns the one live pod of a single-replica Deployment.
func (e *env) onlyPod(d *appsv1.Deployment) *corev1.Pod {
	e.T.Helper()
	var pod *corev1.Pod
	e.Eventually(settle, "the only pod of "+d.Name, func(ctx context.Context) (bool, error) {
		pods, err := e.Pods(ctx, framework.SelectorOf(d))
		if err != nil {
			return false, err
		}
		var live []corev1.Pod
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
				live = append(live, p)
			}
		}
		if len(live) != 1 {
			return false, nil
		}
		pod = &live[0]
		return true, nil
	})
	return pod
}

// evictUntil retries the eviction of pod, as kubectl drain does, until it is accepted;
// it returns how long that took.
func (e *env) evictUntil(pod *corev1.Pod, timeout time.Duration) time.Duration {
	e.T.Helper()
	start := time.Now()
	e.Eventually(timeout, "the eviction of "+pod.Name, func(ctx context.Context) (bool, error) {
		err := e.Evict(ctx, pod)
		if apierrors.IsTooManyRequests(err) {
			return false, nil
		}
		return err == nil || apierrors.IsNotFound(err), err
	})
	return time.Since(start)
}

// timeToBudget scales d and returns how long until a watch on its managed budget sees
// an event for which seen returns true. The watch starts before the scale, so the figure
// is the reaction plus the watch's delivery, without polling granularity.
func (e *env) timeToBudget(d *appsv1.Deployment, replicas int32, seen func(watch.Event) bool) time.Duration {
	e.T.Helper()
	name := disruptionBudget(d.Name)
	list, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).List(e.Ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.Ctx, settle)
	defer cancel()
	w, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.T.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	e.Scale(d, replicas)
	for ev := range w.ResultChan() {
		if seen(ev) {
			return time.Since(start)
		}
	}
	e.T.Fatalf("budget %s: the awaited event did not come within %s", name, settle)
	return 0
}

func added(ev watch.Event) bool   { return ev.Type == watch.Added }
func deleted(ev watch.Event) bool { return ev.Type == watch.Deleted }

// expecting is an event of a budget whose status expects n pods.
func expecting(n int32) func(watch.Event) bool {
	return func(ev watch.Event) bool {
		pdb, ok := ev.Object.(*policyv1.PodDisruptionBudget)
		return ok && ev.Type == watch.Modified && pdb.Status.ExpectedPods == n
	}
}

// kubectl returns what the testbed's kubectl prints for args (`get …`, `describe …`) in
// the test's namespace.
func (e *env) kubectl(args ...string) string {
	e.T.Helper()
	kubectl, err := framework.Kubectl()
	if err != nil {
		e.T.Fatal(err)
	}
	out, err := exec.Command(kubectl, append([]string{"--kubeconfig", e.Kubeconfig, "-n", e.Namespace}, args...)...).CombinedOutput()
	if err != nil {
		e.T.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// livePods returns the pods of d that are not terminating, by name.
func (e *env) livePods(ctx context.Context, d *appsv1.Deployment) ([]corev1.Pod, error) {
	pods, err := e.Pods(ctx, framework.SelectorOf(d))
	if err != nil {
		return nil, err
	}
	live := slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	slices.SortFunc(live, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return live, nil
}

// setReady writes a pod's Ready and ContainersReady conditions as a kubelet whose
// readiness probe fails (or passes again) would, changed at since. kwok marks only
// Pending pods Ready, so it leaves the change alone.
func (e *env) setReady(pod *corev1.Pod, ready bool, since time.Time) {
	e.T.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	at := metav1.NewTime(since)
	conds := []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: at}, {Type: corev1.ContainersReady, Status: status, LastTransitionTime: at}}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Clientset.CoreV1().Pods(pod.Namespace).Patch(e.Ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		e.T.Fatalf("setting pod %s Ready=%t: %v", pod.Name, ready, err)
	}
}

// readySince returns when a pod's Ready condition became True, or false if it is not
// Ready.
func readySince(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// gauge reads one series of holdfast_disruptionpolicy_workloads.
func (e *env) gauge(p *holdfastv1alpha1.DisruptionPolicy, state string) (float64, bool) {
	return e.metric("holdfast_disruptionpolicy_workloads", map[string]string{"namespace": p.Namespace, "policy": p.Name, "state": state})
}

// metric reads the gauge of that name and exactly those labels from the registry the
// in-process operator exports.
func (e *env) metric(name string, labels map[string]string) (float64, bool) {
	e.T.Helper()
	v, ok, err := framework.Metric(name, labels)
	if err != nil {
		e.T.Fatal(err)
	}
	return v, ok
}

// autoscaler creates a HorizontalPodAutoscaler of bounds 1-1 over the Deployment name and
// returns a function that reads its bounds, which holdfast leaves as they are.
func (e *env) autoscaler(name string) func() (lo, hi int32) {
	e.T.Helper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    1,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)},
			}}},
		},
	}
	e.Create(hpa)
	return func() (int32, int32) {
		e.T.Helper()
		cur := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(hpa), cur); err != nil {
			e.T.Fatal(err)
		}
		return ptr.Deref(cur.Spec.MinReplicas, 0), cur.Spec.MaxReplicas
	}
}

// surgeSet returns the surge set holdfast keeps beside the Deployment d, nil for none.
func (e *env) surgeSet(d *appsv1.Deployment) *appsv1.ReplicaSet {
	e.T.Helper()
	rs, err := e.SurgeSet(e.Ctx, d)
	if err != nil {
		e.T.Fatal(err)
	}
	return rs
}

// extra returns how many extra pods the surge set of d asks for: -1 for no set.
func (e *env) extra(d *appsv1.Deployment) int32 {
	e.T.Helper()
	if rs := e.surgeSet(d); rs != nil {
		return ptr.Deref(rs.Spec.Replicas, 1)
	}
	return -1
}

// untouched fails the test when the spec of the Deployment d, as created, was written
// since: holdfast surges beside a workload and never writes it.
func (e *env) untouched(d *appsv1.Deployment) {
	e.T.Helper()
	if cur := e.getDeployment(d); cur.Generation != d.Generation || ptr.Deref(cur.Spec.Replicas, 1) != ptr.Deref(d.Spec.Replicas, 1) {
		e.T.Errorf("Deployment %s: generation %d, %d replicas; want %d and %d as created (holdfast wrote its spec)",
			d.Name, cur.Generation, ptr.Deref(cur.Spec.Replicas, 1), d.Generation, ptr.Deref(d.Spec.Replicas, 1))
	}
}
