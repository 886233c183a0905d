package drain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pod cache keeps what the drain and its room checks read, and nothing else: a bare
// pod's requests and placement rules must survive, its image and environment need not.
func TestTrimPodKeepsWhatPlacingTakes(t *testing.T) {
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	always := corev1.ContainerRestartPolicyAlways
	placement := corev1.PodSpec{
		NodeName:     "node-1",
		NodeSelector: map[string]string{"pool": "blue"},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname,
		}}}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}},
		Overhead:                  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ops", Name: "debug", UID: "u1", Labels: map[string]string{"app": "debug"},
			Annotations:   map[string]string{"note": "left out", mirrorPodAnnotation: "m"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: placement,
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &always, Resources: requests}}
	pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "debug:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, Resources: requests}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}

	got, err := trimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ops", Name: "debug", UID: "u1", Labels: map[string]string{"app": "debug"},
			Annotations: map[string]string{mirrorPodAnnotation: "m"},
		},
		Spec: placement,
	}
	want.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: requests}}
	want.Spec.Containers = []corev1.Container{{Name: "main", Resources: requests}}
	want.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed pod (-want +got):\n%s", diff)
	}
}
