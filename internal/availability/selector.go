package availability

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selector is metav1.LabelSelectorAsSelector, which checks each key and value with
// regular expressions: a tenth of the CPU of an audit of 10,000 Deployments and their
// budgets. The usual selector, matchLabels alone of plain names (letters and digits, with
// '-', '_' or '.' inside, at most 63 bytes), is valid, and is built without them into the
// same selector.
func Selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls != nil && len(ls.MatchExpressions) == 0 && len(ls.MatchLabels) > 0 && plainNames(ls.MatchLabels) {
		return labels.SelectorFromValidatedSet(ls.MatchLabels), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}

func plainNames(m map[string]string) bool {
	for k, v := range m {
		if !plainName(k) || !plainName(v) {
			return false
		}
	}
	return true
}

// plainName reports whether s is a label name without a prefix, or a label value, that
// is not empty: the validation's rule, written out.
func plainName(s string) bool {
	if len(s) == 0 || len(s) > 63 || !alphanumeric(s[0]) || !alphanumeric(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alphanumeric(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func alphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
