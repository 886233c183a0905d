package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// defaultAutoscalers are the flags' defaults: cluster-autoscaler's own, without its node
// groups.
var defaultAutoscalers = policy.Autoscalers{Threshold: 0.5, UnneededTime: 10 * time.Minute, Recheck: 5 * time.Minute}

// addAutoscalerFlags registers what the operator is told of the node autoscalers into
// a: the operator's flags, which plan and audit take too, so that they predict the
// operator's hand-offs of Surge single replicas' nodes with the values it runs with.
func addAutoscalerFlags(f *pflag.FlagSet, a *policy.Autoscalers) {
	f.Float64Var(&a.Threshold, "scale-down-utilization-threshold", defaultAutoscalers.Threshold, "a Surge single replica's node is handed over to Karpenter's consolidation or cluster-autoscaler's scale-down only when its pods request at most this share of its CPU and of its memory (cluster-autoscaler's flag of the same name)")
	f.StringVar(&a.NodeGroupLabel, "cluster-autoscaler-node-group-label", "", "the node label naming a node's cluster-autoscaler node group (cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup, kubernetes.azure.com/agentpool, ...); set it where cluster-autoscaler runs so that holdfast hands it the nodes of Surge single replicas")
	f.DurationVar(&a.UnneededTime, "cluster-autoscaler-unneeded-time", defaultAutoscalers.UnneededTime, "cluster-autoscaler's --scale-down-unneeded-time, which a hand-off waits for")
	f.DurationVar(&a.Recheck, "cluster-autoscaler-recheck-timeout", defaultAutoscalers.Recheck, "cluster-autoscaler's --unremovable-node-recheck-timeout, which a hand-off waits for")
}

// validateAutoscalers checks the flags addAutoscalerFlags registers.
func validateAutoscalers(a policy.Autoscalers) error {
	if a.Threshold <= 0 || a.Threshold > 1 || a.UnneededTime <= 0 || a.Recheck <= 0 {
		return fmt.Errorf("--scale-down-utilization-threshold must be above 0 and at most 1, --cluster-autoscaler-unneeded-time and --cluster-autoscaler-recheck-timeout above 0; got %g, %s and %s",
			a.Threshold, a.UnneededTime, a.Recheck)
	}
	return nil
}
