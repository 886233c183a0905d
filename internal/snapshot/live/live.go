// Package live gathers a Snapshot from a cluster's API server. It is the only part of
// snapshot gathering that needs a client, kept apart so that the packages that decide
// (availability, audit, plan) import no client.
package live

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// pageSize keeps each list response small enough for the API server to serve from its
// watch cache without holding a large response in memory on either side.
const pageSize = 500

// Load lists every object holdfast reads from the cluster. Namespaced kinds are listed
// in namespace, or in every namespace when namespace is metav1.NamespaceAll; nodes and
// priority classes are cluster-scoped and always listed. holdfast's own resources are
// listed through dyn, when given.
func Load(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, namespace string) (*snapshot.Snapshot, error) {
	return load(ctx, client, dyn, namespace, true)
}

// LoadWithoutPods is Load without pods and holdfast's own resources, for a caller that
// watches the pods already: at tens of thousands of pods they are most of a read's cost.
func LoadWithoutPods(ctx context.Context, client kubernetes.Interface, namespace string) (*snapshot.Snapshot, error) {
	return load(ctx, client, nil, namespace, false)
}

func load(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, namespace string, withPods bool) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{Source: snapshot.SourceLive}
	core, apps := client.CoreV1(), client.AppsV1()
	type kind struct {
		what string
		list func(context.Context, metav1.ListOptions) (runtime.Object, error)
		add  func(runtime.Object) error
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
	// The kinds are listed at once: each page is a round trip to the API server, and a
	// cluster's pods alone are a hundred of them at 50,000 pods.
	g, ctx := errgroup.WithContext(ctx)
	for _, l := range lists {
		g.Go(func() error {
			p := pager.New(l.list)
			p.PageSize = pageSize
			if err := p.EachListItem(ctx, metav1.ListOptions{}, l.add); err != nil {
				return fmt.Errorf("listing %s: %w", l.what, err)
			}
			return nil
		})
	}
	g.Go(func() error { return listNamespaces(ctx, client, s) })
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
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return s, nil
}

// listNamespaces lists the namespaces, which ClusterDisruptionPolicies select by label.
// A user who may read one namespace only may be refused the list: the namespaces are then
// told from the objects read, as namespaces without labels.
func listNamespaces(ctx context.Context, client kubernetes.Interface, s *snapshot.Snapshot) error {
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Namespaces().List(ctx, o)
	})
	p.PageSize = pageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, collect(&s.Namespaces))
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
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(gvr).Namespace(namespace).List(ctx, o)
	})
	p.PageSize = pageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("unexpected %T in list", obj)
		}
		var item T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &item); err != nil {
			return fmt.Errorf("reading %s %s: %w", resource, klog.KRef(u.GetNamespace(), u.GetName()), err)
		}
		out = append(out, item)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", resource, err)
	}
	return out, nil
}

// collect appends each listed item to the slice; the pager hands out pointers into its
// page. Managed fields are dropped: nothing holdfast decides reads them, and a pod
// carries an entry for each of its writers (scheduler, kubelet, controller).
func collect[T any, PT interface {
	*T
	runtime.Object
	metav1.Object
}](slice *[]T) func(runtime.Object) error {
	return func(obj runtime.Object) error {
		item, ok := obj.(PT)
		if !ok {
			return fmt.Errorf("unexpected %T in list", obj)
		}
		item.SetManagedFields(nil)
		*slice = append(*slice, *item)
		return nil
	}
}
