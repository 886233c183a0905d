package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels and annotations of zone-aware budgets.
const (
	// ZoneLabel is set by holdfast on every pod of a zone-aware workload, with the value
	// of its node's topology label: a budget selects pods by their labels only, and a
	// pod carries no label of the zone it runs in.
	ZoneLabel = "holdfast.dev/zone"
	// ZoneActiveAnnotation is set on the budget of the zone that may be disrupted, with
	// the number of the workload's pods that zone held when it was chosen: that number
	// is the zone's size until the zone is whole again, so that pods evicted and not yet
	// back do not shrink the budget's floor.
	ZoneActiveAnnotation = "holdfast.dev/zone-active"
	// ZoneSizesAnnotation is set on a zone-aware workload's budget while no zone is
	// disrupted, and on its budget of unlabelled pods while one is, as "zone=pods,...":
	// how many pods each zone held when none was missing. A pod evicted under the
	// workload's budget is gone before holdfast sees it; the zone that is short of its
	// size is the one that lost it, and is chosen.
	ZoneSizesAnnotation = "holdfast.dev/zone-sizes"
	// ZoneLimitsAnnotation is set beside ZoneSizesAnnotation, as "zone=pods,...": how
	// many pods of each zone may be disrupted at once (maxUnavailable at the zone's size).
	ZoneLimitsAnnotation = "holdfast.dev/zone-limits"
	// ZoneTopologyKeyAnnotation is set beside ZoneSizesAnnotation, with the node label
	// whose values are the workload's zones.
	ZoneTopologyKeyAnnotation = "holdfast.dev/zone-topology-key"
	// DefaultZoneTopologyKey is the node label whose values are zones.
	DefaultZoneTopologyKey = "topology.kubernetes.io/zone"
)

// ZoneAwareSpec lets the pods of one zone be disrupted together while every other zone
// is held: a quorum system spread over zones survives the loss of any number of pods
// in one zone, not of one pod in each of two. The budgets stay PodDisruptionBudgets, so
// that every disruptor (kubectl drain, Karpenter, cluster-autoscaler) obeys them.
type ZoneAwareSpec struct {
	// TopologyKey is the node label whose values are the zones.
	// +kubebuilder:default="topology.kubernetes.io/zone"
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +optional
	TopologyKey string `json:"topologyKey,omitempty"`

	// MaxUnavailable is how many of a zone's pods may be disrupted at once while that
	// zone is the one being disrupted: an integer of at least 1 or a percentage of the
	// zone's pods (rounded up).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 2147483647 : self.matches('^[1-9][0-9]?%$|^100%$')",message="zoneAware.maxUnavailable must be an integer from 1 to 2147483647 or a percentage from 1% to 100%: 0 would block every drain"
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable"`

	// SettleTime is how long every pod of the disrupted zone must have been Ready, with
	// none of its nodes being drained, before the zone counts as whole and another zone
	// may be disrupted. Defaults to 30s.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$') && duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="zoneAware.settleTime must be a duration from 0s to 1h, such as 30s or 5m"
	// +optional
	SettleTime *metav1.Duration `json:"settleTime,omitempty"`
}
