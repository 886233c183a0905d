package drain

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Indexes of the pod cache.
const (
	byNode       = "nodeName"
	byController = "controllerUID"
)

// podCache is one watch of the cluster's pods shared by the whole run: every node's drain
// and the pacer read it instead of listing pods again each time they look, which at
// hundreds of nodes was most of a drain's load on the API server. It keeps only what a
// drain reads of each pod.
type podCache struct {
	informer cache.SharedIndexInformer
	mu       sync.Mutex
	// changed is closed, and replaced, when a pod changes.
	changed chan struct{}
}

func newPodCache(client kubernetes.Interface) *podCache {
	inf := coreinformers.NewPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{
		byNode: func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		},
		byController: func(obj any) ([]string, error) {
			if ref := metav1.GetControllerOf(obj.(*corev1.Pod)); ref != nil {
				return []string{string(ref.UID)}, nil
			}
			return nil, nil
		},
	})
	// Set before the informer runs, it cannot fail.
	_ = inf.SetTransform(trimPod)
	c := &podCache{informer: inf, changed: make(chan struct{})}
	notify := func(any) { c.notify() }
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) },
	})
	return c
}

func (c *podCache) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.changed)
	c.changed = make(chan struct{})
}

// changes returns a channel closed at the next change of any pod: a drain waiting on its
// pods wakes when the watch sees something rather than on its next tick.
func (c *podCache) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// start runs the watch until ctx ends and waits for its first list.
func (c *podCache) start(ctx context.Context) error {
	go c.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("watching pods: the first list did not complete")
	}
	return nil
}

func (c *podCache) by(index, value string) []*corev1.Pod {
	objs, err := c.informer.GetIndexer().ByIndex(index, value)
	if err != nil {
		return nil // only an unknown index fails
	}
	return asPods(objs)
}

func asPods(objs []any) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods
}

// onNode returns the pods bound to node. They are the cache's: not to be changed.
func (c *podCache) onNode(node string) []*corev1.Pod { return c.by(byNode, node) }

// all returns every pod cached. They are the cache's: not to be changed.
func (c *podCache) all() []*corev1.Pod { return asPods(c.informer.GetStore().List()) }

// ofController returns the pods whose controller has that UID.
func (c *podCache) ofController(uid types.UID) []*corev1.Pod {
	return c.by(byController, string(uid))
}

// trimPod keeps what a drain reads of a pod: who it is, its labels (budgets select by
// them), annotations (mirror pods), owner, node, emptyDir volumes, phase and conditions;
// and what placing it takes (requests, node selection, tolerations, affinity, spread),
// for the room checks of a pod that no controller replaces from a template.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Labels: pod.Labels, OwnerReferences: pod.OwnerReferences, DeletionTimestamp: pod.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			NodeName: pod.Spec.NodeName, NodeSelector: pod.Spec.NodeSelector, Affinity: pod.Spec.Affinity,
			Tolerations: pod.Spec.Tolerations, TopologySpreadConstraints: pod.Spec.TopologySpreadConstraints,
			Overhead: pod.Spec.Overhead, Resources: pod.Spec.Resources,
			InitContainers: requestsOnly(pod.Spec.InitContainers), Containers: requestsOnly(pod.Spec.Containers),
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase, Conditions: pod.Status.Conditions},
	}
	if v, ok := pod.Annotations[mirrorPodAnnotation]; ok {
		out.Annotations = map[string]string{mirrorPodAnnotation: v}
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}
	return out, nil
}

// requestsOnly keeps of each container what the scheduler counts: its resources, and
// whether an init container runs beside the others (restartPolicy Always).
func requestsOnly(containers []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}
