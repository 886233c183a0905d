package policy_test

import (
	"testing"
	"time"

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
