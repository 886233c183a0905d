package disruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// One decision, applied once. On random clusters (drains, a lost node with or without
// proof, single replicas under Surge and Protect, surges in progress, zone-aware and
// fenced policies, budgets left over), each policy's effects as the reconciler decides them from its sources
// equal predict's from a snapshot of the same objects; and once the reconciler has made
// them, the cluster holds what predict's snapshot holds. A write dropped from either
// side fails it.
//
// The cluster is the controller-runtime fake client: the frozen world a comparison of
// two readings needs (a real control plane would move under it); the end-to-end suites
// run the same reconciler against one.
func TestOperatorDoesWhatPredictSays(t *testing.T) {
	kinds := map[string]int{}
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			for kind, n := range differ(t, randomCluster(seed), settingsOf(seed)) {
				kinds[kind] += n
			}
		})
	}
	// The clusters must reach every kind of effect, and zone-aware budgets through a surge
	// and a recovery, or the test proves less than it says.
	for _, kind := range []string{"ApplyBudget", "DeleteBudget", "PodZone", "Surge",
		"PodAnnotation " + policy.DoNotDisrupt.Key + " set", "PodAnnotation " + policy.SafeToEvict.Key + " set", "PodAnnotation " + policy.SafeToEvict.Key + " removed",
		"NodeTaint " + holdfastv1alpha1.LostTaintKey, "NodeTaint " + holdfastv1alpha1.OutOfServiceTaintKey, "NodeTaint " + holdfastv1alpha1.HandOffTaintKey,
		zonedWhile(holdfastv1alpha1.WorkloadSurging), zonedWhile(holdfastv1alpha1.WorkloadRecovering)} {
		if kinds[kind] == 0 {
			t.Errorf("no cluster made an effect %s (made: %v)", kind, kinds)
		}
	}
}

// zonedWhile names the count of workloads given zone-aware budgets in state.
func zonedWhile(state holdfastv1alpha1.WorkloadState) string {
	return "zone-aware while " + string(state)
}

var differentialNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// caGroupLabel names the cluster-autoscaler node group of every node of the random
// clusters; half the settings read it, and hand nodes over to cluster-autoscaler.
const caGroupLabel = "example.com/node-group"

// settingsOf are the operator's settings for cluster seed: mostly those that let every
// policy fence, so that fences are made; a third without them, brakes of each kind; and
// half with cluster-autoscaler's node groups.
func settingsOf(seed uint64) policy.Settings {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := policy.Settings{Failure: policy.FailureSettings{
		NamespacedFencing: rng.IntN(3) > 0,
		FenceAfter:        rng.IntN(2) == 0,
		BrakeShare:        []float64{0, 0.5}[rng.IntN(2)],
		BrakeWindow:       []time.Duration{0, 5 * time.Second}[rng.IntN(2)],
	}}
	s.Autoscalers.NodeGroupLabel = []string{"", caGroupLabel}[rng.IntN(2)]
	return s
}

// differ compares the operator run with settings with predict on objs and returns how
// many effects of each kind the operator made.
func differ(t *testing.T, objs []client.Object, settings policy.Settings) map[string]int {
	t.Helper()
	ctx := context.Background()
	c := fakeCluster(t, objs)
	before := snapshotOf(t, c)
	predicted, outcomes := predict.Operator(before, differentialNow, settings)

	r := differentialReconciler(t, c)
	r.settings = settings
	made := map[string]int{}
	for _, o := range outcomes {
		obs, err := r.observe(ctx, &o.Policy, differentialNow)
		if err != nil {
			t.Fatal(err)
		}
		d := policy.Decide(obs)
		if diff := cmp.Diff(o.Decision.Effects, d.Effects, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("policy %s/%s: effects (-predict +operator):\n%s", o.Policy.Namespace, o.Policy.Name, diff)
		}
		for _, e := range d.Effects {
			made[effectKind(e)]++
		}
		for _, w := range d.Status.Workloads {
			if w.Zone != "" {
				made[zonedWhile(w.State)]++
			}
		}
	}
	for _, o := range outcomes {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&o.Policy)}); err != nil {
			t.Fatalf("reconciling %s/%s: %v", o.Policy.Namespace, o.Policy.Name, err)
		}
	}
	if diff := cmp.Diff(stateOf(predicted.Snapshot), stateOf(snapshotOf(t, c)), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the cluster after the reconciles (-predicted +made):\n%s", diff)
	}
	return made
}

