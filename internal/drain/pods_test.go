package drain

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// pod builds a running pod of namespace ns with label app=web, owned by a ReplicaSet
// unless changed by the options.
func pod(opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.OwnerReferences[0].Kind = kind }
}

func bare(p *corev1.Pod) { p.OwnerReferences = nil }

func withEmptyDir(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

// kubectl drain's rules, DaemonSets' included: a DaemonSet pod refuses the node unless
// --ignore-daemonsets leaves it; one whose DaemonSet is gone needs --force.
func TestClassify(t *testing.T) {
	gone := func(string, string) bool { return false }
	tests := map[string]struct {
		pod        *corev1.Pod
		filter     Filter
		daemonSets func(namespace, name string) bool
		want       Verdict
		reason     string
	}{
		"ReplicaSet pod is evicted":                            {pod: pod(), want: Evict},
		"StatefulSet pod is evicted":                           {pod: pod(ownedBy("StatefulSet")), want: Evict},
		"DaemonSet pod is refused without --ignore-daemonsets": {pod: pod(ownedBy("DaemonSet")), want: Refuse, reason: "--ignore-daemonsets"},
		"DaemonSet pod is refused even forced":                 {pod: pod(ownedBy("DaemonSet")), filter: Filter{Force: true}, want: Refuse, reason: "--ignore-daemonsets"},
		"DaemonSet pod is skipped with --ignore-daemonsets":    {pod: pod(ownedBy("DaemonSet")), filter: Filter{IgnoreDaemonSets: true}, want: Skip, reason: "DaemonSet"},
		"orphaned DaemonSet pod needs --force": {pod: pod(ownedBy("DaemonSet")), filter: Filter{IgnoreDaemonSets: true}, daemonSets: gone,
			want: Refuse, reason: "DaemonSet web-abc is gone: no controller would recreate the pod (use --force)"},
		"orphaned DaemonSet pod is evicted with --force": {pod: pod(ownedBy("DaemonSet")), filter: Filter{Force: true}, daemonSets: gone, want: Evict, reason: "orphan"},
		"orphaned DaemonSet pod with emptyDir needs both": {pod: pod(ownedBy("DaemonSet"), withEmptyDir), filter: Filter{Force: true}, daemonSets: gone,
			want: Refuse, reason: "--delete-emptydir-data"},
		"finished DaemonSet pod is evicted": {pod: pod(ownedBy("DaemonSet"), phase(corev1.PodSucceeded)), want: Evict},
		"mirror pod is skipped": {pod: pod(bare, func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
		}), want: Skip, reason: "mirror"},
		"bare pod is refused":                    {pod: pod(bare), want: Refuse, reason: "--force"},
		"bare pod with --force is evicted":       {pod: pod(bare), filter: Filter{Force: true}, want: Evict},
		"emptyDir is refused":                    {pod: pod(withEmptyDir), want: Refuse, reason: "--delete-emptydir-data"},
		"emptyDir with the flag is evicted":      {pod: pod(withEmptyDir), filter: Filter{DeleteEmptyDirData: true}, want: Evict},
		"finished bare pod loses nothing":        {pod: pod(bare, withEmptyDir, phase(corev1.PodSucceeded)), want: Evict},
		"bare pod with emptyDir needs both":      {pod: pod(bare, withEmptyDir), filter: Filter{DeleteEmptyDirData: true}, want: Refuse, reason: "--force"},
		"failed pod is evicted without flags":    {pod: pod(bare, phase(corev1.PodFailed)), want: Evict},
		"emptyDir reported before no-controller": {pod: pod(bare, withEmptyDir), want: Refuse, reason: "emptyDir"},
		"a pod --pod-selector leaves out is skipped, bare or DaemonSet's": {pod: pod(bare), filter: Filter{PodSelector: labels.SelectorFromSet(labels.Set{"app": "db"})},
			want: Skip, reason: "--pod-selector"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.filter.Classify(tc.pod, tc.daemonSets)
			if got.Verdict != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Classify = %+v, want verdict %d with a reason containing %q", got, tc.want, tc.reason)
			}
		})
	}
}

