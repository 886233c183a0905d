package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels and annotations that the DisruptionPolicy controller writes.
const (
	// PolicyLabel is set on every PodDisruptionBudget a DisruptionPolicy manages, with the
	// policy's name as value. Budgets without it are the users' own and are never touched.
	PolicyLabel = "holdfast.dev/disruption-policy"
	// SurgeOfLabel marks a surge set and its pods, with the UID of the Deployment they
	// stand beside. A surge set is a ReplicaSet the DisruptionPolicy owns that runs extra
	// pods of a Deployment's current template while a drain, a hand-off or a lost node
	// takes one of the Deployment's own: its pods carry the template's labels, so that
	// Services and budgets count them, and this one, which no ReplicaSet of the
	// Deployment selects. holdfast never writes the Deployment or its autoscaler.
	SurgeOfLabel = "holdfast.dev/surge-of"
	// SurgeForAnnotation names, on a surge set, the Deployment it stands beside.
	SurgeForAnnotation = "holdfast.dev/surge-for"
	// BlockedSinceAnnotation is set on a Protect budget while the node of its pod is being
	// drained, with the RFC 3339 time (with nanoseconds) the drain was first seen; escapeAfter counts from it.
	BlockedSinceAnnotation = "holdfast.dev/blocked-since"
	// SingleReplicaAnnotation is set on the budget of a single replica whose policy's
	// single-replica strategy makes room for a drain (Surge for a Deployment, Protect),
	// with the strategy: the budget allows nothing by itself, and says how a drain of its
	// node still gets through. holdfast's plans read it there, as the operator decided it.
	SingleReplicaAnnotation = "holdfast.dev/single-replica"
	// EscapeAfterAnnotation is set beside SingleReplicaAnnotation on a Protect budget
	// whose policy sets escapeAfter, with its duration: how long a drain waits.
	EscapeAfterAnnotation = "holdfast.dev/escape-after"
	// PacingAnnotation is set on a managed budget while holdfast paces its workload: a
	// replacement is not Ready yet, or has been Ready for less than minReadySeconds. It
	// tells the next reconcile to look at the workload's pods even once its Ready count
	// is whole again, which is when the gate must still hold.
	PacingAnnotation = "holdfast.dev/pacing"
	// DoNotDisruptAnnotation is Karpenter's pod annotation that keeps it from disrupting
	// the node of the pod. Protect puts it on the pods themselves, not on the template,
	// since changing the template would roll the pods.
	DoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"
	// DoNotDisruptByAnnotation marks a pod's do-not-disrupt as Protect's, with the name
	// of the policy that put it there: holdfast removes only the annotation it wrote,
	// once the pod's workload is no longer Protected by that policy.
	DoNotDisruptByAnnotation = "holdfast.dev/do-not-disrupt-by"
	// SafeToEvictByAnnotation marks a pod's cluster-autoscaler.kubernetes.io/safe-to-evict
	// as holdfast's, with the name of the policy that put it there: a Surge single
	// replica's pod carries it while holdfast hands its node over to cluster-autoscaler,
	// so that cluster-autoscaler's scale-down simulation does not set the node aside for
	// its recheck timeout before the surge's new pod is Ready (the eviction still waits
	// for the budget). holdfast removes only the annotation it wrote, once the hand-off
	// is over.
	SafeToEvictByAnnotation = "holdfast.dev/safe-to-evict-by"
	// HandOffAnnotation is set on the surge set of a single-replica Deployment under
	// Surge when holdfast surges it ahead of a node autoscaler's scale-down of its node (Karpenter's
	// consolidation, cluster-autoscaler's scale-down), as "NODE START COUNT" (START in RFC
	// 3339, COUNT the hand-offs of that node so far), followed by "landed" once the
	// hand-off ended early because the surge's new pod was scheduled onto the node itself:
	// the surge ends at a deadline counted from the new pod's readiness, capped from
	// START, unless the autoscaler takes the node first. It stays after the surge, on the
	// surge set kept at 0 replicas while the Deployment's pod is on that node, so that
	// holdfast backs off from that node (15 minutes after the first hand-off, doubling)
	// and gives up after three, across restarts of the operator.
	HandOffAnnotation = "holdfast.dev/consolidation-hand-off"
	// HandOffTaintKey is the PreferNoSchedule taint holdfast puts on a node while it
	// hands it over to a node autoscaler, before the surge, so that the scheduler places
	// the surge's new pod on another node. The operator removes it once no surge hands
	// the node over, also when it stopped between the two writes.
	HandOffTaintKey = "holdfast.dev/handing-off"
)