func effectKind(e policy.Effect) string {
	switch e := e.(type) {
	case policy.NodeTaint:
		return "NodeTaint " + e.Key
	case policy.PodAnnotation:
		if e.Set {
			return "PodAnnotation " + e.Mark.Key + " set"
		}
		return "PodAnnotation " + e.Mark.Key + " removed"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", e), "policy.")
}

// state is what the operator's writes change, in a form both sides read alike.
type state struct {
	// Budgets are the budgets' specs and policy labels, by namespace/name.
	Budgets map[string]string
	// SurgeSets are the surge sets' replicas and hand-off, by namespace/name.
	SurgeSets map[string]string
	// Taints are holdfast's taints on each node.
	Taints map[string][]string
	// Pods are the zone label and holdfast's marks of the pods that carry any.
	Pods map[string]string
}

func stateOf(s *snapshot.Snapshot) state {
	st := state{Budgets: map[string]string{}, SurgeSets: map[string]string{}, Taints: map[string][]string{}, Pods: map[string]string{}}
	for _, b := range s.PodDisruptionBudgets {
		spec, _ := json.Marshal(b.Spec)
		st.Budgets[b.Namespace+"/"+b.Name] = string(spec) + " policy=" + b.Labels[holdfastv1alpha1.PolicyLabel]
	}
	for _, rs := range s.ReplicaSets {
		if rs.Labels[holdfastv1alpha1.SurgeOfLabel] != "" {
			st.SurgeSets[rs.Namespace+"/"+rs.Name] = fmt.Sprintf("%d %q", ptr.Deref(rs.Spec.Replicas, 0), rs.Annotations[holdfastv1alpha1.HandOffAnnotation])
		}
	}
	for _, n := range s.Nodes {
		for _, taint := range n.Spec.Taints {
			if strings.HasPrefix(taint.Key, "holdfast.dev/") || taint.Key == holdfastv1alpha1.OutOfServiceTaintKey {
				st.Taints[n.Name] = append(st.Taints[n.Name], taint.Key+"="+taint.Value+":"+string(taint.Effect))
			}
		}
		if a := n.Annotations[holdfastv1alpha1.FencedAnnotation]; a != "" {
			st.Taints[n.Name] = append(st.Taints[n.Name], "fenced "+a)
		}
	}
	for _, pod := range s.Pods {
		zone, marked := pod.Labels[holdfastv1alpha1.ZoneLabel]
		desc := "zone " + zone
		for _, m := range policy.PodMarks {
			value, by := pod.Annotations[m.Key], pod.Annotations[m.By]
			marked = marked || value != "" || by != ""
			desc += fmt.Sprintf(", %s %q by %q", m.Key, value, by)
		}
		if marked {
			st.Pods[pod.Namespace+"/"+pod.Name] = desc
		}
	}
	return st
}

func fakeCluster(t *testing.T, objs []client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := holdfastv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The fake client indexes metadata-only lists by their metadata: the pods' nodes are
	// looked up by name (no pod moves).
	nodeOf := map[string]string{}
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			nodeOf[pod.Namespace+"/"+pod.Name] = pod.Spec.NodeName
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&holdfastv1alpha1.DisruptionPolicy{}).
		WithIndex(&corev1.Pod{}, podNodeField, func(o client.Object) []string { return []string{nodeOf[o.GetNamespace()+"/"+o.GetName()]} }).
		Build()
}

