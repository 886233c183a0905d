package policy

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Source is what Observe reads a policy's namespace from: the operator's cache and API
// server, or a snapshot of a cluster or of manifests (internal/predict). Each one only
// reads; what is read for a policy, and when, is Observe's, so that the operator and
// every prediction of it see the same.
type Source interface {
	// Policies are the namespace's DisruptionPolicies.
	Policies(ctx context.Context, namespace string) ([]holdfastv1alpha1.DisruptionPolicy, error)
	// Workloads are the namespace's workloads of kind (Deployment, StatefulSet,
	// DaemonSet) whose labels sel matches.
	Workloads(ctx context.Context, namespace, kind string, sel labels.Selector) ([]Workload, error)
	// ScaleTarget are the objects of a scale target whose labels sel matches, each with
	// its scale; or why they cannot be read (a message for status, not an error).
	ScaleTarget(ctx context.Context, namespace string, t holdfastv1alpha1.ScaleTarget, sel labels.Selector) ([]Workload, string, error)
	// SurgeSets are the namespace's ReplicaSets carrying SurgeOfLabel.
	SurgeSets(ctx context.Context, namespace string) ([]appsv1.ReplicaSet, error)
	// Budgets are the namespace's PodDisruptionBudgets.
	Budgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error)
	// PodMeta are the labels of the namespace's pods not being deleted (Observed.PodLabels)
	// and which pods carry holdfast's marks, by policy (Observed.Marked).
	PodMeta(ctx context.Context, namespace string) ([]map[string]string, Marks, error)
	// LostPodLabels are the labels of the namespace's pods on the suspect nodes of h.
	LostPodLabels(ctx context.Context, namespace string, h NodeHealth) ([]map[string]string, error)
	// Pods are the namespace's pods whose labels sel matches, being deleted or not.
	Pods(ctx context.Context, namespace string, sel labels.Selector) ([]corev1.Pod, error)
	// Node is the node of that name; nil when there is none.
	Node(ctx context.Context, name string) (*corev1.Node, error)
	// NodeClaims are Karpenter's NodeClaims; nil without Karpenter.
	NodeClaims(ctx context.Context) ([]unstructured.Unstructured, error)
	// NodePool is Karpenter's NodePool of that name; nil when there is none.
	NodePool(ctx context.Context, name string) (*unstructured.Unstructured, error)
	// NodePods are the pods on the node of that name, being deleted or not.
	NodePods(ctx context.Context, node string) ([]corev1.Pod, error)
	// Owner is the object of kind and name in namespace that a pod's owner reference
	// names: a *appsv1.Deployment or *appsv1.StatefulSet, or a ReplicaSet's metadata at
	// least; nil (untyped) when there is none.
	Owner(ctx context.Context, namespace, kind, name string) (metav1.Object, error)
	// Health is the health of every node.
	Health() NodeHealth
	// ClusterPolicy is the ClusterDisruptionPolicy of that name; nil when there is none.
	ClusterPolicy(ctx context.Context, name string) (*holdfastv1alpha1.ClusterDisruptionPolicy, error)
	// Settings are the operator's flags, as the operator runs with them or as plan and
	// audit are told them.
	Settings() Settings
}