// Workload kinds a DisruptionPolicy selects.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
)

// SingleReplicaStrategy says what holdfast does for a workload of one replica, where any
// budget either blocks every drain or protects nothing.
// +kubebuilder:validation:Enum=Skip;Surge;Protect
type SingleReplicaStrategy string

const (
	// SingleReplicaSkip creates no budget and reports the workload in status.
	SingleReplicaSkip SingleReplicaStrategy = "Skip"
	// SingleReplicaSurge keeps a budget of minAvailable 1 and, when the node of the only
	// replica is being drained, starts one extra pod from the Deployment's template in a
	// ReplicaSet holdfast owns (its surge set), so that the budget lets the eviction
	// through once that pod is Ready elsewhere; the extra pod goes once the Deployment's
	// own replacement is Ready. The Deployment and its autoscaler are never written.
	// StatefulSets cannot run a second copy of the same identity: they get no budget, as
	// with Skip, and status says so.
	SingleReplicaSurge SingleReplicaStrategy = "Surge"
	// SingleReplicaProtect keeps a budget of minAvailable 1 and annotates the pod
	// karpenter.sh/do-not-disrupt; after a drain has waited escapeAfter, the budget is
	// relaxed and the annotation removed, and an Event says so.
	SingleReplicaProtect SingleReplicaStrategy = "Protect"
)

// SurgePolicy says whether holdfast surges a Deployment of several replicas whose
// budget blocks a drain.
// +kubebuilder:validation:Enum=Never;WhenBlocked
type SurgePolicy string

const (
	// SurgeNever leaves a blocked drain to wait until the workload recovers.
	SurgeNever SurgePolicy = "Never"
	// SurgeWhenBlocked starts one extra pod beside a Deployment (in its surge set) when
	// its budget allows no disruption while one of its pods is on a node being drained,
	// holds the budget at the floor of the Deployment's size so that the extra pod pays
	// for the eviction, and removes it once the drain has passed (create before evict).
	SurgeWhenBlocked SurgePolicy = "WhenBlocked"
)