// differentialReconciler is the reconciler over c, at differentialNow, with the node
// watcher's health read as one that has watched the Leases for a while.
func differentialReconciler(t *testing.T, c client.WithWatch) *reconciler {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(differentialNow)
	reg := prometheus.NewRegistry()
	rec := events.NewFakeRecorder(1000)
	m, err := newMetrics(reg, c, c)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := invalidspec.New(reg, "DisruptionPolicy", rec)
	if err != nil {
		t.Fatal(err)
	}
	win, err := newInvalidWindowsGauge(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := &reconciler{client: c, live: phaseFiltered{c}, cache: c, clock: clk, recorder: rec, metrics: m, invalid: inv, windows: win, ledger: contest.NewLedger(clk)}
	// The watcher has watched for a while: it saw every Lease's last renewal happen.
	r.nodes = newNodeWatcher(c, c, c, clk, r.ledger)
	clk.SetTime(differentialNow.Add(-10 * time.Minute))
	if _, _, err := r.nodes.read(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(differentialNow)
	h, _, err := r.nodes.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.nodes.health.Store(&h)
	return r
}

// phaseFiltered is c with the pod lists' field selectors on status.phase (the room
// check's unfinished pods) evaluated on the listed pods: the fake client evaluates only
// indexed key=value selectors.
type phaseFiltered struct{ client.WithWatch }

func (c phaseFiltered) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	pods, ok := list.(*corev1.PodList)
	if !ok || lo.FieldSelector == nil || !strings.Contains(lo.FieldSelector.String(), "status.phase") {
		return c.WithWatch.List(ctx, list, opts...)
	}
	sel := lo.FieldSelector
	lo.FieldSelector = nil
	if err := c.WithWatch.List(ctx, pods, lo); err != nil {
		return err
	}
	pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return !sel.Matches(fields.Set{"status.phase": string(p.Status.Phase)})
	})
	return nil
}

// snapshotOf reads the objects the operator reads into a live snapshot.
func snapshotOf(t *testing.T, c client.Reader) *snapshot.Snapshot {
	t.Helper()
	ctx := context.Background()
	s := &snapshot.Snapshot{Source: snapshot.SourceLive}
	lists := []struct {
		list client.ObjectList
		into func(client.ObjectList)
	}{
		{&corev1.NodeList{}, func(l client.ObjectList) { s.Nodes = l.(*corev1.NodeList).Items }},
		{&corev1.NamespaceList{}, func(l client.ObjectList) { s.Namespaces = l.(*corev1.NamespaceList).Items }},
		{&corev1.PodList{}, func(l client.ObjectList) { s.Pods = l.(*corev1.PodList).Items }},
		{&coordinationv1.LeaseList{}, func(l client.ObjectList) { s.Leases = l.(*coordinationv1.LeaseList).Items }},
		{&appsv1.DeploymentList{}, func(l client.ObjectList) { s.Deployments = l.(*appsv1.DeploymentList).Items }},
		{&appsv1.StatefulSetList{}, func(l client.ObjectList) { s.StatefulSets = l.(*appsv1.StatefulSetList).Items }},
		{&appsv1.ReplicaSetList{}, func(l client.ObjectList) { s.ReplicaSets = l.(*appsv1.ReplicaSetList).Items }},
		{&policyv1.PodDisruptionBudgetList{}, func(l client.ObjectList) { s.PodDisruptionBudgets = l.(*policyv1.PodDisruptionBudgetList).Items }},
		{&holdfastv1alpha1.DisruptionPolicyList{}, func(l client.ObjectList) { s.DisruptionPolicies = l.(*holdfastv1alpha1.DisruptionPolicyList).Items }},
	}
	for _, l := range lists {
		if err := c.List(ctx, l.list); err != nil {
			t.Fatal(err)
		}
		l.into(l.list)
	}
	return s
}

