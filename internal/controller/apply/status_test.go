package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// A field that goes empty must be removed, not kept: the bug of a policy whose
// status.lostNodes stayed after the node came back, so that each status patch changed
// nothing and the reconciler waited for ever for its own write.
func TestStatusPatchRemovesWhatWentEmpty(t *testing.T) {
	old := holdfastv1alpha1.DisruptionPolicyStatus{
		Selected: 2, Recovering: 1, LostNodes: []string{"node-1"},
		Window: &holdfastv1alpha1.WindowStatus{Open: true, ClosesAt: &metav1.Time{}},
	}
	cur := holdfastv1alpha1.DisruptionPolicyStatus{Selected: 2, Window: &holdfastv1alpha1.WindowStatus{Open: false}}
	got, err := StatusPatch(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":{"blocked":0,"budgeted":0,"conflicting":0,"degraded":0,"lostNodes":null,"recovering":0,"selected":2,"unprotected":0,"window":{"closesAt":null,"open":false}}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}
