// Package snapshot gathers the objects holdfast reasons about into one plain value, read
// either from a live cluster or from manifests. The packages that decide (availability,
// audit, plan) take a Snapshot and never know where it came from.
package snapshot

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Source says where a Snapshot came from. Live snapshots carry pods and status that can be
// trusted; manifest snapshots carry intent only, so the model reasons from pod templates.
type Source string

const (
	// SourceLive marks a snapshot listed from a cluster's API server.
	SourceLive Source = "live"
	// SourceManifests marks a snapshot read from files or stdin.
	SourceManifests Source = "manifests"
)

// Kinds holdfast reads. Other kinds in manifests are skipped without an error: a folder of
// manifests holds Services and ConfigMaps too.
const (
	KindNode                    = "Node"
	KindPod                     = "Pod"
	KindDeployment              = "Deployment"
	KindReplicaSet              = "ReplicaSet"
	KindStatefulSet             = "StatefulSet"
	KindDaemonSet               = "DaemonSet"
	KindPodDisruptionBudget     = "PodDisruptionBudget"
	KindHorizontalPodAutoscaler = "HorizontalPodAutoscaler"
	KindPriorityClass           = "PriorityClass"
	KindNodeCompanion           = "NodeCompanion"
	KindNamespace               = "Namespace"
	KindDisruptionPolicy        = "DisruptionPolicy"
	KindClusterDisruptionPolicy = "ClusterDisruptionPolicy"
	KindLease                   = "Lease"
	KindNodeClaim               = "NodeClaim"
	KindNodePool                = "NodePool"
)

// Karpenter's kinds, read as unstructured so that holdfast does not depend on Karpenter's
// module.
var (
	NodeClaimKind = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: KindNodeClaim}
	NodePoolKind  = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: KindNodePool}
)

// Snapshot is every object holdfast reasons about at one moment. It is a plain value: the
// deciding packages read it and never change it.
type Snapshot struct {
	Source Source

	Nodes                    []corev1.Node
	Pods                     []corev1.Pod
	Deployments              []appsv1.Deployment
	ReplicaSets              []appsv1.ReplicaSet
	StatefulSets             []appsv1.StatefulSet
	DaemonSets               []appsv1.DaemonSet
	PodDisruptionBudgets     []policyv1.PodDisruptionBudget
	HorizontalPodAutoscalers []autoscalingv2.HorizontalPodAutoscaler
	PriorityClasses          []schedulingv1.PriorityClass
	NodeCompanions           []holdfastv1alpha1.NodeCompanion
	// Namespaces are those listed or declared; ClusterDisruptionPolicies select among them.
	Namespaces                []corev1.Namespace
	DisruptionPolicies        []holdfastv1alpha1.DisruptionPolicy
	ClusterDisruptionPolicies []holdfastv1alpha1.ClusterDisruptionPolicy

	// Leases are the nodes' Leases (namespace kube-node-lease), which tell a node whose
	// kubelet stopped renewing it.
	Leases []coordinationv1.Lease
	// NodeClaims and NodePools are Karpenter's, which a hand-off of a node to its
	// consolidation reads. NodeClaims is nil where Karpenter's kinds were not read (its
	// CRDs are not installed, or manifests hold neither kind) and not nil, if empty,
	// where they were: a node of a NodePool without a NodeClaim then has lost it.
	NodeClaims []unstructured.Unstructured
	NodePools  []unstructured.Unstructured

	// Origins says where each object read from manifests was written, so that findings and
	// SARIF results can point at a file and line. Live objects have no origin.
	Origins map[ObjectRef]Origin

	// Warnings are things in manifests read, but probably not as their author meant:
	// fields the object's kind does not have (a typo such as minAvaliable), which the API
	// server would drop. The objects are read without them.
	Warnings []Problem

	// Skipped are the documents read but not audited, and why: files that are not
	// Kubernetes objects (a Helm values.yaml, a dashboard's JSON), kustomizations, and
	// kinds holdfast does not know (custom resources). They are notes, not problems: a
	// repository holds such files beside its manifests.
	Skipped []Problem

	// LegacySelectorPDBs names the budgets read as policy/v1beta1, whose empty selector
	// matches no pod where policy/v1's matches every pod of the namespace.
	LegacySelectorPDBs map[ObjectRef]bool
}

// ObjectRef names one object of a kind.
type ObjectRef struct {
	Kind      string
	Namespace string
	Name      string
}

// String renders the reference as kind/namespace/name, or kind/name when cluster-scoped.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Origin is where an object was written: a file (or "-" for stdin) and a 1-based line.
type Origin struct {
	File string
	Line int
}
