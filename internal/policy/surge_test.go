package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// The surge set runs the Deployment's template, counted by the Deployment's selector
// (Services, budgets), while neither the Deployment nor its ReplicaSets can take it or
// its pods; the policy owns it, and the Deployment is left as it was.
func TestSurgeReplicaSet(t *testing.T) {
	p := policy("p", 0, nil)
	p.UID = "uid-p"
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "uid-web", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas:        ptr.To[int32](1),
			MinReadySeconds: 5,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "version": "2"}, Annotations: map[string]string{"a": "b"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:2"}}},
			},
		},
	}
	before := d.DeepCopy()
	rs := SurgeReplicaSet(&p, d, Surge{Name: SurgeSetName("web"), Deployment: "web", DeploymentUID: "uid-web", Replicas: 2, HandOff: "n1 2026-11-22T12:00:00Z 1"})
	if diff := cmp.Diff(before, d); diff != "" {
		t.Errorf("SurgeReplicaSet modified the Deployment:\n%s", diff)
	}
	if rs.Name != "holdfast-surge-web" || *rs.Spec.Replicas != 2 || rs.Spec.MinReadySeconds != 5 {
		t.Errorf("surge set %s with %d replicas, minReadySeconds %d", rs.Name, *rs.Spec.Replicas, rs.Spec.MinReadySeconds)
	}
	podLabels := labels.Set(rs.Spec.Template.Labels)
	deploymentSel, _ := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	// A ReplicaSet of the Deployment selects its template's labels and pod-template-hash.
	ownRS := labels.SelectorFromSet(labels.Set{"app": "web", "pod-template-hash": "abc"})
	setSel, _ := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	switch {
	case !deploymentSel.Matches(podLabels):
		t.Errorf("the Deployment's selector (its budget's, a Service's) does not count the extra pods %v", podLabels)
	case ownRS.Matches(podLabels):
		t.Errorf("a ReplicaSet of the Deployment would select the extra pods %v", podLabels)
	case !setSel.Matches(podLabels) || setSel.Matches(labels.Set{"app": "web", "pod-template-hash": "abc"}):
		t.Errorf("the set's selector %v selects more or less than its own pods", setSel)
	case deploymentSel.Matches(labels.Set(rs.Labels)):
		t.Errorf("the Deployment's selector matches the set's labels %v: it would adopt it", rs.Labels)
	}
	if diff := cmp.Diff(d.Spec.Template.Spec, rs.Spec.Template.Spec); diff != "" {
		t.Errorf("the extra pods do not run the Deployment's template:\n%s", diff)
	}
	owner := metav1.GetControllerOf(rs)
	if owner == nil || owner.Kind != "DisruptionPolicy" || owner.Name != "p" || owner.UID != "uid-p" || owner.BlockOwnerDeletion != nil {
		t.Errorf("controller %+v, want the policy, not blocking its deletion", owner)
	}
	if got, ok := SurgeSetOf(rs); !ok || got.Deployment != "web" || got.DeploymentUID != "uid-web" || got.Replicas != 2 || got.HandOff != "n1 2026-11-22T12:00:00Z 1" {
		t.Errorf("read back as %+v, %t", got, ok)
	}
}

// One set per Deployment, with a name that fits every pod it makes.
func TestSurgeSetName(t *testing.T) {
	long := strings.Repeat("a", 253)
	if got := SurgeSetName("web"); got != "holdfast-surge-web" {
		t.Errorf("SurgeSetName(web) = %s", got)
	}
	got := SurgeSetName(long)
	if len(got) > maxSurgeSetName || got == SurgeSetName(long[:252]+"b") {
		t.Errorf("SurgeSetName of a long name = %s (%d characters), not unique within %d", got, len(got), maxSurgeSetName)
	}
	if !strings.HasPrefix(got, surgeSetPrefix) {
		t.Errorf("SurgeSetName = %s, want the prefix %s", got, surgeSetPrefix)
	}
}
