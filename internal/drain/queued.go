package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
)

// QueuedTaintKey marks, with effect PreferNoSchedule, the nodes a drain will get to later.
// The scheduler then places evicted pods' replacements on other nodes when it can, so a
// pod moved off the first node is not moved again when its new node's turn comes (the
// cluster-autoscaler marks the nodes it is about to remove the same way). Each node loses
// the mark when it is cordoned, and every node of the run loses it when the run ends.
const QueuedTaintKey = "holdfast.dev/drain-queued"

// WithQueuedTaint returns taints with the queued mark added or removed, and whether that
// changed anything.
func WithQueuedTaint(taints []corev1.Taint, on bool) ([]corev1.Taint, bool) {
	i := slices.IndexFunc(taints, func(t corev1.Taint) bool { return t.Key == QueuedTaintKey })
	switch {
	case on && i < 0:
		return append(slices.Clone(taints), corev1.Taint{Key: QueuedTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}), true
	case !on && i >= 0:
		return slices.Delete(slices.Clone(taints), i, i+1), true
	}
	return taints, false
}

// markQueued adds the queued mark to a node and names the run's Lease on it
// (RunAnnotation), or takes the mark off once the node is cordoned.
func (d *Drainer) markQueued(ctx context.Context, node string, on bool) error {
	return d.updateNode(ctx, node, func(n *corev1.Node) bool {
		taints, changed := WithQueuedTaint(n.Spec.Taints, on)
		n.Spec.Taints = taints
		if on && n.Annotations[RunAnnotation] != d.run {
			metav1.SetMetaDataAnnotation(&n.ObjectMeta, RunAnnotation, d.run)
			changed = true
		}
		return changed
	})
}

// updateNode changes the node as change says, and writes it if change reports a change.
func (d *Drainer) updateNode(ctx context.Context, node string, change func(*corev1.Node) bool) error {
	nodes := d.Client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := n.DeepCopy()
		if !change(changed) {
			return nil
		}
		return patchNode(ctx, nodes, n, changed)
	})
	if err != nil {
		return fmt.Errorf("updating node %s: %w", node, err)
	}
	return nil
}

// patchNode writes the difference from orig to changed as a patch, the drainer's only
// write to nodes (its role grants patch, not update: an update could rewrite any field
// of the node). The patch carries orig's resourceVersion, so that a node changed since it
// was read fails it (409) and the change is made again on the node as it is.
func patchNode(ctx context.Context, nodes typedcorev1.NodeInterface, orig, changed *corev1.Node) error {
	from, err := json.Marshal(orig)
	if err != nil {
		return err
	}
	to, err := json.Marshal(changed)
	if err != nil {
		return err
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return err
	}
	var fields map[string]any
	if err := json.Unmarshal(patch, &fields); err != nil {
		return err
	}
	meta, _ := fields["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		fields["metadata"] = meta
	}
	meta["resourceVersion"] = orig.ResourceVersion
	if patch, err = json.Marshal(fields); err != nil {
		return err
	}
	_, err = nodes.Patch(ctx, orig.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// release takes the queued mark and the run's annotation off every node of the run, even
// after Ctrl-C or a timeout, so that no node stays less preferred than it should. A node
// another run has claimed since keeps that run's annotation.
func (d *Drainer) release(ctx context.Context, nodes []string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	for _, n := range nodes {
		err := d.updateNode(ctx, n, func(n *corev1.Node) bool {
			_, queued := WithQueuedTaint(n.Spec.Taints, false)
			l := Leftover{QueuedTaint: queued, RunAnnotation: d.run != "" && n.Annotations[RunAnnotation] == d.run}
			l.Apply(n)
			return !l.Empty()
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