// randomCluster is 6 nodes in 3 zones, those of one namespace's pods at most in a
// cluster-autoscaler node group, at most one being drained, and one lost (proven down or not) or five, and two namespaces, each
// with a DisruptionPolicy of random strategies over 1 to 3 Deployments and StatefulSets
// of 1 to 4 Ready replicas, at times a Deployment's surge set with one extra pod, and at
// times a budget the policy left behind; the first pod of a first workload that is a
// Deployment carries the policy's safe-to-evict mark.
func randomCluster(seed uint64) []client.Object {
	rnd := rand.New(rand.NewPCG(seed, 41))
	long := metav1.NewTime(differentialNow.Add(-time.Hour))
	var objs []client.Object
	zones := []string{"a", "b", "c"}
	nodes := make([]string, 6)
	lost, drained := map[int]bool{}, -1
	switch rnd.IntN(6) {
	case 0, 1, 2:
		lost[rnd.IntN(6)] = true
	case 3:
		// Most of the cluster at once: the brake, and the lost pods read by namespace.
		for i := range 5 {
			lost[i] = true
		}
	}
	if rnd.IntN(2) == 0 {
		drained = rnd.IntN(6)
	}
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%d", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[i], CreationTimestamp: long,
			Labels: map[string]string{corev1.LabelHostname: nodes[i], corev1.LabelTopologyZone: zones[i%3]}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
		renewed := differentialNow.Add(-2 * time.Second)
		if lost[i] {
			renewed = differentialNow.Add(-2 * time.Minute)
			if rnd.IntN(2) == 0 {
				n.Annotations = map[string]string{holdfastv1alpha1.NodeDownAnnotation: "true"}
			}
		}
		if i == drained && !lost[i] {
			n.Spec.Unschedulable = true
		}
		objs = append(objs, n, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: nodes[i]},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(nodes[i]), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}})
	}
	for nsIndex := range 2 {
		ns := fmt.Sprintf("ns%d", nsIndex)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}})
		p := randomPolicy(rnd, ns, long)
		objs = append(objs, p)
		for w := range 1 + rnd.IntN(3) {
			placed := make([]string, 1+rnd.IntN(4))
			for i := range placed {
				placed[i] = nodes[rnd.IntN(len(nodes))]
			}
			name := fmt.Sprintf("w%d", w)
			if rnd.IntN(3) == 0 {
				objs = append(objs, statefulSet(ns, name, placed, long)...)
			} else {
				d := deployment(ns, name, placed, long)
				if w == 0 {
					// Marked safe to evict by the policy, as during a hand-off to
					// cluster-autoscaler: the mark stays while one runs, else goes.
					d[2].SetAnnotations(map[string]string{policy.SafeToEvict.Key: "true", policy.SafeToEvict.By: p.Name})
				}
				objs = append(objs, d...)
				if rnd.IntN(3) == 0 {
					objs = append(objs, surgeSet(p, d[0].(*appsv1.Deployment), nodes[rnd.IntN(len(nodes))], long)...)
				}
			}
		}
		if rnd.IntN(3) == 0 {
			objs = append(objs, leftBudget(p, "gone"))
		}
	}
	inGroups(objs)
	return objs
}

// inGroups puts the nodes that run the pods of one namespace at most in a
// cluster-autoscaler node group. A hand-off of a node reads the budgets of every pod on
// it, and the test reconciles the namespaces one after the other, where predict decides
// them all on the cluster as it was: a budget the first makes would block the second's
// hand-off of a node they share.
func inGroups(objs []client.Object) {
	namespaces := map[string]map[string]bool{}
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			if namespaces[pod.Spec.NodeName] == nil {
				namespaces[pod.Spec.NodeName] = map[string]bool{}
			}
			namespaces[pod.Spec.NodeName][pod.Namespace] = true
		}
	}
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok && len(namespaces[n.Name]) <= 1 {
			n.Labels[caGroupLabel] = "general"
		}
	}
}