// A node's pods are judged all at once, as kubectl's GetPodsForDeletion does: every pod
// that needs a flag is named, sorted, and a pod deleting past
// --skip-wait-for-delete-timeout is not judged at all.
func TestRefused(t *testing.T) {
	named := func(name string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Name = name } }
	deleting := func(since time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0.Add(-since)} }
	}
	pods := []corev1.Pod{
		*pod(named("web-1")),
		*pod(named("scratch"), bare, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "scratch"} }),
		*pod(named("agent"), ownedBy("DaemonSet")),
		*pod(named("cache"), withEmptyDir),
		*pod(named("stuck"), bare, deleting(time.Minute)),
		*pod(named("leaving"), bare, deleting(time.Second)),
	}
	tests := map[string]struct {
		filter Filter
		want   []PodNote
	}{
		"no flags": {want: []PodNote{
			{Pod: "ns/agent", Reason: "managed by DaemonSet web-abc, which would put it back on the node (use --ignore-daemonsets)"},
			{Pod: "ns/cache", Reason: `emptyDir volume "cache" would lose its data (use --delete-emptydir-data)`},
			{Pod: "ns/leaving", Reason: "no controller would recreate the pod (use --force)"},
			{Pod: "ns/scratch", Reason: "no controller would recreate the pod (use --force)"},
		}},
		"every flag": {filter: Filter{Force: true, DeleteEmptyDirData: true, IgnoreDaemonSets: true}},
		"--pod-selector leaves the others out": {filter: Filter{PodSelector: labels.SelectorFromSet(labels.Set{"app": "web"})},
			want: []PodNote{
				{Pod: "ns/agent", Reason: "managed by DaemonSet web-abc, which would put it back on the node (use --ignore-daemonsets)"},
				{Pod: "ns/cache", Reason: `emptyDir volume "cache" would lose its data (use --delete-emptydir-data)`},
				{Pod: "ns/leaving", Reason: "no controller would recreate the pod (use --force)"},
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &Drainer{Clock: testingclock.NewFakeClock(t0), Options: Options{Filter: tc.filter, SkipWaitForDeleteTimeout: 10 * time.Second}}
			if diff := cmp.Diff(tc.want, d.refused(pods)); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNext(t *testing.T) {
	now := t0
	tests := map[string]struct {
		state PodState
		want  Action
	}{
		"ready to go":                      {state: PodState{PacingOpen: true}, want: ActEvict},
		"pacing closed":                    {state: PodState{}, want: ActWaitPacing},
		"refused a moment ago":             {state: PodState{PacingOpen: true, RetryAt: now.Add(time.Second)}, want: ActWaitRetry},
		"retry time reached":               {state: PodState{PacingOpen: true, RetryAt: now}, want: ActEvict},
		"evicted, terminating":             {state: PodState{Terminating: true}, want: ActWaitGone},
		"gone":                             {state: PodState{Gone: true, Terminating: true}, want: ActDone},
		"stopped":                          {state: PodState{Stopped: "budget never allows", PacingOpen: true}, want: ActStopped},
		"gone after being stopped is done": {state: PodState{Gone: true, Stopped: "x"}, want: ActDone},
		"terminating by someone else":      {state: PodState{Terminating: true, Stopped: "bare pod"}, want: ActWaitGone},
		"retry wait comes before pacing":   {state: PodState{RetryAt: now.Add(time.Second)}, want: ActWaitRetry},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Next(tc.state, now); got != tc.want {
				t.Errorf("Next = %d, want %d", got, tc.want)
			}
		})
	}
}

// A budget that allows a disruption when read after its refusal was refused on a status
// the disruption controller had not updated yet: the first retry goes at once.
func TestBudgetBackoff(t *testing.T) {
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		allows     bool
		want       time.Duration
	}{
		{1, 0, true, 0},
		{1, 0, false, time.Second},
		{2, 0, true, 2 * time.Second},               // refused again: the count is not just late
		{1, 3 * time.Second, true, 3 * time.Second}, // the API server asked for a delay
	}
	for _, tc := range tests {
		if got := BudgetBackoff(tc.attempt, tc.retryAfter, tc.allows); got != tc.want {
			t.Errorf("BudgetBackoff(%d, %s, %t) = %s, want %s", tc.attempt, tc.retryAfter, tc.allows, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, time.Second},
		{2, 0, 2 * time.Second},
		{3, 0, 4 * time.Second},
		{4, 0, 8 * time.Second},
		{50, 0, 8 * time.Second},
		{1, 10 * time.Second, 10 * time.Second}, // Retry-After wins when longer
		{4, 5 * time.Second, 8 * time.Second},
	}
	for _, tc := range tests {
		if got := Backoff(tc.attempt, tc.retryAfter); got != tc.want {
			t.Errorf("Backoff(%d, %s) = %s, want %s", tc.attempt, tc.retryAfter, got, tc.want)
		}
	}
}

func budget(name string, spec policyv1.PodDisruptionBudgetSpec, status policyv1.PodDisruptionBudgetStatus) policyv1.PodDisruptionBudget {
	if spec.Selector == nil {
		spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1}, Spec: spec, Status: status}
}

