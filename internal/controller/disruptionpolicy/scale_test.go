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
		Autoscaler: &policy.AutoscalerBounds{Name: "web", FromMin: 1, FromMax: 1, Min: 2, Max: 2, Original: "1/1"}}
	back := &policy.Scale{Name: "web", From: 2, Replicas: 1, Autoscaler: &policy.AutoscalerBounds{Name: "web", FromMin: 2, FromMax: 2, Min: 1, Max: 1}}
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
		size     string
		scale    policy.Scale
		wantErr  bool
		want     int32
		wantMark string
	}{
		"the size decided on: written":         {replicas: 1, scale: policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1)}, want: 2, wantMark: "1"},
		"scaled by someone since: refused":     {replicas: 5, scale: policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1)}, wantErr: true, want: 5},
		"written already, cache behind: no-op": {replicas: 2, mark: "1", size: "2", scale: policy.Scale{Name: "web", From: 1, Replicas: 2, Original: ptr.To[int32](1)}, want: 2, wantMark: "1"},
		"scale-back written already: no-op":    {replicas: 1, scale: policy.Scale{Name: "web", From: 2, Replicas: 1}, want: 1},
		"a surge resized for a lost node":      {replicas: 4, mark: "3", size: "4", scale: policy.Scale{Name: "web", From: 4, Replicas: 5, Original: ptr.To[int32](3)}, want: 5, wantMark: "3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tc.replicas)}}
			if tc.mark != "" {
				d.Annotations = map[string]string{holdfastv1alpha1.SurgeOriginalReplicasAnnotation: tc.mark, holdfastv1alpha1.SurgeReplicasAnnotation: tc.size}
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

// Issue 17: an autoscaler's bounds are written, like a Deployment's size, only if they
// are still those decided on, and a change between the read and the write fails it.
func TestSetBoundsChecksTheBoundsDecidedOn(t *testing.T) {
	raise := policy.AutoscalerBounds{Name: "web", FromMin: 1, FromMax: 1, Min: 2, Max: 2, Original: "1/1"}
	restore := policy.AutoscalerBounds{Name: "web", FromMin: 2, FromMax: 2, Min: 1, Max: 1}
	type bounds struct {
		Min, Max int32
		Mark     string
	}
	tests := map[string]struct {
		from   bounds
		set    policy.AutoscalerBounds
		racing bool // a user sets 1-3 between the operator's read and its write
		want   bounds
		err    bool
	}{
		"the bounds decided on: raised":           {from: bounds{1, 1, ""}, set: raise, want: bounds{2, 2, "1/1"}},
		"the bounds decided on: restored":         {from: bounds{2, 2, "1/1"}, set: restore, want: bounds{1, 1, ""}},
		"changed by a user since: refused":        {from: bounds{1, 4, ""}, set: raise, want: bounds{1, 4, ""}, err: true},
		"raised already, cache behind: no-op":     {from: bounds{2, 2, "1/1"}, set: raise, want: bounds{2, 2, "1/1"}},
		"restored already, cache behind: no-op":   {from: bounds{1, 1, ""}, set: restore, want: bounds{1, 1, ""}},
		"changed between read and write: refused": {from: bounds{1, 1, ""}, set: raise, racing: true, want: bounds{1, 3, ""}, err: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To(tc.from.Min), MaxReplicas: tc.from.Max}}
			if tc.from.Mark != "" {
				h.Annotations = map[string]string{holdfastv1alpha1.SurgeOriginalBoundsAnnotation: tc.from.Mark}
			}
			c := fake.NewClientBuilder().WithObjects(h).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if tc.racing {
						user := &autoscalingv2.HorizontalPodAutoscaler{}
						if err := c.Get(ctx, client.ObjectKeyFromObject(obj), user); err != nil {
							return err
						}
						user.Spec.MaxReplicas = 3
						if err := c.Update(ctx, user); err != nil {
							return err
						}
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			r := &reconciler{client: c, live: c}
			err := r.setBounds(context.Background(), "ns", &tc.set)
			if (err != nil) != tc.err {
				t.Fatalf("setBounds: %v, want error %t", err, tc.err)
			}
			got := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, bounds{ptr.Deref(got.Spec.MinReplicas, 0), got.Spec.MaxReplicas, got.Annotations[holdfastv1alpha1.SurgeOriginalBoundsAnnotation]}); diff != "" {
				t.Errorf("bounds (-want +got):\n%s", diff)
			}
		})
	}
}
