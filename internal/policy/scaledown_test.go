package policy_test

import (
	"cmp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

func TestConsolidatableSince(t *testing.T) {
	claim := func(conds ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	cond := func(typ, status, at string) map[string]any {
		return map[string]any{"type": typ, "status": status, "lastTransitionTime": at}
	}
	at := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		claim *unstructured.Unstructured
		want  time.Time
	}{
		"no status":                      {claim: &unstructured.Unstructured{}},
		"Consolidatable True":            {claim: claim(cond("Ready", "True", "2026-11-23T17:00:00Z"), cond("Consolidatable", "True", "2026-11-23T18:00:00Z")), want: at},
		"Consolidatable False":           {claim: claim(cond("Consolidatable", "False", "2026-11-23T18:00:00Z"))},
		"a time Karpenter did not write": {claim: claim(cond("Consolidatable", "True", "yesterday"))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := policy.ConsolidatableSince(tc.claim); !got.Equal(tc.want) {
				t.Errorf("ConsolidatableSince = %v, want %v", got, tc.want)
			}
		})
	}
}

// Marking a pod safe to evict must change nothing but cluster-autoscaler's reading of
// its budget: a pod with local storage or in kube-system would pass other checks too.
func TestPodOfUnsafe(t *testing.T) {
	vol := func(name string, src corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: src}
	}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	tests := map[string]struct {
		namespace   string
		annotations map[string]string
		volumes     []corev1.Volume
		want        string
	}{
		"no volumes":            {},
		"a ConfigMap":           {volumes: []corev1.Volume{vol("config", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}})}},
		"an emptyDir in memory": {volumes: []corev1.Volume{vol("tmp", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}})}},
		"an emptyDir on disk":   {volumes: []corev1.Volume{vol("cache", emptyDir)}, want: "its volume cache is local storage"},
		"a hostPath":            {volumes: []corev1.Volume{vol("logs", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}})}, want: "its volume logs is local storage"},
		"an emptyDir listed as safe to lose": {
			annotations: map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "scratch,cache"},
			volumes:     []corev1.Volume{vol("cache", emptyDir)},
		},
		"one of two emptyDirs listed": {
			annotations: map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "cache"},
			volumes:     []corev1.Volume{vol("cache", emptyDir), vol("data", emptyDir)},
			want:        "its volume data is local storage",
		},
		"kube-system": {namespace: "kube-system", want: "it runs in kube-system"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: cmp.Or(tc.namespace, "shop"), Annotations: tc.annotations},
				Spec: corev1.PodSpec{Volumes: tc.volumes}}
			got, ok := policy.PodOf(pod)
			if !ok || got.Unsafe != tc.want {
				t.Errorf("PodOf(...).Unsafe = %q (%t), want %q", got.Unsafe, ok, tc.want)
			}
		})
	}
}
