// Package roompods lists the pods that hold room on the cluster's nodes, for the
// controllers that run the planner's scheduling simulation.
package roompods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// page bounds one list of the cluster's pods.
const page = 500

// Finished pods hold no room.
var unfinished = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
)

// List lists the cluster's pods that are not finished, a page at a time.
func List(ctx context.Context, r client.Reader) ([]corev1.Pod, error) {
	var out []corev1.Pod
	list := &corev1.PodList{}
	for {
		opts := []client.ListOption{client.Limit(page), client.Continue(list.Continue), client.MatchingFieldsSelector{Selector: unfinished}}
		if err := r.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing running pods: %w", err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
	}
}
