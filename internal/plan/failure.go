package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/policy"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Topology is what fails in a what-if: one node or one zone.
type Topology string

// The failure domains.
const (
	TopologyNode Topology = "node"
	TopologyZone Topology = "zone"
)

// Failure is the loss of one node or zone and the workloads it hurts.
type Failure struct {
	Topology Topology `json:"topology"`
	Domain   string   `json:"domain"`
	// Losses are the workloads that would lose every running replica or more than half of
	// those they ask for, the worst first.
	Losses []Loss `json:"losses"`
}

// Loss is what a failure takes from one workload, and how long it takes to be whole
// again.
type Loss struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Desired   int32  `json:"desired"`
	// Running is the workload's placed pods before the failure, Lost those in the domain.
	Running int32 `json:"running"`
	Lost    int32 `json:"lost"`
	// All is true when no replica survives.
	All bool `json:"all"`
	// Policy is the DisruptionPolicy that manages the workload, "" for none.
	Policy string `json:"policy,omitempty"`
	// AloneSeconds and WithHoldfastSeconds are the seconds from the failure to full
	// strength, Kubernetes alone and with holdfast's response; nil for never.
	AloneSeconds        *int64 `json:"fullStrengthAloneSeconds"`
	WithHoldfastSeconds *int64 `json:"fullStrengthWithHoldfastSeconds"`
	// Response says what holdfast does, or why it does nothing.
	Response string `json:"response"`
}

// FailureOptions shape Failures.
type FailureOptions struct {
	// Zones fails whole zones instead of nodes.
	Zones bool
	// Domains are the nodes (or zones) to fail, each reported with every workload it
	// hurts; empty fails each in turn and reports the losses of every replica or more
	// than half.
	Domains []string
	// Startup is how long a replacement takes to be Ready; 0 estimates it from each
	// workload's pods (DefaultStartup without any).
	Startup time.Duration
	// Settings are the operator's bounds on its response (its flags).
	Settings policy.FailureSettings
}

// DefaultStartup is the start-up assumed for a workload whose pods say nothing of
// theirs (from manifests).
const DefaultStartup = 10 * time.Second