// Condition types and reasons of a DisruptionPolicy.
const (
	// ConditionBudgetsReady is True when every selected workload has the budget the
	// policy asks for (or, for single replicas, what its strategy asks for).
	ConditionBudgetsReady = "BudgetsReady"
	// ConditionConflicted is True when a selected workload is covered by a budget holdfast
	// does not manage, or is selected by an older policy.
	ConditionConflicted = "Conflicted"
	// ConditionWindowOpen is True while a maintenance window is open, or when the policy
	// has none (disruptions are always allowed within budget).
	ConditionWindowOpen = "WindowOpen"
	// ConditionNodesLost is True while selected pods are on a lost node.
	ConditionNodesLost = "NodesLost"
	// ConditionWritesContested is True while another writer undoes what holdfast writes
	// (a budget's spec, a node's taint, a pod's annotation or label): holdfast then
	// writes it at most three times a minute, and the message names the object, the
	// field and the other writer's field manager.
	ConditionWritesContested = "WritesContested"
	// ConditionFencingAllowed, set only under nodeFailure.fencing: Verified, is True
	// when the operator lets the policy fence: a namespaced policy needs a cluster
	// administrator's consent (a ClusterDisruptionPolicy whose template fences, or the
	// operator's --allow-namespaced-fencing), and fenceAfter counts only under the
	// operator's --allow-fence-after.
	ConditionFencingAllowed = "FencingAllowed"

	ReasonAllBudgetsManaged  = "AllBudgetsManaged"
	ReasonSomeWithoutBudget  = "SomeWithoutBudget"
	ReasonNoWorkloads        = "NoWorkloads"
	ReasonNoConflicts        = "NoConflicts"
	ReasonConflictingBudgets = "ConflictingBudgets"
	ReasonOverriddenByPolicy = "OverriddenByPolicy"
	ReasonInvalidSelector    = "InvalidSelector"
	ReasonNoWindows          = "NoWindows"
	ReasonInWindow           = "InWindow"
	ReasonOutsideWindows     = "OutsideWindows"
	ReasonInvalidWindow      = "InvalidWindow"
	// ReasonScaleTargetUnreadable: a kind of spec.scaleTargets could not be listed or its
	// scale read (not served, or the operator lacks the permission); its budgets are kept.
	ReasonScaleTargetUnreadable = "ScaleTargetUnreadable"
	// The reasons of a DisruptionPolicy's Degraded condition (ConditionDegraded, shared
	// with NodeCompanion), True when a selected workload has fewer Ready pods than it
	// wants, not because of a drain or a rollout.
	ReasonAllHealthy        = "AllHealthy"
	ReasonWorkloadsDegraded = "WorkloadsDegraded"
	// The reasons of ConditionNodesLost: no lost node runs a selected pod; some do and
	// holdfast responds (within what fits on the survivors); so many nodes in more than
	// one zone are lost at once (more than a fifth) that holdfast neither surges nor
	// fences, since the control plane or a partition is the likelier cause.
	ReasonNoNodeLost        = "NoNodeLost"
	ReasonNodeLost          = "NodeLost"
	ReasonCorrelatedFailure = "CorrelatedFailure"
	// The reasons of ConditionFencingAllowed: allowed as asked; allowed, but fenceAfter
	// ignored; not allowed.
	ReasonFencingConsented  = "Consented"
	ReasonFenceAfterIgnored = "FenceAfterIgnored"
	ReasonNoFencingConsent  = "NoConsent"
	// The reasons of ConditionWritesContested.
	ReasonNoContest           = "NoContest"
	ReasonUndoneByOtherWriter = "UndoneByOtherWriter"
)

// WorkloadState is what a DisruptionPolicy did for one selected workload.
type WorkloadState string

// Workload states, as reported in status.workloads[].state.
const (
	// WorkloadBudgeted: holdfast manages the workload's budget.
	WorkloadBudgeted WorkloadState = "Budgeted"
	// WorkloadProtected: a single replica under Protect, budget minAvailable 1.
	WorkloadProtected WorkloadState = "Protected"
	// WorkloadEscaped: a Protect drain waited escapeAfter; the budget lets it through.
	WorkloadEscaped WorkloadState = "Escaped"
	// WorkloadSurging: an extra pod stands beside the workload for a drain or a hand-off.
	WorkloadSurging WorkloadState = "Surging"
	// WorkloadPacing: a pod became Ready less than minReadySeconds ago; the budget
	// counts it as unavailable until then.
	WorkloadPacing WorkloadState = "Pacing"
	// WorkloadDegraded: fewer pods Ready than wanted, for reasons other than a drain or
	// a rollout; the budget is the policy's, so a drain waits for the workload to heal.
	WorkloadDegraded WorkloadState = "Degraded"
	// WorkloadSkipped: no budget (single replica under Skip, a StatefulSet or custom
	// workload under Surge, zero replicas, or a custom workload whose scale has no
	// selector).
	WorkloadSkipped WorkloadState = "Skipped"
	// WorkloadConflict: a budget holdfast does not manage covers the workload's pods.
	WorkloadConflict WorkloadState = "Conflict"
	// WorkloadNoDisruption: the policy's budget would allow no disruption at the current
	// size, so no budget is created.
	WorkloadNoDisruption WorkloadState = "NoDisruptionAllowed"
	// WorkloadOverridden: an older policy selects the workload too and wins.
	WorkloadOverridden WorkloadState = "Overridden"
	// WorkloadRecovering: pods of the workload are on a lost node; a Deployment is
	// surged by one replica for each (spec.nodeFailure).
	WorkloadRecovering WorkloadState = "Recovering"
)

