package audit

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Annotations that suppress findings on the object that carries them.
const (
	// AnnotationIgnore lists the rules (IDs or names, comma-separated) whose findings on
	// this object are accepted: holdfast.dev/audit-ignore: "HF006,HF012".
	AnnotationIgnore = "holdfast.dev/audit-ignore"
	// AnnotationIgnoreReason says why, for whoever reads the audit next.
	AnnotationIgnoreReason = "holdfast.dev/audit-ignore-reason"
)

// Suppression says why a finding is not reported.
type Suppression struct {
	// By is "annotation" (AnnotationIgnore on the object) or "flag" (--ignore).
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// Ways a finding is suppressed.
const (
	SuppressedByAnnotation = "annotation"
	SuppressedByFlag       = "flag"
)

// Suppress splits findings into those reported and those suppressed: every finding of a
// rule in ignore, and on each object of s the findings of the rules its AnnotationIgnore
// names. Suppressed findings carry their Suppression. A rule ignore names must exist
// (Lookup); the warnings name annotations that list unknown rules, which suppress nothing.
func Suppress(findings []Finding, s *snapshot.Snapshot, ignore []string) (kept, suppressed []Finding, warnings []string) {
	flagged := map[string]bool{}
	for _, id := range ignore {
		if r, ok := Lookup(id); ok {
			flagged[r.ID] = true
		}
	}
	annotated := map[snapshot.ObjectRef]annotatedIgnore{}
	forEachObject(s, func(ref snapshot.ObjectRef, meta *metav1.ObjectMeta) {
		list, ok := meta.Annotations[AnnotationIgnore]
		if !ok {
			return
		}
		a := annotatedIgnore{rules: map[string]bool{}, reason: meta.Annotations[AnnotationIgnoreReason]}
		for _, id := range strings.Split(list, ",") {
			id = strings.TrimSpace(id)
			if id == "" {
				continue
			}
			if r, ok := Lookup(id); ok {
				a.rules[r.ID] = true
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: annotation %s names unknown rule %q; rules are HF001 to HF%03d", ref, AnnotationIgnore, id, len(rules)))
			}
		}
		annotated[ref] = a
	})
	kept = make([]Finding, 0, len(findings))
	for _, f := range findings {
		switch a := annotated[snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}]; {
		case flagged[f.Rule]:
			f.Suppression = &Suppression{By: SuppressedByFlag, Reason: "--ignore " + f.Rule}
		case a.rules[f.Rule]:
			f.Suppression = &Suppression{By: SuppressedByAnnotation, Reason: a.reason}
		default:
			kept = append(kept, f)
			continue
		}
		suppressed = append(suppressed, f)
	}
	return kept, suppressed, warnings
}

type annotatedIgnore struct {
	rules  map[string]bool
	reason string
}

// forEachObject calls fn with the metadata of every object of s a finding can name.
func forEachObject(s *snapshot.Snapshot, fn func(snapshot.ObjectRef, *metav1.ObjectMeta)) {
	each := func(kind string, n int, meta func(int) *metav1.ObjectMeta) {
		for i := range n {
			m := meta(i)
			fn(snapshot.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name}, m)
		}
	}
	each(snapshot.KindDeployment, len(s.Deployments), func(i int) *metav1.ObjectMeta { return &s.Deployments[i].ObjectMeta })
	each(snapshot.KindStatefulSet, len(s.StatefulSets), func(i int) *metav1.ObjectMeta { return &s.StatefulSets[i].ObjectMeta })
	each(snapshot.KindDaemonSet, len(s.DaemonSets), func(i int) *metav1.ObjectMeta { return &s.DaemonSets[i].ObjectMeta })
	each(snapshot.KindReplicaSet, len(s.ReplicaSets), func(i int) *metav1.ObjectMeta { return &s.ReplicaSets[i].ObjectMeta })
	each(snapshot.KindPod, len(s.Pods), func(i int) *metav1.ObjectMeta { return &s.Pods[i].ObjectMeta })
	each(snapshot.KindPodDisruptionBudget, len(s.PodDisruptionBudgets), func(i int) *metav1.ObjectMeta { return &s.PodDisruptionBudgets[i].ObjectMeta })
	each(snapshot.KindNodeCompanion, len(s.NodeCompanions), func(i int) *metav1.ObjectMeta { return &s.NodeCompanions[i].ObjectMeta })
	each(snapshot.KindDisruptionPolicy, len(s.DisruptionPolicies), func(i int) *metav1.ObjectMeta { return &s.DisruptionPolicies[i].ObjectMeta })
}
