// Package live gathers a Snapshot from a cluster's API server. It is the only part of
// snapshot gathering that needs a client, kept apart so that the packages that decide
// (availability, audit, plan) import no client.
package live

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// pageSize bounds what one list response holds on either side. Pages of 5,000 rather
// than kubectl's 500, which the API server serves from its watch cache as well: read one
// after the other, 50,000 pods took 2.2–2.3 s in pages of 5,000 and 2.8–3.7 s in pages
// of 500 (a 2-core testbed, four reads each).
const pageSize = 5000

// Load lists every object holdfast reads from the cluster. Namespaced kinds are listed
// in namespace, or in every namespace when namespace is metav1.NamespaceAll; nodes,
// priority classes and the nodes' Leases are always listed. holdfast's own resources and
// Karpenter's are listed through dyn, when given. A read of Leases or of Karpenter's
// kinds that the API server refuses leaves them out, with a note in Skipped.
func Load(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, namespace string) (*snapshot.Snapshot, error) {
	return load(ctx, client, dyn, namespace, true)
}

// LoadWithoutPods is Load without pods, node Leases, holdfast's own resources and
// Karpenter's, for a caller that watches the pods already: at tens of thousands of pods
// they are most of a read's cost.
func LoadWithoutPods(ctx context.Context, client kubernetes.Interface, namespace string) (*snapshot.Snapshot, error) {
	return load(ctx, client, nil, namespace, false)
}

func load(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, namespace string, withPods bool) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{Source: snapshot.SourceLive}
	core, apps := client.CoreV1(), client.AppsV1()
	type kind struct {
		what string
		list func(context.Context, metav1.ListOptions) (runtime.Object, error)
		add  sink
	}
	lists := []kind{
		{"nodes", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return core.Nodes().List(ctx, o)
		}, collect(&s.Nodes)},
		{"deployments", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.Deployments(namespace).List(ctx, o)
		}, collect(&s.Deployments)},
		{"replicasets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.ReplicaSets(namespace).List(ctx, o)
		}, collect(&s.ReplicaSets)},
		{"statefulsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.StatefulSets(namespace).List(ctx, o)
		}, collect(&s.StatefulSets)},
		{"daemonsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.DaemonSets(namespace).List(ctx, o)
		}, collect(&s.DaemonSets)},
		{"poddisruptionbudgets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, o)
		}, collect(&s.PodDisruptionBudgets)},
		{"horizontalpodautoscalers", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.AutoscalingV2().HorizontalPodAutoscalers(namespace).List(ctx, o)
		}, collect(&s.HorizontalPodAutoscalers)},
		{"priorityclasses", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.SchedulingV1().PriorityClasses().List(ctx, o)
		}, collect(&s.PriorityClasses)},
	}
	if withPods {
		lists = append(lists, kind{"pods", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return core.Pods(namespace).List(ctx, o)
		}, collect(&s.Pods)})
	}
	// The kinds are listed at once: each page is a round trip to the API server.
	g, ctx := errgroup.WithContext(ctx)
	for _, l := range lists {
		g.Go(func() error {
			if err := listPages(ctx, l.list, l.add); err != nil {
				return fmt.Errorf("listing %s: %w", l.what, err)
			}
			return nil
		})
	}
	g.Go(func() error { return listNamespaces(ctx, client, s) })
	if withPods {
		g.Go(func() error { return listLeases(ctx, client, s) })
	}
	if dyn != nil {
		g.Go(func() (err error) {
			s.NodeCompanions, err = listOwn[holdfastv1alpha1.NodeCompanion](ctx, dyn, "nodecompanions", namespace)
			return err
		})
		g.Go(func() (err error) {
			s.DisruptionPolicies, err = listOwn[holdfastv1alpha1.DisruptionPolicy](ctx, dyn, "disruptionpolicies", namespace)
			return err
		})
		// Cluster-scoped: its copies land in the namespaces it selects, listed or not.
		g.Go(func() (err error) {
			s.ClusterDisruptionPolicies, err = listOwn[holdfastv1alpha1.ClusterDisruptionPolicy](ctx, dyn, "clusterdisruptionpolicies", "")
			return err
		})
	}
	if dyn != nil {
		g.Go(func() error { return listKarpenter(ctx, client.Discovery(), dyn, s) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return s, nil
}

// listLeases lists the nodes' Leases, by which holdfast tells a node whose kubelet went
// silent before Kubernetes taints it. A user refused them reads the nodes' health from
// their taints only, as the note says.
func listLeases(ctx context.Context, client kubernetes.Interface, s *snapshot.Snapshot) error {
	err := listPages(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, o)
	}, collect(&s.Leases))
	if apierrors.IsForbidden(err) {
		s.Leases = nil
		s.Skipped = append(s.Skipped, forbidden("leases in "+corev1.NamespaceNodeLease, "a lost node is told by its taints only, not by its Lease's age"))
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing node Leases: %w", err)
	}
	return nil
}