// DisruptionPolicySpec selects workloads and states their disruption budget.
// +kubebuilder:validation:XValidation:rule="has(self.maxUnavailable) != has(self.minAvailable)",message="set exactly one of spec.maxUnavailable and spec.minAvailable"
// +kubebuilder:validation:XValidation:rule="!has(self.escapeAfter) || self.singleReplica == 'Protect'",message="spec.escapeAfter applies only to singleReplica: Protect"
type DisruptionPolicySpec struct {
	// Selector picks workloads of the policy's namespace by their own labels (not their
	// pods'). An empty selector selects every workload of the kinds listed.
	Selector metav1.LabelSelector `json:"selector"`

	// Kinds are the workload kinds selected. Defaults to all three.
	// +kubebuilder:default={Deployment,StatefulSet,DaemonSet}
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	// +optional
	Kinds []WorkloadKind `json:"kinds,omitempty"`

	// ScaleTargets are custom workload kinds, served with a scale subresource, that the
	// policy also selects by the same selector, beside kinds. They are named by apiVersion
	// and kind, as an HPA's scaleTargetRef and an ownerReference name them: the budget's
	// owner reference needs both, and the API server maps them to the resource. Each
	// object's budget takes its pod selector from the scale's status.selector and its
	// size from the scale's spec.replicas; holdfast never scales them (singleReplica:
	// Surge skips them as it does StatefulSets, surge: WhenBlocked leaves them alone).
	// The operator needs RBAC to list these kinds and get their scale: see docs/disruptionpolicy.md.
	// +kubebuilder:validation:MaxItems=10
	// +listType=map
	// +listMapKey=apiVersion
	// +listMapKey=kind
	// +optional
	ScaleTargets []ScaleTarget `json:"scaleTargets,omitempty"`

	// MaxUnavailable is how many of each workload's pods may be disrupted at once: an
	// integer of at least 1 or a percentage (rounded up). Budgets of Deployments,
	// StatefulSets and scale targets carry it as is, so they stay right as replicas
	// change even while the operator is down; for DaemonSets it becomes the integer minAvailable the
	// disruption controller accepts, recomputed as the DaemonSet's node count changes.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 2147483647 : self.matches('^[1-9][0-9]?%$|^100%$')",message="maxUnavailable must be an integer from 1 to 2147483647 or a percentage from 1% to 100%: 0 would block every drain"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MinAvailable is how many of each workload's pods must stay available: an integer
	// or a percentage (rounded up). A value that leaves no disruption at a workload's
	// size is reported and no budget is created for it.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^[0-9]?[0-9]%$|^100%$')",message="minAvailable must be an integer from 0 to 2147483647 or a percentage from 0% to 100%"
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// MinReadySeconds paces disruptions: a pod that became Ready less than this long ago
	// counts as unavailable in the workload's budget, so that after one eviction the next
	// waits until the replacement has been Ready this long. Unset, each workload's own
	// spec.minReadySeconds applies; 0 turns pacing off. A pod that never becomes Ready is
	// never paced: it is unavailable to the budget as any pod that is not Ready, and the
	// workload is reported Degraded. The operator relaxes the budget when the pod is
	// proven: a budget being paced stays tight while the operator is down.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// Surge, WhenBlocked, starts one extra pod beside a Deployment of several replicas
	// when its budget allows no disruption while a drain waits on one of its pods, and
	// removes it after the drain (singleReplica: Surge does the same for one replica).
	// The extra pod runs in a ReplicaSet the policy owns; the Deployment is never
	// written. Defaults to Never.
	// +kubebuilder:default=Never
	// +optional
	Surge SurgePolicy `json:"surge,omitempty"`

	// SingleReplica is the strategy for workloads of one replica. Defaults to Skip.
	// +kubebuilder:default=Skip
	// +optional
	SingleReplica SingleReplicaStrategy `json:"singleReplica,omitempty"`

	// MaintenanceWindows, when set, confine voluntary disruptions to these windows:
	// outside every window the selected workloads' budgets allow no disruption at all
	// (and no surge starts); inside one, the budget above applies.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`

	// EscapeAfter is, under Protect, how long a drain of the single replica's node may
	// be blocked before holdfast lets it through. Unset, Protect blocks until the drain
	// gives up.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$') && duration(self) >= duration('0s')",message="escapeAfter must be a non-negative duration such as 10m or 1h30m"
	// +optional
	EscapeAfter *metav1.Duration `json:"escapeAfter,omitempty"`

	// Rebalance, when set, spreads the replicas of the Deployments and StatefulSets the
	// policy manages again when they crowd a node or zone, as the holdfast.dev/rebalance
	// annotation does. DaemonSets are never rebalanced: their pods belong to their nodes.
	// A workload's own rebalance annotations override these settings one by one, and
	// holdfast.dev/rebalance: "false" opts it out.
	// +optional
	Rebalance *RebalanceSpec `json:"rebalance,omitempty"`

	// NodeFailure is what holdfast does when a node running selected pods is lost.
	// Unset, Deployments are surged for the pods of a lost node (surge: Replace) after
	// 30 s without a Lease renewal, and StatefulSets are not fenced.
	// +optional
	NodeFailure *NodeFailureSpec `json:"nodeFailure,omitempty"`

	// ZoneAware, when set, gives each selected Deployment and StatefulSet of several
	// replicas budgets that let one zone at a time be disrupted, up to
	// zoneAware.maxUnavailable of its pods, while every other zone is held at zero (see
	// docs/zone-aware-budgets.md). While no zone is disrupted, the workload's budget
	// allows one pod at a time. DaemonSets and custom kinds keep the budget above.
	// +optional
	ZoneAware *ZoneAwareSpec `json:"zoneAware,omitempty"`

	// DecodeErrors is set when the policy is read, never stored: each field of the
	// stored spec whose value cannot be decoded (stored before the schema refused it),
	// with that value. Such fields are left empty; the operator changes nothing the
	// policy manages until they are fixed, and reports them (condition BudgetsReady,
	// reason InvalidSpec, and a Warning Event).
	DecodeErrors []string `json:"-"`
}

