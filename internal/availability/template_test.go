package availability

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// The autoscalers' annotations mean what Karpenter v1 and cluster-autoscaler read in
// them, not one blanket "do not disrupt".
func TestTemplateFactsAutoscalerAnnotations(t *testing.T) {
	type facts struct {
		DoNotDisrupt    bool
		DoNotDisruptFor time.Duration
		NotSafeToEvict  bool
		DoNotEvict      bool
	}
	tests := map[string]struct {
		annotations map[string]string
		want        facts
	}{
		"none":                                         {},
		"do-not-disrupt true":                          {annotations: map[string]string{AnnotationKarpenterDoNotDisrupt: "true"}, want: facts{DoNotDisrupt: true}},
		"do-not-disrupt for a while":                   {annotations: map[string]string{AnnotationKarpenterDoNotDisrupt: "30m"}, want: facts{DoNotDisruptFor: 30 * time.Minute}},
		"do-not-disrupt Karpenter ignores":             {annotations: map[string]string{AnnotationKarpenterDoNotDisrupt: "yes"}},
		"do-not-disrupt false":                         {annotations: map[string]string{AnnotationKarpenterDoNotDisrupt: "false"}},
		"do-not-evict, gone in Karpenter v1":           {annotations: map[string]string{AnnotationKarpenterDoNotEvict: "true"}, want: facts{DoNotEvict: true}},
		"safe-to-evict false: cluster-autoscaler only": {annotations: map[string]string{AnnotationSafeToEvict: "false"}, want: facts{NotSafeToEvict: true}},
		"safe-to-evict true protects nothing":          {annotations: map[string]string{AnnotationSafeToEvict: "true"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			d.Spec.Template.Annotations = tc.annotations
			f := templateFacts(snapshot.KindDeployment, d, &d.Spec.Template)
			got := facts{DoNotDisrupt: f.DoNotDisrupt, DoNotDisruptFor: f.DoNotDisruptFor, NotSafeToEvict: f.NotSafeToEvict, DoNotEvict: f.DoNotEvict}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("templateFacts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKarpenterDoNotDisrupt(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	started := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	tests := map[string]struct {
		value   string
		started *metav1.Time
		want    bool
	}{
		"true":                           {value: "true", started: started(time.Hour), want: true},
		"a duration not yet over":        {value: "30m", started: started(10 * time.Minute), want: true},
		"a duration over":                {value: "30m", started: started(time.Hour)},
		"a duration, pod not started":    {value: "30m", want: true},
		"a value Karpenter ignores":      {value: "yes", started: started(time.Minute)},
		"a negative duration is ignored": {value: "-5m", started: started(time.Minute)},
		"absent":                         {started: started(time.Minute)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := KarpenterDoNotDisrupt(tc.value, tc.started, now); got != tc.want {
				t.Errorf("KarpenterDoNotDisrupt(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}
