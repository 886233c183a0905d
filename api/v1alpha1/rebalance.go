package v1alpha1

import "time"

// Annotations that opt a Deployment or StatefulSet into rebalancing, and the one the
// rebalance controller writes on it. Rebalancing spreads again the replicas that piled
// onto one node after a node crash, which the scheduler never moves. On a workload whose
// DisruptionPolicy has spec.rebalance, each of the first three overrides the policy's
// setting of the same meaning.
const (
	// RebalanceAnnotation opts a workload in: "true" spreads its replicas over nodes
	// (kubernetes.io/hostname, or its policy's topologyKeys), a comma-separated list of
	// node label keys over the domains of each, e.g.
	// "kubernetes.io/hostname,topology.kubernetes.io/zone". "false" opts it out, also of
	// its policy's rebalancing.
	RebalanceAnnotation = "holdfast.dev/rebalance"
	// RebalanceMaxSkewAnnotation is the most pods one domain may hold above the emptiest
	// before a pod is moved; 1 when absent.
	RebalanceMaxSkewAnnotation = "holdfast.dev/rebalance-max-skew"
	// RebalanceCooldownAnnotation is the least time between two moves of the workload, as
	// a Go duration ("30s", "5m"); five minutes when absent, MinRebalanceCooldown when
	// less.
	RebalanceCooldownAnnotation = "holdfast.dev/rebalance-cooldown"
	// LastRebalanceAnnotation records the workload's last move as "time pod-name", the
	// time in RFC 3339 with its fraction of a second, so that the cooldown and "never the
	// same pod twice in a row" survive a restart.
	LastRebalanceAnnotation = "holdfast.dev/last-rebalance"
)

// MinRebalanceCooldown is the least cooldown holdfast applies, whatever the annotation
// says (spec.rebalance.cooldown's schema refuses less): without it, anyone who may
// annotate a workload could make its pods move back to back, each move reading every
// pod of the cluster.
const MinRebalanceCooldown = 10 * time.Second
