package live_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/live"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

func TestLoadLive(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: meta("", "n1")},
		&corev1.Pod{ObjectMeta: meta("a", "p1")},
		&corev1.Pod{ObjectMeta: meta("b", "p2")},
		&appsv1.Deployment{ObjectMeta: meta("a", "web")},
		&appsv1.DaemonSet{ObjectMeta: meta("a", "agent")},
		&policyv1.PodDisruptionBudget{ObjectMeta: meta("a", "web")},
		&corev1.Namespace{ObjectMeta: meta("", "a")},
		&coordinationv1.Lease{ObjectMeta: meta(corev1.NamespaceNodeLease, "n1")},
		&coordinationv1.Lease{ObjectMeta: meta("a", "leader")},
	)
	companion := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": holdfastv1alpha1.GroupVersion.String(), "kind": "NodeCompanion",
		"metadata": map[string]any{"namespace": "a", "name": "guard"},
		"spec":     map[string]any{"daemonSet": map[string]any{"name": "agent"}},
	}}
	own := func(kind, ns, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": holdfastv1alpha1.GroupVersion.String(), "kind": kind,
			"metadata": map[string]any{"namespace": ns, "name": name},
		}}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), snapshottest.DynamicListKinds(), companion, own("DisruptionPolicy", "a", "web"), own("DisruptionPolicy", "b", "api"), own("ClusterDisruptionPolicy", "", "fleet"),
		karpenterObject(snapshot.KindNodeClaim, "n1-claim"), karpenterObject(snapshot.KindNodePool, "general"))

	type names struct {
		Nodes, Pods, Deployments, DaemonSets, PDBs, Companions []string
		Namespaces, Policies, ClusterPolicies                  []string
		Leases, NodeClaims, NodePools                          []string
	}
	summarize := func(s *snapshot.Snapshot) names {
		var n names
		for _, o := range s.Nodes {
			n.Nodes = append(n.Nodes, o.Name)
		}
		for _, o := range s.Pods {
			n.Pods = append(n.Pods, o.Namespace+"/"+o.Name)
		}
		for _, o := range s.Deployments {
			n.Deployments = append(n.Deployments, o.Namespace+"/"+o.Name)
		}
		for _, o := range s.DaemonSets {
			n.DaemonSets = append(n.DaemonSets, o.Namespace+"/"+o.Name)
		}
		for _, o := range s.PodDisruptionBudgets {
			n.PDBs = append(n.PDBs, o.Namespace+"/"+o.Name)
		}
		for _, o := range s.NodeCompanions {
			n.Companions = append(n.Companions, o.Namespace+"/"+o.Name+"->"+o.Spec.DaemonSet.Name)
		}
		for _, o := range s.Namespaces {
			n.Namespaces = append(n.Namespaces, o.Name)
		}
		for _, o := range s.DisruptionPolicies {
			n.Policies = append(n.Policies, o.Namespace+"/"+o.Name)
		}
		for _, o := range s.ClusterDisruptionPolicies {
			n.ClusterPolicies = append(n.ClusterPolicies, o.Name)
		}
		for _, o := range s.Leases {
			n.Leases = append(n.Leases, o.Namespace+"/"+o.Name)
		}
		for _, o := range s.NodeClaims {
			n.NodeClaims = append(n.NodeClaims, o.GetName())
		}
		for _, o := range s.NodePools {
			n.NodePools = append(n.NodePools, o.GetName())
		}
		return n
	}
	tests := map[string]struct {
		namespace string
		want      names
	}{
		"one namespace, and the cluster-scoped nodes": {namespace: "b", want: names{Nodes: []string{"n1"}, Pods: []string{"b/p2"},
			Namespaces: []string{"a"}, Policies: []string{"b/api"}, ClusterPolicies: []string{"fleet"},
			Leases: []string{"kube-node-lease/n1"}, NodeClaims: []string{"n1-claim"}, NodePools: []string{"general"}}},
		"every namespace": {namespace: metav1.NamespaceAll, want: names{
			Nodes: []string{"n1"}, Pods: []string{"a/p1", "b/p2"}, Deployments: []string{"a/web"},
			DaemonSets: []string{"a/agent"}, PDBs: []string{"a/web"}, Companions: []string{"a/guard->agent"},
			Namespaces: []string{"a"}, Policies: []string{"a/web", "b/api"}, ClusterPolicies: []string{"fleet"},
			Leases: []string{"kube-node-lease/n1"}, NodeClaims: []string{"n1-claim"}, NodePools: []string{"general"},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := live.Load(context.Background(), client, dyn, tc.namespace)
			if err != nil {
				t.Fatal(err)
			}
			if s.Source != snapshot.SourceLive {
				t.Errorf("source %q, want live", s.Source)
			}
			if diff := cmp.Diff(tc.want, summarize(s)); diff != "" {
				t.Errorf("loaded (-want +got):\n%s", diff)
			}
		})
	}
}

