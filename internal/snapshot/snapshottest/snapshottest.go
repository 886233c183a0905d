// Package snapshottest builds live-looking snapshots for tests and benchmarks: nodes,
// workloads with their ReplicaSets and Ready pods placed on given nodes, and budgets, all
// wired with UIDs and owner references as the API server would have them. It also writes
// the hostile manifests the loader's tests feed it.
package snapshottest

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/snapshot"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Cluster accumulates objects into a live Snapshot.
type Cluster struct {
	Snapshot *snapshot.Snapshot
	uid      int
}

// New returns an empty live cluster.
func New() *Cluster {
	return &Cluster{Snapshot: &snapshot.Snapshot{Source: snapshot.SourceLive}}
}

func (c *Cluster) nextUID() types.UID {
	c.uid++
	return types.UID(fmt.Sprintf("uid-%d", c.uid))
}

// Node adds a schedulable node in zone (no zone label when empty).
func (c *Cluster) Node(name, zone string) {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: c.nextUID(),
		Labels: map[string]string{corev1.LabelHostname: name}}}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	c.Snapshot.Nodes = append(c.Snapshot.Nodes, n)
}

// Template returns a pod template with those labels and one container with both probes.
func Template(labels map[string]string) corev1.PodTemplateSpec {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app:1", ReadinessProbe: probe, LivenessProbe: probe,
		}}},
	}
}

// Deployment adds a Deployment with one ReplicaSet and one Ready pod per entry of nodes
// (an empty entry is a Pending pod). Replicas is len(nodes). mutate may change the
// Deployment before its pods are made from the template.
func (c *Cluster) Deployment(ns, name string, labels map[string]string, nodes []string, mutate ...func(*appsv1.Deployment)) {
	d := appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: c.nextUID(), Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(len(nodes))),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: Template(labels),
		},
	}
	for _, m := range mutate {
		m(&d)
	}
	c.Snapshot.Deployments = append(c.Snapshot.Deployments, d)
	rs := appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-rs", UID: c.nextUID(),
			OwnerReferences: []metav1.OwnerReference{controllerRef("Deployment", d.Name, d.UID)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	c.Snapshot.ReplicaSets = append(c.Snapshot.ReplicaSets, rs)
	c.pods(ns, rs.Name, d.Spec.Template, controllerRef("ReplicaSet", rs.Name, rs.UID), nodes)
}

// DaemonSet adds a DaemonSet with one Ready pod on each node.
func (c *Cluster) DaemonSet(ns, name string, labels map[string]string, nodes []string, mutate ...func(*appsv1.DaemonSet)) {
	ds := appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: c.nextUID(), Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: Template(labels),
		},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: int32(len(nodes))},
	}
	for _, m := range mutate {
		m(&ds)
	}
	c.Snapshot.DaemonSets = append(c.Snapshot.DaemonSets, ds)
	c.pods(ns, name, ds.Spec.Template, controllerRef("DaemonSet", ds.Name, ds.UID), nodes)
}

// Pod adds a bare Ready pod on node.
func (c *Cluster) Pod(ns, name string, labels map[string]string, node string) {
	pod := c.pod(ns, name, Template(labels), node)
	c.Snapshot.Pods = append(c.Snapshot.Pods, pod)
}

func (c *Cluster) pods(ns, prefix string, t corev1.PodTemplateSpec, owner metav1.OwnerReference, nodes []string) {
	for i, node := range nodes {
		pod := c.pod(ns, fmt.Sprintf("%s-%d", prefix, i), t, node)
		pod.OwnerReferences = []metav1.OwnerReference{owner}
		c.Snapshot.Pods = append(c.Snapshot.Pods, pod)
	}
}

func (c *Cluster) pod(ns, name string, t corev1.PodTemplateSpec, node string) corev1.Pod {
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: c.nextUID(), Labels: t.Labels, Annotations: t.Annotations},
		Spec:       t.Spec,
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	if node != "" {
		pod.Spec.NodeName = node
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return pod
}