func randomPolicy(rnd *rand.Rand, ns string, created metav1.Time) *holdfastv1alpha1.DisruptionPolicy {
	p := &holdfastv1alpha1.DisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults", UID: types.UID("policy-" + ns), Generation: 1, CreationTimestamp: created},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	p.Spec.SingleReplica = []holdfastv1alpha1.SingleReplicaStrategy{"", holdfastv1alpha1.SingleReplicaSurge, holdfastv1alpha1.SingleReplicaProtect}[rnd.IntN(3)]
	if rnd.IntN(3) == 0 {
		p.Spec.ZoneAware = &holdfastv1alpha1.ZoneAwareSpec{MaxUnavailable: intstr.FromInt32(1)}
	}
	if rnd.IntN(2) == 0 {
		p.Spec.NodeFailure = &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified}
	}
	return p
}

// leftBudget is a budget p made for a workload that is gone.
func leftBudget(p *holdfastv1alpha1.DisruptionPolicy, workload string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: policy.BudgetName(holdfastv1alpha1.KindDeployment, workload),
			Labels:          map[string]string{holdfastv1alpha1.PolicyLabel: p.Name, "app.kubernetes.io/managed-by": "holdfast"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: holdfastv1alpha1.KindDeployment, Name: workload, UID: "gone"}}},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": workload}}},
	}
}

func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
}

// readyPod is a pod of template t on node, Ready for an hour.
func readyPod(ns, name, node string, t corev1.PodTemplateSpec, owner metav1.OwnerReference, since metav1.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("pod-" + ns + "-" + name), Labels: t.Labels, CreationTimestamp: since, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       *t.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since}}},
	}
}

func withNode(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.NodeName = node
	return p
}

// deployment is a Deployment of one Ready pod per entry of nodes, with its ReplicaSet.
func deployment(ns, name string, nodes []string, since metav1.Time) []client.Object {
	t := podTemplate(name)
	n := int32(len(nodes))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("deploy-" + ns + "-" + name), Generation: 1, CreationTimestamp: since},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: t},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, UpdatedReplicas: n}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1", UID: types.UID("rs-" + ns + "-" + name), CreationTimestamp: since,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(n), Selector: d.Spec.Selector, Template: t}}
	out := []client.Object{d, rs}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}
	for i, node := range nodes {
		out = append(out, withNode(readyPod(ns, fmt.Sprintf("%s-1-%d", name, i), node, t, owner, since), node))
	}
	return out
}

// surgeSet is p's surge set beside d, made at since, with one Ready extra pod on node.
func surgeSet(p *holdfastv1alpha1.DisruptionPolicy, d *appsv1.Deployment, node string, since metav1.Time) []client.Object {
	rs := policy.SurgeReplicaSet(p, d, policy.Surge{Name: policy.SurgeSetName(d.Name), Deployment: d.Name, DeploymentUID: d.UID, Replicas: 1})
	rs.UID, rs.CreationTimestamp = types.UID("surge-"+d.Namespace+"-"+d.Name), since
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}
	return []client.Object{rs, withNode(readyPod(d.Namespace, rs.Name+"-0", node, rs.Spec.Template, owner, since), node)}
}

// statefulSet is a StatefulSet of one Ready pod per entry of nodes.
func statefulSet(ns, name string, nodes []string, since metav1.Time) []client.Object {
	t := podTemplate(name)
	n := int32(len(nodes))
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("sts-" + ns + "-" + name), Generation: 1, CreationTimestamp: since},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: t},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, CurrentReplicas: n, UpdatedReplicas: n,
			CurrentRevision: name + "-1", UpdateRevision: name + "-1"}}
	out := []client.Object{s}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: s.UID, Controller: ptr.To(true)}
	for i, node := range nodes {
		pod := withNode(readyPod(ns, fmt.Sprintf("%s-%d", name, i), node, t, owner, since), node)
		pod.Labels = map[string]string{"app": name, appsv1.StatefulSetPodNameLabel: pod.Name}
		out = append(out, pod)
	}
	return out
}
