package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

func TestToWorkloadReadsReadinessAndRollouts(t *testing.T) {
	deployment := func(mod func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), MinReadySeconds: 5},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2},
		}
		if mod != nil {
			mod(d)
		}
		return d
	}
	tests := map[string]struct {
		obj         metav1.Object
		ready       int32
		rollingOut  bool
		minReadySec int32
	}{
		"settled Deployment, one pod not Ready": {obj: deployment(nil), ready: 2, minReadySec: 5},
		"spec not observed yet":                 {obj: deployment(func(d *appsv1.Deployment) { d.Generation = 3 }), ready: 2, rollingOut: true, minReadySec: 5},
		"old pods left":                         {obj: deployment(func(d *appsv1.Deployment) { d.Status.Replicas, d.Status.UpdatedReplicas = 4, 2 }), ready: 2, rollingOut: true, minReadySec: 5},
		"StatefulSet between revisions": {obj: &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.StatefulSetStatus{UpdatedReplicas: 2, ReadyReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}}, ready: 2, rollingOut: true},
		"DaemonSet not yet updated on every node": {obj: &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{MinReadySeconds: 7},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, UpdatedNumberScheduled: 3, NumberReady: 4}}, ready: 4, rollingOut: true, minReadySec: 7},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := WorkloadOf(tc.obj)
			if w.Ready != tc.ready || w.RollingOut != tc.rollingOut || w.MinReadySeconds != tc.minReadySec {
				t.Errorf("ready %d, rolling out %t, minReadySeconds %d; want %d, %t, %d", w.Ready, w.RollingOut, w.MinReadySeconds, tc.ready, tc.rollingOut, tc.minReadySec)
			}
		})
	}
}

func TestReadinessFallsBackToCreation(t *testing.T) {
	created := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	changed := created.Add(time.Minute)
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	if ready, since := availability.Readiness(pending); ready || !since.Equal(created) {
		t.Errorf("pending pod: %t since %s, want not Ready since its creation", ready, since)
	}
	running := pending.DeepCopy()
	running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(changed)}}
	if ready, since := availability.Readiness(running); !ready || !since.Equal(changed) {
		t.Errorf("running pod: %t since %s, want Ready since %s", ready, since, changed)
	}
}

// A surge set is a ReplicaSet with holdfast's label and a DisruptionPolicy as its
// controller, not being deleted.
func TestSurgeSetOf(t *testing.T) {
	set := func(mod func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "holdfast-surge-web",
			Labels:          map[string]string{holdfastv1alpha1.SurgeOfLabel: "uid-web"},
			Annotations:     map[string]string{holdfastv1alpha1.SurgeForAnnotation: "web", holdfastv1alpha1.HandOffAnnotation: "n1 2026-11-22T12:00:00Z 1"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DisruptionPolicy", Name: "p", Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}}
		if mod != nil {
			mod(rs)
		}
		return rs
	}
	got, ok := SurgeSetOf(set(nil))
	want := SurgeSet{Name: "holdfast-surge-web", Policy: "p", Deployment: "web", DeploymentUID: "uid-web", Replicas: 2, HandOff: "n1 2026-11-22T12:00:00Z 1"}
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("SurgeSetOf = %t (-want +got):\n%s", ok, diff)
	}
	for name, mod := range map[string]func(*appsv1.ReplicaSet){
		"a Deployment's own ReplicaSet": func(rs *appsv1.ReplicaSet) { rs.Labels = nil; rs.OwnerReferences[0].Kind = "Deployment" },
		"labelled, but not a policy's":  func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil },
		"being deleted":                 func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = ptr.To(metav1.NewTime(now)) },
	} {
		if _, ok := SurgeSetOf(set(mod)); ok {
			t.Errorf("%s: read as a surge set", name)
		}
	}
}