func karpenterObject(kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshot.NodeClaimKind.GroupVersion().String(), "kind": kind, "metadata": map[string]any{"name": name},
	}}
}

// TestLoadWithoutKarpenterOrLeases reads a cluster without Karpenter's CRDs as one
// without Karpenter, quietly (whether the user may list its kinds or not: the API server
// authorizes before it looks the kind up), one whose Karpenter kinds the user may not
// list with a note, and one whose Leases the user may not list with a note.
func TestLoadWithoutKarpenterOrLeases(t *testing.T) {
	leases := "not allowed to list leases in kube-node-lease: a lost node is told by its taints only, not by its Lease's age"
	karpenter := "not allowed to list Karpenter's nodeclaims or nodepools: what Karpenter's consolidation will do is not predicted"
	tests := map[string]struct {
		// refused is the answer to a list of Karpenter's kinds; installed says discovery
		// serves them.
		refused   func(schema.GroupResource) error
		installed bool
		want      []string
	}{
		"not installed":            {refused: func(gr schema.GroupResource) error { return apierrors.NewNotFound(gr, "") }, want: []string{leases}},
		"not installed, forbidden": {refused: func(gr schema.GroupResource) error { return apierrors.NewForbidden(gr, "", nil) }, want: []string{leases}},
		"installed, forbidden":     {refused: func(gr schema.GroupResource) error { return apierrors.NewForbidden(gr, "", nil) }, installed: true, want: []string{karpenter, leases}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", nil)
			})
			if tc.installed {
				client.Resources = []*metav1.APIResourceList{{GroupVersion: snapshot.NodeClaimKind.GroupVersion().String(),
					APIResources: []metav1.APIResource{{Name: "nodeclaims", Kind: snapshot.KindNodeClaim}, {Name: "nodepools", Kind: snapshot.KindNodePool}}}}
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), snapshottest.DynamicListKinds())
			dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetResource().Group != snapshot.NodeClaimKind.Group {
					return false, nil, nil
				}
				return true, nil, tc.refused(a.GetResource().GroupResource())
			})
			s, err := live.Load(context.Background(), client, dyn, "")
			if err != nil {
				t.Fatal(err)
			}
			if s.NodeClaims != nil || s.NodePools != nil || s.Leases != nil {
				t.Errorf("read NodeClaims %v, NodePools %v, Leases %v; want none", s.NodeClaims, s.NodePools, s.Leases)
			}
			var notes []string
			for _, p := range s.Skipped {
				notes = append(notes, p.Detail())
			}
			slices.Sort(notes)
			if diff := cmp.Diff(tc.want, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadPagesAndRestarts pages through the pods and starts over in one response when
// the continue token has expired, without a pod twice.
func TestLoadPagesAndRestarts(t *testing.T) {
	pod := func(name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
	}
	all := []corev1.Pod{pod("p1"), pod("p2"), pod("p3")}
	client := fake.NewClientset()
	var asked []metav1.ListOptions
	client.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		o := action.(k8stesting.ListActionImpl).ListOptions
		asked = append(asked, o)
		switch {
		case o.Continue == "" && o.Limit > 0:
			return true, &corev1.PodList{ListMeta: metav1.ListMeta{Continue: "2", RemainingItemCount: ptr.To[int64](2)}, Items: all[:1]}, nil
		case o.Continue == "2":
			return true, nil, apierrors.NewResourceExpired("continue token expired")
		default:
			return true, &corev1.PodList{Items: all}, nil
		}
	})
	s, err := live.Load(context.Background(), client, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range s.Pods {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"p1", "p2", "p3"}, names); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if len(asked) != 3 || asked[2].Limit != 0 || asked[2].Continue != "" {
		t.Errorf("lists asked: %+v, want a first page, its continuation, then one list of everything", asked)
	}
}
