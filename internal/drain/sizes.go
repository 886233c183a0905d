package drain

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// sizeCache is the run's watch of the sizes ReplicaSets and StatefulSets want: the pacer
// asks for one after nearly every eviction, and reading each from the API server was a
// third of a drain's requests at 1,000 nodes. It keeps only names and replicas. It
// watches the names of the DaemonSets too, for kubectl's rule on a DaemonSet's orphans,
// which every look at a node's pods applies.
type sizeCache struct {
	factory     informers.SharedInformerFactory
	replicaSets cache.SharedIndexInformer
	sets        cache.SharedIndexInformer
	daemonSets  cache.SharedIndexInformer
}

func newSizeCache(client kubernetes.Interface) *sizeCache {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trimToSize))
	return &sizeCache{factory: f, replicaSets: f.Apps().V1().ReplicaSets().Informer(), sets: f.Apps().V1().StatefulSets().Informer(),
		daemonSets: f.Apps().V1().DaemonSets().Informer()}
}

// start runs the watches until ctx ends and waits for their first lists.
func (c *sizeCache) start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.replicaSets.HasSynced, c.sets.HasSynced, c.daemonSets.HasSynced) {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("watching ReplicaSets, StatefulSets and DaemonSets: the first list did not complete")
	}
	return nil
}

// daemonSetExists reports whether the watch holds the DaemonSet (an availability.DaemonSets).
func (c *sizeCache) daemonSetExists(namespace, name string) bool {
	_, ok, err := c.daemonSets.GetStore().GetByKey(namespace + "/" + name)
	return ok && err == nil
}

// desired returns the replicas the workload's spec wants, if the watch has seen it. A
// workload the watch has not seen (created a moment ago, or gone) is for the caller to read.
func (c *sizeCache) desired(key workloadKey) (replicas *int32, found bool) {
	inf := c.replicaSets
	if key.kind == "StatefulSet" {
		inf = c.sets
	}
	obj, ok, err := inf.GetStore().GetByKey(key.namespace + "/" + key.name)
	if err != nil || !ok {
		return nil, false
	}
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		return o.Spec.Replicas, true
	case *appsv1.StatefulSet:
		return o.Spec.Replicas, true
	}
	return nil, false
}

// trimToSize keeps of a ReplicaSet or StatefulSet what sizeCache reads, of a DaemonSet
// its name.
func trimToSize(obj any) (any, error) {
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
	}
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{ObjectMeta: meta(o.ObjectMeta), Spec: appsv1.ReplicaSetSpec{Replicas: o.Spec.Replicas}}, nil
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: meta(o.ObjectMeta), Spec: appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas}}, nil
	case *appsv1.DaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: meta(o.ObjectMeta)}, nil
	}
	return obj, nil // a tombstone
}
