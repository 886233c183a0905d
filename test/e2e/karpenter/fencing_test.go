//go:build e2e

package karpenter

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// holdFinalizer is the test's own finalizer, which keeps a NodeClaim being deleted.
const holdFinalizer = "e2e.holdfast.dev/hold"

// A Karpenter NodeClaim being deleted is no proof that its node is down: Karpenter
// drains a node before it ends the instance. A StatefulSet's node crashes under
// fencing: Verified and its NodeClaim is deleted, but kept (a finalizer of the test's):
// the policy reports the node lost and not proven down, and the node never carries the
// out-of-service taint meanwhile. Once the NodeClaim may go, Karpenter finishes: it
// removes the node after its drain (pods stuck terminating on a dead node count as gone
// a minute past their grace period), then the NodeClaim; the StatefulSet's pod, orphaned,
// is deleted by the pod garbage collector and starts on a new node.
func TestDeletingNodeClaimIsNoProof(t *testing.T) {
	f := framework.New(t)
	hc := f.HoldfastClient()
	f.InstallCRDs(hc, &holdfastv1alpha1.DisruptionPolicyList{})
	t.Cleanup(func() {
		if err := hc.DeleteAllOf(context.Background(), &holdfastv1alpha1.DisruptionPolicy{}, client.InNamespace(f.Namespace)); err != nil {
			t.Logf("deleting DisruptionPolicies: %v", err)
		}
	})
	f.Settings.Failure.NamespacedFencing = true
	f.StartOperator()
	f.NodePool("Never", nil)
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			NodeFailure:    &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified},
		},
	}
	if err := hc.Create(f.Ctx, p); err != nil {
		t.Fatalf("creating DisruptionPolicy db: %v", err)
	}
	db := f.StatefulSet("db", 1)
	db.Spec.Template.Spec.NodeSelector = f.NodePoolSelector()
	db.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	f.Create(db)
	f.WaitReadyWithin(provision, db)
	pods, err := f.Pods(f.Ctx, "app=db")
	if err != nil || len(pods) != 1 {
		t.Fatalf("db's pods: %d (%v), want 1", len(pods), err)
	}
	node := pods[0].Spec.NodeName
	claim := claimOf(f, node)
	holdClaim(f, claim, true)
	t.Cleanup(func() { holdClaim(f, claim, false) })

	f.CrashNode(node)
	if err := f.Client.Delete(f.Ctx, claim); err != nil {
		t.Fatalf("deleting NodeClaim %s: %v", claim.GetName(), err)
	}
	fenced := func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := f.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.OutOfServiceTaintKey }), nil
	}
	samples, tainted := 0, 0
	var message string
	f.Eventually(provision, "the policy to report node "+node+" lost and not proven down", func(ctx context.Context) (bool, error) {
		on, err := fenced(ctx)
		if err != nil {
			return false, err
		}
		samples++
		if on {
			tainted++
			return true, nil // fenced without proof: no need to wait further
		}
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := hc.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		i := slices.IndexFunc(cur.Status.Workloads, func(w holdfastv1alpha1.WorkloadStatus) bool { return w.Name == "db" })
		if !slices.Contains(cur.Status.LostNodes, node) || i < 0 {
			return false, nil
		}
		message = cur.Status.Workloads[i].Message
		return strings.Contains(message, "node "+node+" not proven down"), nil
	})
	t.Logf("status while NodeClaim %s is being deleted: %s", claim.GetName(), message)
	t.Logf("FIGURE karpenter deleting-nodeclaim out-of-service-samples=%d of %d", tainted, samples)
	if tainted > 0 {
		t.Fatalf("node %s tainted out-of-service while its NodeClaim was only being deleted (sample %d)", node, samples)
	}
	if cur, err := f.Pods(f.Ctx, "app=db"); err != nil || len(cur) != 1 || cur[0].UID != pods[0].UID {
		t.Fatalf("db's pod %s released while NodeClaim %s was only being deleted", pods[0].Name, claim.GetName())
	}

	holdClaim(f, claim, false)
	samples, tainted = 0, 0
	f.Eventually(disrupt, "NodeClaim "+claim.GetName()+" gone", func(ctx context.Context) (bool, error) {
		if on, err := fenced(ctx); err == nil {
			samples++
			if on {
				tainted++
			}
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(framework.NodeClaimKind)
		err := f.Client.Get(ctx, client.ObjectKeyFromObject(claim), cur)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	// The NodeClaim gone is proof: a node still there must be fenced.
	nodeGone := false
	f.Eventually(provision, "node "+node+" fenced or gone", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
		if nodeGone = apierrors.IsNotFound(err); nodeGone {
			return true, nil
		}
		return fenced(ctx)
	})
	f.Eventually(provision, "db Ready on another node", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, "app=db")
		if err != nil {
			return false, err
		}
		return len(pods) == 1 && pods[0].Spec.NodeName != node && pods[0].DeletionTimestamp == nil && framework.PodReady(&pods[0]), nil
	})
	// Karpenter ends a registered NodeClaim only once its node is gone, so the fence
	// has no node left to taint: say what happened.
	t.Logf("FIGURE karpenter nodeclaim-released out-of-service-samples=%d of %d until the NodeClaim was gone; node gone then: %t", tainted, samples, nodeGone)
}

// claimOf is the NodeClaim that launched node.
func claimOf(f *framework.Framework, node string) *unstructured.Unstructured {
	f.T.Helper()
	claims, err := f.NodeClaims(f.Ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range claims {
		if name, _, _ := unstructured.NestedString(claims[i].Object, "status", "nodeName"); name == node {
			return &claims[i]
		}
	}
	f.T.Fatalf("no NodeClaim launched node %s", node)
	return nil
}

// holdClaim adds the test's finalizer to a NodeClaim, or removes it; a NodeClaim
// already gone is fine. Karpenter writes the finalizers too: the update is retried on
// conflict from a fresh read.
func holdClaim(f *framework.Framework, claim *unstructured.Unstructured, hold bool) {
	f.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(framework.NodeClaimKind)
		if err := f.Client.Get(context.Background(), client.ObjectKeyFromObject(claim), cur); err != nil {
			return err
		}
		fins := slices.DeleteFunc(cur.GetFinalizers(), func(s string) bool { return s == holdFinalizer })
		if hold {
			fins = append(fins, holdFinalizer)
		}
		cur.SetFinalizers(fins)
		return f.Client.Update(context.Background(), cur)
	})
	if client.IgnoreNotFound(err) != nil {
		f.T.Errorf("%s the finalizer %s on NodeClaim %s: %v", map[bool]string{true: "adding", false: "removing"}[hold], holdFinalizer, claim.GetName(), err)
	}
}
