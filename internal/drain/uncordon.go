package drain

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Uncordon makes the node schedulable, as kubectl uncordon does, and clears what holdfast
// drains left on it (Leftovers of the node uncordoned, whatever run claims it: whoever
// gives a node back ends every drain's claim on it). It reports whether the node was
// cordoned, and what it cleared.
func Uncordon(ctx context.Context, client kubernetes.Interface, node string) (cordoned bool, left Leftover, err error) {
	nodes := client.CoreV1().Nodes()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		orig, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n := orig.DeepCopy()
		cordoned = n.Spec.Unschedulable
		n.Spec.Unschedulable = false
		left = Leftovers(n, false)
		if !cordoned && !left.QueuedTaint && !left.RunAnnotation {
			return nil
		}
		left.Apply(n)
		return patchNode(ctx, nodes, orig, n)
	})
	if err != nil {
		return false, Leftover{}, fmt.Errorf("uncordoning node %s: %w", node, err)
	}
	if patch := left.StatusPatch(); patch != nil {
		if _, err := nodes.Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return cordoned, left, fmt.Errorf("removing the drain conditions of node %s: %w", node, err)
		}
	}
	return cordoned, left, nil
}