func managed(pdb policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudget {
	pdb.Labels = map[string]string{holdfastv1alpha1.PolicyLabel: "defaults"}
	return pdb
}

func TestNeverAllows(t *testing.T) {
	one := intstr.FromInt32(1)
	half := intstr.FromString("50%")
	zero := intstr.FromInt32(0)
	tests := map[string]struct {
		pdb  policyv1.PodDisruptionBudget
		want bool
	}{
		"minAvailable 1 on one replica": {
			pdb:  budget("single", policyv1.PodDisruptionBudgetSpec{MinAvailable: &one}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 1, DesiredHealthy: 1, CurrentHealthy: 1}),
			want: true,
		},
		"minAvailable 50% rounds up on one replica": {
			pdb:  budget("half", policyv1.PodDisruptionBudgetSpec{MinAvailable: &half}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 1, DesiredHealthy: 1}),
			want: true,
		},
		"maxUnavailable 0": {
			pdb:  budget("zero", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 3, DesiredHealthy: 3, CurrentHealthy: 3}),
			want: true,
		},
		"maxUnavailable 1 while a replacement starts: only waiting": {
			pdb: budget("web", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 6, DesiredHealthy: 5, CurrentHealthy: 5}),
		},
		"minAvailable 1 on one replica, managed by a DisruptionPolicy that surges it": {
			pdb: managed(budget("mysvc", policyv1.PodDisruptionBudgetSpec{MinAvailable: &one}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 1, DesiredHealthy: 1, CurrentHealthy: 1})),
		},
		"not yet observed by the disruption controller": {
			pdb: budget("new", policyv1.PodDisruptionBudgetSpec{MinAvailable: &one}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 0, ExpectedPods: 1, DesiredHealthy: 1}),
		},
		"no pods expected": {
			pdb: budget("empty", policyv1.PodDisruptionBudgetSpec{MinAvailable: &one}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DesiredHealthy: 1}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			msg, got := NeverAllows(&tc.pdb)
			if got != tc.want {
				t.Fatalf("NeverAllows = %v (%q), want %v", got, msg, tc.want)
			}
			if got && !strings.Contains(msg, "ns/"+tc.pdb.Name) {
				t.Errorf("the message %q does not name the budget", msg)
			}
		})
	}
}

func TestCovering(t *testing.T) {
	one := intstr.FromInt32(1)
	pdbs := []policyv1.PodDisruptionBudget{
		budget("web", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one}, policyv1.PodDisruptionBudgetStatus{}),
		budget("everything", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{}}, policyv1.PodDisruptionBudgetStatus{}),
		budget("db", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}, policyv1.PodDisruptionBudgetStatus{}),
	}
	other := budget("web", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one}, policyv1.PodDisruptionBudgetStatus{})
	other.Namespace = "elsewhere"
	pdbs = append(pdbs, other)

	got := Covering(pod(), pdbs)
	var names []string
	for _, p := range got {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if strings.Join(names, ",") != "ns/web,ns/everything" {
		t.Errorf("Covering = %v, want ns/web and ns/everything (policy/v1's empty selector covers all)", names)
	}
	if msg := Overlapping(got); !strings.Contains(msg, "ns/everything, ns/web") {
		t.Errorf("Overlapping = %q, want both budgets named", msg)
	}
}

