package disruptionpolicy

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/apply"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// surge writes a surge set as s says, in one write: an apply that makes or resizes it
// with its Deployment's current template, or its deletion with its pods. One write
// leaves nothing half done for a crash to strand: a restarted operator finds the set,
// or not, and decides again from it. The Deployment itself is only read.
func (r *reconciler) surge(ctx context.Context, p *holdfastv1alpha1.DisruptionPolicy, s policy.Surge) error {
	if s.Delete {
		set := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: s.Name}}
		if err := r.client.Delete(ctx, set, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting surge set %s: %w", klog.KObj(set), err)
		}
		return nil
	}
	d := &appsv1.Deployment{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: s.Deployment}, d); err != nil {
		return fmt.Errorf("reading Deployment %s for its surge set: %w", klog.KRef(p.Namespace, s.Deployment), err)
	}
	if d.UID != s.DeploymentUID {
		return fmt.Errorf("the Deployment %s was made anew since its surge was decided: deciding again", klog.KObj(d))
	}
	return apply.SurgeSet(ctx, r.client, r.live, policy.SurgeReplicaSet(p, d, s))
}
