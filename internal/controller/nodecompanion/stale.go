package nodecompanion

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodesGone returns the pods of candidates whose node the apiserver confirms gone.
// Decide names the pods bound to nodes missing from the cache, but the node informer
// can lag the pod informer: a pod bound to a node the cache has not seen yet would be
// force-deleted with a live kubelet under it. A force deletion cannot be taken back, so
// it waits for the apiserver's word; a node that exists arrives on the watch and wakes
// the next pass.
func nodesGone(ctx context.Context, live client.Reader, candidates []*corev1.Pod) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	gone := map[string]bool{}
	for _, pod := range candidates {
		name := pod.Spec.NodeName
		if _, asked := gone[name]; !asked {
			err := live.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
			switch {
			case apierrors.IsNotFound(err):
				gone[name] = true
			case err != nil:
				return nil, fmt.Errorf("getting node %s: %w", name, err)
			default:
				gone[name] = false
			}
		}
		if gone[name] {
			out = append(out, pod)
		}
	}
	return out, nil
}