func TestWithQueuedTaint(t *testing.T) {
	other := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	queued := corev1.Taint{Key: QueuedTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}
	tests := map[string]struct {
		taints      []corev1.Taint
		on          bool
		want        []corev1.Taint
		wantChanged bool
	}{
		"mark an unmarked node":         {taints: []corev1.Taint{other}, on: true, want: []corev1.Taint{other, queued}, wantChanged: true},
		"marking twice changes nothing": {taints: []corev1.Taint{other, queued}, on: true, want: []corev1.Taint{other, queued}},
		"unmark keeps the other taints": {taints: []corev1.Taint{queued, other}, on: false, want: []corev1.Taint{other}, wantChanged: true},
		"unmark an unmarked node":       {taints: []corev1.Taint{other}, on: false, want: []corev1.Taint{other}},
		"unmark the only taint":         {taints: []corev1.Taint{queued}, on: false, want: []corev1.Taint{}, wantChanged: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := slices.Clone(tc.taints)
			got, changed := WithQueuedTaint(tc.taints, tc.on)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.taints); diff != "" {
				t.Errorf("the input was modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPickNext(t *testing.T) {
	tests := map[string]struct {
		cands []Candidate
		want  int
	}{
		"fewest pods first":       {cands: []Candidate{{Node: "a", Pods: 3}, {Node: "b", Pods: 0}, {Node: "c", Pods: 2}}, want: 1},
		"ties in the given order": {cands: []Candidate{{Node: "a", Pods: 2}, {Node: "b", Pods: 2}}, want: 0},
		"a node with a paced workload goes after one without, even when lighter": {
			cands: []Candidate{{Node: "a", Pods: 1, Free: 0, Busy: "waiting for web"}, {Node: "b", Pods: 4, Free: 4}}, want: 1,
		},
		"a node with some pods to evict now beats one that would only wait": {
			cands: []Candidate{{Node: "a", Pods: 1, Busy: "x"}, {Node: "b", Pods: 3, Free: 1, Busy: "y"}}, want: 1,
		},
		"every node would only wait": {cands: []Candidate{{Node: "a", Pods: 1, Busy: "x"}, {Node: "b", Pods: 2, Busy: "y"}}, want: -1},
		"pods of workloads no slot holds first, even paced ones": {
			cands: []Candidate{{Node: "a", Pods: 2, Free: 2}, {Node: "b", Pods: 3, Free: 1, Busy: "web", Uncovered: 2}}, want: 1,
		},
		"a node with nothing to evict before all": {
			cands: []Candidate{{Node: "a", Pods: 3, Free: 3, Uncovered: 3}, {Node: "b"}}, want: 1,
		},
		"but never a node that would only wait": {
			cands: []Candidate{{Node: "a", Pods: 1, Free: 1}, {Node: "b", Pods: 2, Busy: "web", Uncovered: 2}}, want: 0,
		},
		"none": {want: -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PickNext(tc.cands); got != tc.want {
				t.Errorf("PickNext = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAnswerOf: each answer of the Eviction API to its meaning for the pod.
func TestAnswerOf(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for err, want := range map[error]Answer{
		nil:                                     AnsEvicted,
		apierrors.NewNotFound(gr, "web-0"):      AnsGone,
		apierrors.NewConflict(gr, "web-0", nil): AnsConflict,
		apierrors.NewTooManyRequests("budget", 0):                 AnsBudget,
		apierrors.NewInternalError(errors.New("several budgets")): AnsInternal,
		apierrors.NewForbidden(gr, "web-0", errors.New("no")):     AnsNever,
		apierrors.NewMethodNotSupported(gr, "create"):             AnsNever,
		apierrors.NewTimeoutError("slow", 1):                      AnsRetry,
	} {
		if got := AnswerOf(err); got != want {
			t.Errorf("AnswerOf(%v) = %d, want %d", err, got, want)
		}
	}
}