// Failures says, for each node (or, with zones, each zone) of snap at time now, which
// workloads its sudden loss would take down completely or below half, and how long each
// takes to be whole again with and without holdfast (policy.RecoveryOf, the operator's
// own model). Domains that hurt no workload that much are left out; the rest are sorted
// by name. DaemonSets are left out: their pods only serve their own node. From
// manifests, replicas are first placed as the scheduler would spread them.
func Failures(snap snapshot.Predicted, now time.Time, o FailureOptions) ([]Failure, error) {
	c := newCluster(availability.Build(snap.Snapshot, now))
	topology := TopologyNode
	if o.Zones {
		topology = TopologyZone
	}
	running := make([]int32, len(c.m.Workloads))
	// perDomain[domain][workload] counts placed pods.
	perDomain := map[string]map[int32]int32{}
	for _, p := range c.pods {
		if p.wl < 0 || p.skip || p.node < 0 {
			continue
		}
		running[p.wl]++
		domain := c.domain(p.node, o.Zones)
		if domain == "" {
			continue
		}
		if perDomain[domain] == nil {
			perDomain[domain] = map[int32]int32{}
		}
		perDomain[domain][p.wl]++
	}
	if err := c.knowDomains(o.Domains, o.Zones); err != nil {
		return nil, err
	}
	out := []Failure{}
	for domain, counts := range perDomain {
		if len(o.Domains) > 0 && !slices.Contains(o.Domains, domain) {
			continue
		}
		lostNodes := c.lostNodes(domain, o.Zones)
		braked := policy.Brake(c.nodesPerZone(), lostNodes, o.Settings) != ""
		// More than one node lost: the operator surges only what fits on the survivors.
		var room map[string]string
		if len(lostNodes) > 1 && !braked {
			room = LostRoom(snap.Snapshot, now, slices.Sorted(maps.Keys(lostNodes)))
		}
		f := Failure{Topology: topology, Domain: domain}
		for wl, lost := range counts {
			w := c.m.Workloads[wl]
			if len(o.Domains) == 0 && lost != running[wl] && 2*lost <= w.Desired {
				continue
			}
			l := Loss{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Desired: w.Desired, Running: running[wl], Lost: lost, All: lost == running[wl]}
			c.recovery(snap.Snapshot, w, &l, o.Startup, policy.Spread{Braked: braked, Homeless: homelessOf(w, room)})
			f.Losses = append(f.Losses, l)
		}
		if len(f.Losses) == 0 {
			continue
		}
		slices.SortFunc(f.Losses, func(a, b Loss) int {
			return cmp.Or(-cmp.Compare(boolInt(a.All), boolInt(b.All)),
				cmp.Compare(int64(b.Lost)*int64(a.Desired), int64(a.Lost)*int64(b.Desired)),
				cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Failure) int { return cmp.Compare(a.Domain, b.Domain) })
	return out, nil
}

// knowDomains refuses a domain no node is in.
func (c *cluster) knowDomains(domains []string, zones bool) error {
	for _, d := range domains {
		if !slices.ContainsFunc(c.m.Nodes, func(n *availability.Node) bool { return !zones && n.Name == d || zones && n.Zone == d }) {
			what := "node"
			if zones {
				what = "zone"
			}
			return fmt.Errorf("no %s %q in the input", what, d)
		}
	}
	return nil
}

// domain names the node, or its zone.
func (c *cluster) domain(n int, zones bool) string {
	if zones {
		return c.m.Nodes[n].Zone
	}
	return c.nodes[n].name
}

// nodesPerZone counts the nodes of each zone, "" for those without.
func (c *cluster) nodesPerZone() map[string]int {
	out := map[string]int{}
	for _, n := range c.m.Nodes {
		out[n.Zone]++
	}
	return out
}

// lostNodes are the nodes of a domain, with their zones.
func (c *cluster) lostNodes(domain string, zones bool) map[string]string {
	out := map[string]string{}
	for i, n := range c.m.Nodes {
		if c.domain(i, zones) == domain {
			out[n.Name] = n.Zone
		}
	}
	return out
}

// recovery fills in how long w takes to be whole again after the loss, by the model the
// operator acts on.
func (c *cluster) recovery(snap *snapshot.Snapshot, w *availability.Workload, l *Loss, startup time.Duration, spread policy.Spread) {
	p := policy.Managing(snap.DisruptionPolicies, w.Object)
	if p != nil {
		l.Policy = p.Name
	}
	if startup == 0 {
		startup = startupOf(w)
	}
	r := policy.RecoveryOf(p, w.Kind, policy.UnreachableToleration(w.Template), startup, spread, policy.StatedConsent(p))
	l.Response = r.How
	if !r.AloneNever {
		l.AloneSeconds = ptr.To(int64(r.Alone.Round(time.Second) / time.Second))
	}
	if !r.WithNever {
		l.WithHoldfastSeconds = ptr.To(int64(r.With.Round(time.Second) / time.Second))
	}
}

// homelessOf counts w's pods that room (LostRoom's answer) places nowhere.
func homelessOf(w *availability.Workload, room map[string]string) int32 {
	var n int32
	for _, m := range w.Members {
		if m.Pod != nil && room[m.Pod.Namespace+"/"+m.Pod.Name] != "" {
			n++
		}
	}
	return n
}

// startupOf estimates how long w's pods take to be Ready: the quickest of its running
// pods from creation to Ready, DefaultStartup when none says.
func startupOf(w *availability.Workload) time.Duration {
	var best time.Duration
	for _, m := range w.Members {
		if m.Pod == nil {
			continue
		}
		if ready, since := availability.Readiness(m.Pod); ready {
			if d := since.Sub(m.Pod.CreationTimestamp.Time); d > 0 && (best == 0 || d < best) {
				best = d
			}
		}
	}
	if best == 0 {
		return DefaultStartup
	}
	return best
}