// listKarpenter lists Karpenter's NodeClaims and NodePools, which a hand-off of a node
// to its consolidation reads; none where its CRDs are not installed. A user refused them
// reads the cluster as if Karpenter were not there, as the note says; where Karpenter is
// not installed either (the API server authorizes before it looks the kind up), quietly.
func listKarpenter(ctx context.Context, disco discovery.DiscoveryInterface, dyn dynamic.Interface, s *snapshot.Snapshot) error {
	claims, err := listKind(ctx, dyn, snapshot.NodeClaimKind.GroupVersion().WithResource("nodeclaims"))
	if err != nil {
		return err
	}
	pools, err := listKind(ctx, dyn, snapshot.NodePoolKind.GroupVersion().WithResource("nodepools"))
	if err != nil {
		return err
	}
	if claims.forbidden || pools.forbidden {
		_, err := disco.ServerResourcesForGroupVersion(snapshot.NodeClaimKind.GroupVersion().String())
		if !apierrors.IsNotFound(err) {
			s.Skipped = append(s.Skipped, forbidden("Karpenter's nodeclaims or nodepools", "what Karpenter's consolidation will do is not predicted"))
		}
		return nil
	}
	if claims.served {
		s.NodeClaims, s.NodePools = claims.items, pools.items
		if s.NodeClaims == nil {
			s.NodeClaims = []unstructured.Unstructured{} // read: Karpenter is installed
		}
	}
	return nil
}

// listed is the objects of one kind read through the dynamic client, or why there are
// none: the API server does not serve the kind, or refuses the user the list.
type listed struct {
	items             []unstructured.Unstructured
	served, forbidden bool
}

// listKind lists every object of one cluster-scoped kind another project defines.
func listKind(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) (listed, error) {
	var l listed
	err := listPages(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(gvr).List(ctx, o)
	}, unstructuredItems{into[unstructured.Unstructured]{&l.items}})
	switch {
	case apierrors.IsNotFound(err):
		return listed{}, nil
	case apierrors.IsForbidden(err):
		return listed{forbidden: true}, nil
	case err != nil:
		return listed{}, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
	}
	l.served = true
	return l, nil
}

// forbidden is the note for a read the API server refused, and what is lost without it.
func forbidden(what, cost string) snapshot.Problem {
	return snapshot.Problem{Err: fmt.Errorf("not allowed to list %s: %s", what, cost)}
}

// listNamespaces lists the namespaces, which ClusterDisruptionPolicies select by label.
// A user who may read one namespace only may be refused the list: the namespaces are then
// told from the objects read, as namespaces without labels.
func listNamespaces(ctx context.Context, client kubernetes.Interface, s *snapshot.Snapshot) error {
	err := listPages(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Namespaces().List(ctx, o)
	}, collect(&s.Namespaces))
	if apierrors.IsForbidden(err) {
		s.Namespaces = nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	return nil
}

// listOwn lists one of holdfast's own resources; a cluster without its CRD has none.
func listOwn[T any](ctx context.Context, dyn dynamic.Interface, resource, namespace string) ([]T, error) {
	gvr := holdfastv1alpha1.GroupVersion.WithResource(resource)
	var out []T
	err := listPages(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(gvr).Namespace(namespace).List(ctx, o)
	}, converted[T]{into: into[T]{&out}, resource: resource})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", resource, err)
	}
	return out, nil
}

// sink takes a list's items into a snapshot.
type sink interface {
	// grow makes room for n more items, told by the first page.
	grow(n int)
	add(item runtime.Object) error
	// reset drops what was added, for a list that starts over.
	reset()
}

// listPages lists one kind page by page into to. The first page tells how many items
// are left, so the snapshot's slice is made once at its size rather than grown by
// copies of every item (a tenth of plan's CPU at 15,000 pods). A continue token that
// expired before the last page restarts the list in one response, as client-go's pager
// does.
func listPages(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), to sink) error {
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		page, err := list(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			to.reset()
			opts = metav1.ListOptions{}
			continue
		}
		if err != nil {
			return err
		}
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return err
		}
		if opts.Continue == "" {
			to.grow(meta.LenList(page) + int(ptr.Deref(lm.GetRemainingItemCount(), 0)))
		}
		if err := meta.EachListItem(page, to.add); err != nil {
			return err
		}
		if lm.GetContinue() == "" {
			return nil
		}
		opts.Continue = lm.GetContinue()
	}
}

// collect appends each listed item to the slice; the page holds the items. Managed
// fields are dropped: nothing holdfast decides reads them, and a pod carries an entry
// for each of its writers (scheduler, kubelet, controller).
func collect[T any, PT interface {
	*T
	runtime.Object
	metav1.Object
}](slice *[]T) sink {
	return items[T, PT]{into[T]{slice}}
}

// into is the slice a sink fills.
type into[T any] struct{ slice *[]T }

func (i into[T]) grow(n int) { *i.slice = slices.Grow(*i.slice, n) }
func (i into[T]) reset()     { *i.slice = (*i.slice)[:0] }

type items[T any, PT interface {
	*T
	runtime.Object
	metav1.Object
}] struct{ into[T] }

func (c items[T, PT]) add(obj runtime.Object) error {
	item, ok := obj.(PT)
	if !ok {
		return fmt.Errorf("unexpected %T in list", obj)
	}
	item.SetManagedFields(nil)
	*c.slice = append(*c.slice, *item)
	return nil
}

// unstructuredItems appends each listed object as it is, without its managed fields.
type unstructuredItems struct {
	into[unstructured.Unstructured]
}

func (c unstructuredItems) add(obj runtime.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected %T in list", obj)
	}
	u.SetManagedFields(nil)
	*c.slice = append(*c.slice, *u)
	return nil
}

// converted appends each listed object of one of holdfast's own kinds, read through the
// dynamic client, as its Go type.
type converted[T any] struct {
	into[T]
	resource string
}

func (c converted[T]) add(obj runtime.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected %T in list", obj)
	}
	var item T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &item); err != nil {
		return fmt.Errorf("reading %s %s: %w", c.resource, klog.KRef(u.GetNamespace(), u.GetName()), err)
	}
	*c.slice = append(*c.slice, item)
	return nil
}
