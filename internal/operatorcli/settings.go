package operatorcli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// AddSettingsFlags registers the operator's flags that bound its decisions into s:
// plan and audit take them too, so that they predict the operator as it runs.
func AddSettingsFlags(f *pflag.FlagSet, s *policy.Settings) {
	a, d := &s.Autoscalers, policy.DefaultSettings.Autoscalers
	f.Float64Var(&a.Threshold, "scale-down-utilization-threshold", d.Threshold, "a Surge single replica's node is handed over to Karpenter's consolidation or cluster-autoscaler's scale-down only when its pods request at most this share of its CPU and of its memory (cluster-autoscaler's flag of the same name)")
	f.StringVar(&a.NodeGroupLabel, "cluster-autoscaler-node-group-label", "", "the node label naming a node's cluster-autoscaler node group (cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup, kubernetes.azure.com/agentpool, ...); set it where cluster-autoscaler runs so that holdfast hands it the nodes of Surge single replicas")
	f.DurationVar(&a.UnneededTime, "cluster-autoscaler-unneeded-time", d.UnneededTime, "cluster-autoscaler's --scale-down-unneeded-time, which a hand-off waits for")
	f.DurationVar(&a.Recheck, "cluster-autoscaler-recheck-timeout", d.Recheck, "cluster-autoscaler's --unremovable-node-recheck-timeout, which a hand-off waits for")
	l, fd := &s.Failure, policy.DefaultSettings.Failure
	f.Float64Var(&l.BrakeShare, "brake-share", fd.BrakeShare, "hold back (no extra pods, no fences) when more than this share of the nodes, in more than one zone, stop renewing their Leases at once: that points at the network, the control plane or the operator's view rather than at the machines. One node never trips it, nor does one zone going dark; 1 turns the brake off")
	f.DurationVar(&l.BrakeWindow, "brake-window", fd.BrakeWindow, "nodes whose Leases stopped within this time of each other count as lost at once, for --brake-share")
	f.BoolVar(&l.NamespacedFencing, "allow-namespaced-fencing", false, "let every namespace's DisruptionPolicy with nodeFailure.fencing: Verified taint nodes out-of-service, which releases every StatefulSet pod on the node, whichever namespace's; without it only the copies of a ClusterDisruptionPolicy whose template fences do")
	f.BoolVar(&l.FenceAfter, "allow-fence-after", false, "let nodeFailure.fenceAfter count as proof that a node is down; it is time, not proof: a node cut off by a partition keeps running its pods, and a second pod of the same identity starts elsewhere")
}

// ValidateSettings checks the flags AddSettingsFlags registers.
func ValidateSettings(s policy.Settings) error {
	a, l := s.Autoscalers, s.Failure
	if a.Threshold <= 0 || a.Threshold > 1 || a.UnneededTime <= 0 || a.Recheck <= 0 {
		return fmt.Errorf("--scale-down-utilization-threshold must be above 0 and at most 1, --cluster-autoscaler-unneeded-time and --cluster-autoscaler-recheck-timeout above 0; got %g, %s and %s",
			a.Threshold, a.UnneededTime, a.Recheck)
	}
	if l.BrakeShare <= 0 || l.BrakeShare > 1 || l.BrakeWindow < time.Second || l.BrakeWindow > 10*time.Minute {
		return fmt.Errorf("--brake-share must be above 0 and at most 1, --brake-window from 1s to 10m; got %g and %s", l.BrakeShare, l.BrakeWindow)
	}
	return nil
}
