package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func TestConsentOf(t *testing.T) {
	fences := func(after time.Duration) *holdfastv1alpha1.NodeFailureSpec {
		f := &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified}
		if after > 0 {
			f.FenceAfter = &metav1.Duration{Duration: after}
		}
		return f
	}
	cluster := func(f *holdfastv1alpha1.NodeFailureSpec) *holdfastv1alpha1.ClusterDisruptionPolicy {
		c := &holdfastv1alpha1.ClusterDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "defaults", UID: types.UID("uid-1")}}
		c.Spec.Template.NodeFailure = f
		return c
	}
	// copyOf is a policy with f, as owner's copy: its label, and owned by it.
	copyOf := func(owner *holdfastv1alpha1.ClusterDisruptionPolicy, f *holdfastv1alpha1.NodeFailureSpec) *holdfastv1alpha1.DisruptionPolicy {
		p := policy("defaults", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.NodeFailure = f })
		p.Labels = map[string]string{holdfastv1alpha1.ClusterPolicyLabel: owner.Name}
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ClusterDisruptionPolicy", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		return &p
	}
	own := func(f *holdfastv1alpha1.NodeFailureSpec) *holdfastv1alpha1.DisruptionPolicy {
		p := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.NodeFailure = f })
		return &p
	}
	forged := own(fences(0))
	forged.Labels = map[string]string{holdfastv1alpha1.ClusterPolicyLabel: "defaults"}
	tests := map[string]struct {
		p        *holdfastv1alpha1.DisruptionPolicy
		settings FailureSettings
		owner    *holdfastv1alpha1.ClusterDisruptionPolicy
		want     Consent
	}{
		"no fencing asked: nothing to consent to": {p: own(nil), want: Consent{}},
		"a namespace's own policy: refused":       {p: own(fences(0)), want: Consent{Why: msgFencingNotAllowed}},
		"a namespace's own policy, namespaced fencing allowed": {p: own(fences(0)), settings: FailureSettings{NamespacedFencing: true},
			want: Consent{Fence: true}},
		"a cluster policy's copy, its template fencing": {p: copyOf(cluster(fences(0)), fences(0)), owner: cluster(fences(0)),
			want: Consent{Fence: true}},
		"a cluster policy's copy, its template not fencing (the copy edited)": {p: copyOf(cluster(nil), fences(0)), owner: cluster(nil),
			want: Consent{Why: msgFencingNotAllowed}},
		"a namespace's policy labelled as a copy, not owned: refused": {p: forged, owner: cluster(fences(0)),
			want: Consent{Why: msgFencingNotAllowed}},
		"fenceAfter without the operator's leave: fencing on proof only": {p: copyOf(cluster(fences(time.Minute)), fences(time.Minute)), owner: cluster(fences(time.Minute)),
			want: Consent{Fence: true, Why: msgFenceAfterNotAllowed}},
		"fenceAfter with the operator's leave": {p: own(fences(time.Minute)), settings: FailureSettings{NamespacedFencing: true, FenceAfter: true},
			want: Consent{Fence: true, FenceAfter: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ConsentOf(tc.p, tc.settings, tc.owner)); diff != "" {
				t.Errorf("ConsentOf (-want +got):\n%s", diff)
			}
		})
	}
}