// Observe gathers from src what Decide reads for p at now: the namespace's policies, the
// workloads p selects (its scale targets' objects included, or why they are unreadable),
// its budgets, the labels of its pods, its surge sets, each attached to its Deployment;
// and, for the workloads whose pods Decide reads (NeedsPods), their pods (a surge set's
// apart), their nodes, and those nodes' NodeClaims or cluster-autoscaler node groups.
// The caller then reads the room of the nodes a hand-off would start from (RoomWanted,
// SetRoom) with the planner: the core never calls back into it.
func Observe(ctx context.Context, src Source, p *holdfastv1alpha1.DisruptionPolicy, now time.Time) (Observed, error) {
	settings := src.Settings()
	obs := Observed{Policy: p, Now: now, Pods: map[string][]Pod{}, Nodes: map[string]*corev1.Node{}, Health: src.Health(), Stuck: map[string][]Pod{},
		Autoscalers: settings.Autoscalers, Failure: settings.Failure}
	ns := p.Namespace
	var err error
	if obs.Consent, err = observeConsent(ctx, src, p, settings.Failure); err != nil {
		return obs, err
	}
	if obs.Policies, err = src.Policies(ctx, ns); err != nil {
		return obs, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
	if err != nil {
		// Decide reports the invalid selector; there is nothing to select.
		return obs, nil
	}
	for _, kind := range selectedKinds(p) {
		ws, err := src.Workloads(ctx, ns, kind, sel)
		if err != nil {
			return obs, err
		}
		obs.Workloads = append(obs.Workloads, ws...)
	}
	for _, t := range p.Spec.ScaleTargets {
		ws, why, err := src.ScaleTarget(ctx, ns, t, sel)
		if err != nil {
			return obs, err
		}
		if why != "" {
			obs.Unreadable = append(obs.Unreadable, Unreadable{Target: t, Message: why})
		}
		obs.Workloads = append(obs.Workloads, ws...)
	}
	if obs.Budgets, err = src.Budgets(ctx, ns); err != nil {
		return obs, err
	}
	if err := observeSurges(ctx, src, &obs); err != nil {
		return obs, err
	}
	// Read even when nothing is selected: a workload no longer selected may still carry
	// the policy's do-not-disrupt.
	if obs.PodLabels, obs.Marked, err = src.PodMeta(ctx, ns); err != nil {
		return obs, err
	}
	if len(obs.Workloads) > 0 {
		if obs.LostPodLabels, err = src.LostPodLabels(ctx, ns, obs.Health); err != nil {
			return obs, err
		}
	}
	// A surge may start or move on only where Decide reads the pods.
	for i := range obs.Workloads {
		w := &obs.Workloads[i]
		if !NeedsPods(&obs, w) {
			continue
		}
		if err := observePods(ctx, src, ns, w, &obs); err != nil {
			return obs, err
		}
		if w.Custom() {
			// A scale has no Ready count: the pods give it, without minReadySeconds of
			// their own.
			for _, pod := range obs.Pods[WorkloadKey(w.Kind, w.Name)] {
				if pod.Ready {
					w.Ready++
				}
			}
			w.Available = w.Ready
		}
	}
	if len(obs.Nodes) > 0 {
		if obs.Claims, err = observeClaims(ctx, src, obs.Nodes, now); err != nil {
			return obs, err
		}
		if obs.NodeGroups, err = observeNodeGroups(ctx, src, &obs); err != nil {
			return obs, err
		}
		if obs.Bystanders, err = observeBystanders(ctx, src, &obs); err != nil {
			return obs, err
		}
	}
	return obs, nil
}

// selectedKinds are the kinds of workload p selects besides its scale targets.
func selectedKinds(p *holdfastv1alpha1.DisruptionPolicy) []string {
	if len(p.Spec.Kinds) == 0 {
		return []string{holdfastv1alpha1.KindDeployment, holdfastv1alpha1.KindStatefulSet, holdfastv1alpha1.KindDaemonSet}
	}
	out := make([]string, 0, len(p.Spec.Kinds))
	for _, k := range p.Spec.Kinds {
		out = append(out, string(k))
	}
	return out
}

// observeSurges reads the namespace's surge sets into obs and attaches each to its
// Deployment among obs.Workloads. A set of obs.Policy's whose Deployment is not among
// them is unclaimed unless another policy selects the Deployment; the namespace's
// Deployments are read only then.
func observeSurges(ctx context.Context, src Source, obs *Observed) error {
	sets, err := src.SurgeSets(ctx, obs.Policy.Namespace)
	if err != nil {
		return err
	}
	for i := range sets {
		if set, ok := SurgeSetOf(&sets[i]); ok {
			obs.Surges = append(obs.Surges, set)
		}
	}
	var deployments []Workload
	for i := range obs.Surges {
		set := &obs.Surges[i]
		at := slices.IndexFunc(obs.Workloads, func(w Workload) bool {
			return w.Kind == holdfastv1alpha1.KindDeployment && w.UID == set.DeploymentUID
		})
		if at >= 0 {
			obs.Workloads[at].Surge = set
			continue
		}
		if set.Policy != obs.Policy.Name {
			continue
		}
		if deployments == nil {
			if deployments, err = src.Workloads(ctx, obs.Policy.Namespace, holdfastv1alpha1.KindDeployment, labels.Everything()); err != nil {
				return err
			}
		}
		at = slices.IndexFunc(deployments, func(w Workload) bool { return w.UID == set.DeploymentUID })
		set.Unclaimed = at < 0 || WinnerOf(obs.Policies, &deployments[at]) == nil
	}
	return nil
}

// observePods reads w's live pods, its pods stuck on suspect nodes, and their nodes.
func observePods(ctx context.Context, src Source, ns string, w *Workload, obs *Observed) error {
	sel, err := metav1.LabelSelectorAsSelector(w.Selector)
	if err != nil || w.Selector == nil {
		return nil // a workload without a valid selector has no pods of its own
	}
	pods, err := src.Pods(ctx, ns, sel)
	if err != nil {
		return err
	}
	key := WorkloadKey(w.Kind, w.Name)
	for i := range pods {
		pod := &pods[i]
		if live, ok := PodOf(pod); ok && live.Surge {
			// Its Deployment's selector matches it, but it is the surge set's.
			if w.Surge != nil && pod.Labels[holdfastv1alpha1.SurgeOfLabel] == string(w.Surge.DeploymentUID) {
				w.Surge.Pods = append(w.Surge.Pods, live)
			}
			continue
		} else if ok {
			obs.Pods[key] = append(obs.Pods[key], live)
		} else if stuck, ok := StuckOf(pod, w, obs.Health); ok {
			obs.Stuck[key] = append(obs.Stuck[key], stuck)
		} else {
			continue
		}
		if pod.Spec.NodeName == "" || obs.Nodes[pod.Spec.NodeName] != nil {
			continue
		}
		node, err := src.Node(ctx, pod.Spec.NodeName)
		if err != nil {
			return err
		}
		if node != nil {
			obs.Nodes[node.Name] = node
		}
	}
	return nil
}

// observeClaims reads the NodeClaims behind nodes, their NodePools' consolidation, and,
// for a node Karpenter considers for consolidation, what its NodePool's budgets allow
// and what runs on it; nil without Karpenter.
func observeClaims(ctx context.Context, src Source, nodes map[string]*corev1.Node, now time.Time) (map[string]NodeClaim, error) {
	claims, err := src.NodeClaims(ctx)
	if err != nil || claims == nil {
		return nil, err
	}
	out := map[string]NodeClaim{}
	pools := map[string]*unstructured.Unstructured{}
	budgets := map[string]PoolBudget{}
	for i := range claims {
		u := &claims[i]
		node := nodes[ClaimNode(u)]
		if node == nil {
			continue
		}
		name := u.GetLabels()[karpenterNodePoolLabel]
		pool, read := pools[name]
		if !read && name != "" {
			if pool, err = src.NodePool(ctx, name); err != nil {
				return nil, err
			}
			pools[name] = pool
		}
		c := ClaimOf(u, pool)
		if !c.ConsolidatableSince.IsZero() {
			if pool != nil {
				b, read := budgets[name]
				if !read {
					b = poolBudgetOf(pool, claims, reasonUnderutilized, now)
					budgets[name] = b
				}
				c.Budget = b
			}
			pods, err := src.NodePods(ctx, node.Name)
			if err != nil {
				return nil, err
			}
			c.Load = loadOf(pods, karpenterBlocker(node, now), nil)
		}
		out[node.Name] = c
	}
	return out, nil
}

// observeNodeGroups reads which of obs's nodes are in cluster-autoscaler's node groups
// (Autoscalers.NodeGroupLabel), Karpenter's (obs.Claims) aside, and what runs on them,
// with the budgets of their pods' namespaces, and for a node above the threshold what
// is known of its pods' going from their owners; nil where cluster-autoscaler is not
// configured.
func observeNodeGroups(ctx context.Context, src Source, obs *Observed) (map[string]NodeGroupMember, error) {
	label := obs.Autoscalers.NodeGroupLabel
	if label == "" {
		return nil, nil
	}
	out := map[string]NodeGroupMember{}
	budgets := map[string][]policyv1.PodDisruptionBudget{obs.Policy.Namespace: obs.Budgets}
	for name, node := range obs.Nodes {
		group := node.Labels[label]
		if _, karpenter := obs.Claims[name]; group == "" || karpenter {
			continue
		}
		pods, err := src.NodePods(ctx, name)
		if err != nil {
			return nil, err
		}
		for i := range pods {
			ns := pods[i].Namespace
			if _, read := budgets[ns]; read {
				continue
			}
			if budgets[ns], err = src.Budgets(ctx, ns); err != nil {
				return nil, err
			}
		}
		blocks := caBlocker(node, obs.Policy, budgets)
		m := NodeGroupMember{Group: group, Load: loadOf(pods, blocks, nil)}
		if !underused(node, m.Requested, obs.Autoscalers.threshold()) {
			// Above the threshold: some of its pods may be going, and which workloads'
			// going would wake the policy (departure.go).
			deps, err := departures(ctx, src, pods)
			if err != nil {
				return nil, err
			}
			if deps != nil {
				m.Load = loadOf(pods, blocks, deps)
			}
			m.Workloads = ownerKeys(pods, deps)
		}
		out[name] = m
	}
	return out, nil
}

// HealthOf is the health of nodes, each with its Lease in leases (kube-node-lease, by
// node name; a node without one is suspect only when tainted) at now.
func HealthOf(nodes []corev1.Node, leases map[string]*coordinationv1.Lease, now time.Time) NodeHealth {
	h := NodeHealth{Zones: map[string]int{}}
	for i := range nodes {
		n := &nodes[i]
		s, suspect := SuspectOf(n, leases[n.Name], now)
		h.Zones[s.Zone]++
		if suspect {
			if h.Suspects == nil {
				h.Suspects = map[string]Suspect{}
			}
			h.Suspects[n.Name] = s
		}
	}
	return h
}

// observeConsent reads the ClusterDisruptionPolicy p names as its origin, when p asks
// for fencing the operator does not allow every namespace, and works out the consent.
func observeConsent(ctx context.Context, src Source, p *holdfastv1alpha1.DisruptionPolicy, s FailureSettings) (Consent, error) {
	var owner *holdfastv1alpha1.ClusterDisruptionPolicy
	if name := p.Labels[holdfastv1alpha1.ClusterPolicyLabel]; fencing(p) && !s.NamespacedFencing && name != "" {
		var err error
		if owner, err = src.ClusterPolicy(ctx, name); err != nil {
			return Consent{}, err
		}
	}
	return ConsentOf(p, s, owner), nil
}

// observeBystanders reads, under fencing: Verified and no brake, the StatefulSet pods on
// each lost node with a pod of a StatefulSet obs.Policy selects that the policy does not
// fence for: other namespaces' and other StatefulSets'. The out-of-service taint
// releases them too, and the fence says so.
func observeBystanders(ctx context.Context, src Source, obs *Observed) (map[string][]string, error) {
	if !fencing(obs.Policy) || !obs.Consent.Fence {
		return nil, nil
	}
	f := assessLosses(*obs)
	if f.brake != "" {
		return nil, nil
	}
	covered := map[string]bool{}
	var nodes []string
	for _, w := range obs.Workloads {
		if w.Kind != holdfastv1alpha1.KindStatefulSet {
			continue
		}
		covered[w.Name] = true
		key := WorkloadKey(w.Kind, w.Name)
		for _, pod := range slices.Concat(obs.Pods[key], obs.Stuck[key]) {
			if f.lost[pod.Node] && !slices.Contains(nodes, pod.Node) {
				nodes = append(nodes, pod.Node)
			}
		}
	}
	var out map[string][]string
	for _, node := range nodes {
		pods, err := src.NodePods(ctx, node)
		if err != nil {
			return nil, err
		}
		for i := range pods {
			owner := metav1.GetControllerOfNoCopy(&pods[i])
			if owner == nil || owner.Kind != holdfastv1alpha1.KindStatefulSet || pods[i].Namespace == obs.Policy.Namespace && covered[owner.Name] {
				continue
			}
			if out == nil {
				out = map[string][]string{}
			}
			out[node] = append(out[node], pods[i].Namespace+"/"+pods[i].Name)
		}
		slices.Sort(out[node])
	}
	return out, nil
}
