package availability

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelector holds Selector to metav1.LabelSelectorAsSelector: the same selector, or
// the same error, on plain selectors and on every kind it leaves to it.
func TestSelector(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, ls := range []*metav1.LabelSelector{
		nil, {}, {MatchLabels: map[string]string{}},
		{MatchLabels: map[string]string{"app": "web"}},
		{MatchLabels: map[string]string{"app": "web", "tier": "front-end_1.2", "a": "b", long: long}},
		{MatchLabels: map[string]string{"app": ""}},
		{MatchLabels: map[string]string{"app": long + "a"}},
		{MatchLabels: map[string]string{long + "a": "x"}},
		{MatchLabels: map[string]string{"app.kubernetes.io/name": "web"}},
		{MatchLabels: map[string]string{"app": "-web"}},
		{MatchLabels: map[string]string{"app": "web-"}},
		{MatchLabels: map[string]string{"app": "w eb"}},
		{MatchLabels: map[string]string{"-app": "web"}},
		{MatchLabels: map[string]string{"": "web"}},
		{MatchLabels: map[string]string{"app": "wéb"}},
		{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Sideways"}}},
	} {
		want, wantErr := metav1.LabelSelectorAsSelector(ls)
		got, err := Selector(ls)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("Selector(%v): error %v, want %v", ls, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("Selector(%v) = %q, want %q", ls, got, want)
		}
	}
}
