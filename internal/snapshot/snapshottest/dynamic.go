package snapshottest

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// DynamicListKinds are the list kinds of every resource the live loader lists through
// the dynamic client (holdfast's and Karpenter's), which a fake dynamic client must know.
func DynamicListKinds() map[schema.GroupVersionResource]string {
	gv, karpenter := holdfastv1alpha1.GroupVersion, snapshot.NodeClaimKind.GroupVersion()
	return map[schema.GroupVersionResource]string{
		gv.WithResource("nodecompanions"):            "NodeCompanionList",
		gv.WithResource("disruptionpolicies"):        "DisruptionPolicyList",
		gv.WithResource("clusterdisruptionpolicies"): "ClusterDisruptionPolicyList",
		karpenter.WithResource("nodeclaims"):         "NodeClaimList",
		karpenter.WithResource("nodepools"):          "NodePoolList",
	}
}
