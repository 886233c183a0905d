package availability

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Opening is how holdfast's operator lets a drain through a budget it keeps, as the
// operator records it on the budget. Plans read it there, not from the policy, so that
// they follow what the operator decided rather than a second reading of the policy's
// spec; and a person reading the budget sees it too.
type Opening struct {
	// Strategy is a single replica's strategy (SingleReplicaAnnotation): Surge starts an
	// extra pod before the eviction, Protect makes the drain wait, for EscapeAfter when
	// set. "" on every other budget.
	Strategy    holdfastv1alpha1.SingleReplicaStrategy
	EscapeAfter *time.Duration
	// ZoneKey and ZoneLimits are a zone-aware workload's rule, on its budget while no
	// zone is disrupted: the node label whose values are zones, and how many pods each
	// zone may lose at once. A drain takes from one zone at a time.
	ZoneKey    string
	ZoneLimits map[string]int32
}

// OpeningOf reads what the operator recorded on pdb; the zero Opening for a user's own.
func OpeningOf(pdb *policyv1.PodDisruptionBudget) Opening {
	a := pdb.Annotations
	o := Opening{Strategy: holdfastv1alpha1.SingleReplicaStrategy(a[holdfastv1alpha1.SingleReplicaAnnotation])}
	if d, err := time.ParseDuration(a[holdfastv1alpha1.EscapeAfterAnnotation]); err == nil && o.Strategy == holdfastv1alpha1.SingleReplicaProtect {
		o.EscapeAfter = &d
	}
	if key := a[holdfastv1alpha1.ZoneTopologyKeyAnnotation]; key != "" {
		o.ZoneKey, o.ZoneLimits = key, ZoneCounts(a[holdfastv1alpha1.ZoneLimitsAnnotation])
	}
	return o
}

// Record writes o onto pdb's annotations, as OpeningOf reads them.
func (o Opening) Record(pdb *policyv1.PodDisruptionBudget) {
	set := func(key, value string) {
		if value == "" {
			return
		}
		if pdb.Annotations == nil {
			pdb.Annotations = map[string]string{}
		}
		pdb.Annotations[key] = value
	}
	set(holdfastv1alpha1.SingleReplicaAnnotation, string(o.Strategy))
	if o.EscapeAfter != nil {
		set(holdfastv1alpha1.EscapeAfterAnnotation, o.EscapeAfter.String())
	}
	if o.ZoneKey != "" {
		set(holdfastv1alpha1.ZoneTopologyKeyAnnotation, o.ZoneKey)
		set(holdfastv1alpha1.ZoneLimitsAnnotation, FormatZoneCounts(o.ZoneLimits))
	}
}

// Surges reports whether the operator starts an extra pod before a drain's eviction, so
// that the drain does not wait on the budget.
func (o Opening) Surges() bool { return o.Strategy == holdfastv1alpha1.SingleReplicaSurge }

// Protects reports whether the operator holds a drain on the budget's single replica.
func (o Opening) Protects() bool { return o.Strategy == holdfastv1alpha1.SingleReplicaProtect }

// ZoneCounts reads "zone=n,..." (ZoneSizesAnnotation, ZoneLimitsAnnotation): a count
// per zone; malformed entries are left out.
func ZoneCounts(s string) map[string]int32 {
	out := map[string]int32{}
	for kv := range strings.SplitSeq(s, ",") {
		z, n, _ := strings.Cut(kv, "=")
		if v, err := strconv.ParseInt(n, 10, 32); err == nil && z != "" {
			out[z] = int32(v)
		}
	}
	return out
}

// FormatZoneCounts writes counts as ZoneCounts reads them, zones sorted.
func FormatZoneCounts(counts map[string]int32) string {
	parts := make([]string, 0, len(counts))
	for _, z := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", z, counts[z]))
	}
	return strings.Join(parts, ",")
}