// RebalanceSpec are the rebalancing settings a DisruptionPolicy gives the workloads it
// manages (the policy that wins a workload for its budget is the one whose settings
// apply).
type RebalanceSpec struct {
	// TopologyKeys are the node labels whose domains the replicas spread over; the
	// annotation holdfast.dev/rebalance, as a list of keys, overrides them.
	// +kubebuilder:default={"kubernetes.io/hostname"}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +listType=set
	// +optional
	TopologyKeys []string `json:"topologyKeys,omitempty"`

	// MaxSkew is the most pods one domain may hold above the emptiest before a pod is
	// moved; the annotation holdfast.dev/rebalance-max-skew overrides it.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	MaxSkew int32 `json:"maxSkew,omitempty"`

	// Cooldown is the least time between two moves of one workload, long enough for a
	// replacement to start and for anyone watching to see what happened; the annotation
	// holdfast.dev/rebalance-cooldown overrides it. At least 10s (MinRebalanceCooldown).
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$') && duration(self) >= duration('10s')",message="cooldown must be a duration of at least 10s, such as 30s or 5m"
	// +optional
	Cooldown *metav1.Duration `json:"cooldown,omitempty"`
}

// MaintenanceWindow opens at every time its cron schedule names and stays open for
// duration.
type MaintenanceWindow struct {
	// Schedule is a standard five-field cron expression (minute 0-59, hour 0-23,
	// day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 0-6 or SUN-SAT; each field *,
	// a value, a range, a list, with an optional /step), or one of the descriptors
	// @hourly, @daily, @midnight, @weekly, @monthly, @yearly and @annually. @every is
	// refused: it counts from whenever the schedule is read, so it opens no fixed window.
	// A range whose start is beyond its end (5-1) passes the schema and is reported by
	// the operator as an invalid window.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^ *(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|([*?]|([0-5]?[0-9])(-([0-5]?[0-9]))?)(/0*[1-9][0-9]*)?(,([*?]|([0-5]?[0-9])(-([0-5]?[0-9]))?)(/0*[1-9][0-9]*)?)* +([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/0*[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/0*[1-9][0-9]*)?)* +([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/0*[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/0*[1-9][0-9]*)?)* +([*?]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/0*[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/0*[1-9][0-9]*)?)* +([*?]|(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/0*[1-9][0-9]*)?(,([*?]|(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/0*[1-9][0-9]*)?)*) *$')",message="schedule must be five cron fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT; each *, a value, a range or a list, with an optional /step) or one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually"
	Schedule string `json:"schedule"`
	// Duration is how long the window stays open: at least a minute and at most 744h
	// (31 days, so that a monthly window can span a whole month; a longer one would
	// merely be always open).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$') && duration(self) >= duration('1m') && duration(self) <= duration('744h')",message="duration must be a duration such as 4h or 90m, from 1m to 744h"
	Duration metav1.Duration `json:"duration"`
	// TimeZone is the IANA time zone the schedule is read in, such as Europe/Paris;
	// defaults to UTC. The schema checks its shape only: a name the operator's time zone
	// database does not know is reported on the policy (condition WindowOpen, reason
	// InvalidWindow, a Warning Event and a metric), and the policy then allows no
	// voluntary disruption until it is fixed.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$') && self != 'Local'",message="timeZone must be an IANA time zone name such as Europe/Paris or UTC"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// WindowStatus is the state of a policy's maintenance windows.
type WindowStatus struct {
	// Open is true while a window is open.
	Open bool `json:"open"`
	// ClosesAt is when the open window closes.
	// +optional
	ClosesAt *metav1.Time `json:"closesAt,omitempty"`
	// NextOpening is when the next window opens.
	// +optional
	NextOpening *metav1.Time `json:"nextOpening,omitempty"`
}

// ScaleTarget names a custom workload kind that has a scale subresource.
// +kubebuilder:validation:XValidation:rule="!self.apiVersion.startsWith('apps/') && !(self.kind in ['Deployment', 'StatefulSet', 'DaemonSet'])",message="Deployments, StatefulSets and DaemonSets are selected by spec.kinds, not spec.scaleTargets (their kinds name their budgets)"
type ScaleTarget struct {
	// APIVersion is the kind's group and version, such as databases.example.com/v1.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]+$')",message="apiVersion must be group/version, such as example.com/v1: core kinds have no scale subresource worth budgeting"
	APIVersion string `json:"apiVersion"`
	// Kind is the kind, in CamelCase as in the objects' kind field.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Z][A-Za-z0-9]*$')",message="kind must be CamelCase, such as Database, as in the objects' kind field"
	Kind string `json:"kind"`
}

// WorkloadKind is Deployment, StatefulSet or DaemonSet.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet
type WorkloadKind string

// WorkloadStatus is what the policy did for one selected workload.
type WorkloadStatus struct {
	// Kind of the workload.
	Kind string `json:"kind"`
	// Name of the workload.
	Name string `json:"name"`
	// Replicas is the workload's desired size (desiredNumberScheduled for a DaemonSet;
	// the size before the surge while surging).
	Replicas int32 `json:"replicas"`
	// State is Budgeted, Protected, Escaped, Surging, Pacing, Degraded, Skipped,
	// Conflict, NoDisruptionAllowed, Overridden or Recovering.
	State WorkloadState `json:"state"`
	// Budget is the managed budget's name, when there is one.
	// +optional
	Budget string `json:"budget,omitempty"`
	// Blocked is true while the budget over the workload's pods (holdfast's, or the one
	// in conflict with it) allows no disruption, as the disruption controller last
	// counted it: a drain of a node running one of its pods waits.
	// +optional
	Blocked bool `json:"blocked,omitempty"`
	// Message says why, and what to do when something is wrong.
	// +optional
	Message string `json:"message,omitempty"`
	// Zone is the zone being disrupted, for a workload with zone-aware budgets
	// (spec.zoneAware): empty while no zone is.
	// +optional
	Zone string `json:"zone,omitempty"`
}

// DisruptionPolicyStatus is what the controller last saw.
type DisruptionPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Selected is the number of workloads the policy selects.
	// +optional
	Selected int32 `json:"selected"`
	// Budgeted is the number of selected workloads whose budget holdfast manages.
	// +optional
	Budgeted int32 `json:"budgeted"`
	// Conflicting is the number of selected workloads covered by another budget or
	// selected by an older policy.
	// +optional
	Conflicting int32 `json:"conflicting"`
	// Unprotected is the number of selected workloads left without a budget: skipped
	// single replicas, escaped drains, and budgets that would allow no disruption.
	// +optional
	Unprotected int32 `json:"unprotected"`
	// Degraded is the number of selected workloads with fewer Ready pods than wanted for
	// reasons other than a drain or a rollout.
	// +optional
	Degraded int32 `json:"degraded"`
	// Blocked is the number of selected workloads whose budget allows no disruption now
	// (status.workloads[].blocked).
	// +optional
	Blocked int32 `json:"blocked"`
	// Recovering is the number of selected workloads with pods on a lost node.
	// +optional
	Recovering int32 `json:"recovering"`
	// LostNodes are the lost nodes running selected pods (at most 50), sorted.
	// +optional
	// +listType=atomic
	LostNodes []string `json:"lostNodes,omitempty"`
	// Window is the state of spec.maintenanceWindows, absent without windows.
	// +optional
	Window *WindowStatus `json:"window,omitempty"`
	// Workloads lists the selected workloads (at most 50), sorted by kind and name.
	// +optional
	// +listType=atomic
	Workloads []WorkloadStatus `json:"workloads,omitempty"`
	// Conditions are BudgetsReady, Conflicted, WindowOpen, Degraded, NodesLost,
	// WritesContested and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DisruptionPolicy keeps a PodDisruptionBudget on every selected workload of its
// namespace, in step with the workload's size and selector, and handles single replicas
// by a declared strategy so that no budget blocks a drain forever.
//
// When policies overlap, the oldest (by creationTimestamp, then name) wins a workload;
// the others list it as Overridden.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dp,categories=holdfast
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Max Unavailable",type=string,JSONPath=`.spec.maxUnavailable`
// +kubebuilder:printcolumn:name="Min Available",type=string,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Single",type=string,JSONPath=`.spec.singleReplica`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selected`
// +kubebuilder:printcolumn:name="Budgeted",type=integer,JSONPath=`.status.budgeted`
// +kubebuilder:printcolumn:name="Conflicting",type=integer,JSONPath=`.status.conflicting`
// +kubebuilder:printcolumn:name="Unprotected",type=integer,JSONPath=`.status.unprotected`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.blocked`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.status.conditions[?(@.type=="WindowOpen")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DisruptionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DisruptionPolicySpec   `json:"spec"`
	Status DisruptionPolicyStatus `json:"status,omitempty"`
}

// DisruptionPolicyList is a list of DisruptionPolicies.
// +kubebuilder:object:root=true
type DisruptionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DisruptionPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &DisruptionPolicy{}, &DisruptionPolicyList{})
		return nil
	})
}
