package disruptionpolicy

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Issue 17 item 5: whichever of the two writes of a surge or a scale-back fails (an
// operator killed between them), an autoscaler is never left raised with its Deployment
// unmarked, where nothing would ever restore it.
func TestScaleNeverLeavesAutoscalerRaisedUnmarked(t *testing.T) {
	type state struct {
		Replicas       int32
		Mark           string
		Min, Max       int32
		AutoscalerMark string
	}
	start := &policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1),
		Autoscaler: &policy.AutoscalerBounds{Name: "web", Min: 2, Max: 2, Original: "1/1"}}
	back := &policy.Scale{Name: "web", From: 2, Replicas: 1, Autoscaler: &policy.AutoscalerBounds{Name: "web", Min: 1, Max: 1}}
	unsurged := state{Replicas: 1, Min: 1, Max: 1}
	surged := state{Replicas: 2, Mark: "1", Min: 2, Max: 2, AutoscalerMark: "1/1"}
	tests := map[string]struct {
		from  state
		scale *policy.Scale
		fail  string // the kind whose patch fails
		want  state
	}{
		"surge":                               {from: unsurged, scale: start, want: surged},
		"surge, killed before the autoscaler": {from: unsurged, scale: start, fail: "HorizontalPodAutoscaler", want: state{Replicas: 2, Mark: "1", Min: 1, Max: 1}},
		"scale-back":                          {from: surged, scale: back, want: unsurged},
		"scale-back, killed before the Deployment": {from: surged, scale: back, fail: "Deployment", want: state{Replicas: 2, Mark: "1", Min: 1, Max: 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tc.from.Replicas)}}
			if tc.from.Mark != "" {
				d.Annotations = map[string]string{holdfastv1alpha1.SurgeOriginalReplicasAnnotation: tc.from.Mark}
			}
			h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To(tc.from.Min), MaxReplicas: tc.from.Max}}
			if tc.from.AutoscalerMark != "" {
				h.Annotations = map[string]string{holdfastv1alpha1.SurgeOriginalBoundsAnnotation: tc.from.AutoscalerMark}
			}
			c := fake.NewClientBuilder().WithObjects(d, h).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					kind := "Deployment"
					if _, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
						kind = "HorizontalPodAutoscaler"
					}
					if kind == tc.fail {
						return errors.New("killed")
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			r := &reconciler{client: c, live: c}
			err := r.scale(context.Background(), "ns", *tc.scale)
			if (err != nil) != (tc.fail != "") {
				t.Fatalf("scale: %v", err)
			}
			gotD, gotH := &appsv1.Deployment{}, &autoscalingv2.HorizontalPodAutoscaler{}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, gotD); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, gotH); err != nil {
				t.Fatal(err)
			}
			got := state{Replicas: ptr.Deref(gotD.Spec.Replicas, 0), Mark: gotD.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation],
				Min: ptr.Deref(gotH.Spec.MinReplicas, 0), Max: gotH.Spec.MaxReplicas, AutoscalerMark: gotH.Annotations[holdfastv1alpha1.SurgeOriginalBoundsAnnotation]}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after scale (-want +got):\n%s", diff)
			}
			if got.AutoscalerMark != "" && got.Mark == "" {
				t.Errorf("the autoscaler is left raised and its Deployment unmarked: nothing would restore it")
			}
		})
	}
}

// Issue 17 item 6: a scale decided on a size the Deployment no longer has (a user or
// an autoscaler changed it since the cache was read) is refused, so that the decision
// is made again rather than overwriting their change.
func TestScaleDeploymentChecksTheSizeDecidedOn(t *testing.T) {
	tests := map[string]struct {
		replicas int32
		mark     string
		scale    policy.Scale
		wantErr  bool
		want     int32
		wantMark string
	}{
		"the size decided on: written":         {replicas: 1, scale: policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1)}, want: 2, wantMark: "1"},
		"scaled by someone since: refused":     {replicas: 5, scale: policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1)}, wantErr: true, want: 5},
		"written already, cache behind: no-op": {replicas: 2, mark: "1", scale: policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1)}, want: 2, wantMark: "1"},
		"scale-back written already: no-op":    {replicas: 1, scale: policy.Scale{Name: "web", From: 2, Replicas: 1}, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tc.replicas)}}
			if tc.mark != "" {
				d.Annotations = map[string]string{holdfastv1alpha1.SurgeOriginalReplicasAnnotation: tc.mark}
			}
			c := fake.NewClientBuilder().WithObjects(d).Build()
			r := &reconciler{client: c, live: c}
			if err := r.scaleDeployment(context.Background(), "ns", tc.scale); (err != nil) != tc.wantErr {
				t.Fatalf("scaleDeployment: %v, want error %t", err, tc.wantErr)
			}
			got := &appsv1.Deployment{}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, got); err != nil {
				t.Fatal(err)
			}
			if ptr.Deref(got.Spec.Replicas, 0) != tc.want || got.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation] != tc.wantMark {
				t.Errorf("Deployment at %d replicas, mark %q; want %d, %q", ptr.Deref(got.Spec.Replicas, 0), got.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation], tc.want, tc.wantMark)
			}
		})
	}
}