// SetReady marks a pod ready or not.
func (c *Cluster) SetReady(ns, name string, ready bool) {
	for i := range c.Snapshot.Pods {
		p := &c.Snapshot.Pods[i]
		if p.Namespace == ns && p.Name == name {
			status := corev1.ConditionFalse
			if ready {
				status = corev1.ConditionTrue
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
			return
		}
	}
	panic(fmt.Sprintf("no pod %s/%s", ns, name))
}

// PDB adds a budget selecting labels with minAvailable or maxUnavailable set from spec,
// e.g. PDB(ns, "web", labels, MinAvailable(intstr.FromInt32(1))).
func (c *Cluster) PDB(ns, name string, labels map[string]string, mutate ...func(*policyv1.PodDisruptionBudget)) {
	pdb := policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: c.nextUID(), Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1},
	}
	for _, m := range mutate {
		m(&pdb)
	}
	c.Snapshot.PodDisruptionBudgets = append(c.Snapshot.PodDisruptionBudgets, pdb)
}

// MinAvailable sets a budget's minAvailable.
func MinAvailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &v }
}

// MaxUnavailable sets a budget's maxUnavailable.
func MaxUnavailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = &v }
}

// ManagedBy labels a budget as a DisruptionPolicy's.
func ManagedBy(policy string) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) {
		p.Labels = map[string]string{holdfastv1alpha1.PolicyLabel: policy}
	}
}

func controllerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}
}

// Scale describes a generated cluster.
type Scale struct {
	Nodes, Zones, Namespaces, Workloads, PodsPerWorkload int
}

// ScaleFor returns the shape benchmarks use for a given pod count: 15 pods per workload,
// one node per 30 pods, 20 workloads per namespace, 3 zones. 150,000 pods gives
// Kubernetes' published limits: 5,000 nodes and 150,000 pods, with 10,000 workloads.
func ScaleFor(pods int) Scale {
	return Scale{Nodes: max(3, pods/30), Zones: 3, Namespaces: max(1, pods/300), Workloads: max(1, pods/15), PodsPerWorkload: 15}
}

// Generate builds a live cluster of that scale. Every workload gets a budget; the
// budgets vary in form (minAvailable, maxUnavailable, percentages, expressions), and some
// workloads lack spread or probes, so that the audit has work to do on every path.
func Generate(s Scale) *snapshot.Snapshot {
	c := New()
	for i := range s.Nodes {
		c.Node(fmt.Sprintf("node-%d", i), fmt.Sprintf("zone-%c", 'a'+i%s.Zones))
	}
	c.Snapshot.Pods = make([]corev1.Pod, 0, s.Workloads*s.PodsPerWorkload)
	node := 0
	for w := range s.Workloads {
		ns := fmt.Sprintf("ns-%d", w%s.Namespaces)
		name := fmt.Sprintf("app-%d", w)
		labels := map[string]string{"app": name, "tier": fmt.Sprintf("tier-%d", w%4)}
		nodes := make([]string, s.PodsPerWorkload)
		for p := range nodes {
			nodes[p] = c.Snapshot.Nodes[node%s.Nodes].Name
			node++
		}
		c.Deployment(ns, name, labels, nodes, func(d *appsv1.Deployment) {
			if w%7 == 0 {
				d.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
			}
		})
		switch w % 4 {
		case 0:
			c.PDB(ns, name, map[string]string{"app": name}, MaxUnavailable(intstr.FromInt32(1)))
		case 1:
			c.PDB(ns, name, map[string]string{"app": name}, MinAvailable(intstr.FromString("80%")))
		case 2:
			c.PDB(ns, name, map[string]string{"app": name}, MinAvailable(intstr.FromInt32(int32(s.PodsPerWorkload-1))))
		default:
			c.PDB(ns, name, nil, MaxUnavailable(intstr.FromString("10%")), func(p *policyv1.PodDisruptionBudget) {
				p.Spec.Selector = &metav1.LabelSelector{
					MatchLabels:      map[string]string{"tier": labels["tier"]},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{name}}},
				}
			})
		}
	}
	return c.Snapshot
}

// AliasBomb returns a List that YAML aliases expand to 10^levels Pods: each level is a List
// of ten aliases of the level below. At 7 levels, the deepest Lists nest, it is the file
// of issue 30: ten million Pods from 750 bytes.
func AliasBomb(levels int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n- &l0 {apiVersion: v1, kind: Pod, metadata: {name: p}}\n")
	for l := 1; l <= levels; l++ {
		aliases := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", l-1), 10), ", ")
		fmt.Fprintf(&b, "- &l%d {apiVersion: v1, kind: List, items: [%s]}\n", l, aliases)
	}
	return []byte(b.String())
}
