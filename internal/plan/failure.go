package plan

import (
	"cmp"
	"slices"
	"time"

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

// Loss is what a failure takes from one workload.
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
}

// Failures says, for each node (or, with zones, each zone) of snap at time now, which
// workloads its sudden loss would take down completely or below half. Domains that hurt
// no workload that much are left out; the rest are sorted by name. DaemonSets are left
// out: their pods only serve their own node. From manifests, replicas are first placed
// as the scheduler would spread them.
func Failures(snap *snapshot.Snapshot, now time.Time, zones bool) []Failure {
	c := newCluster(availability.Build(snap, now))
	topology := TopologyNode
	if zones {
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
		domain := c.domain(p.node, zones)
		if domain == "" {
			continue
		}
		if perDomain[domain] == nil {
			perDomain[domain] = map[int32]int32{}
		}
		perDomain[domain][p.wl]++
	}
	out := []Failure{}
	for domain, counts := range perDomain {
		f := Failure{Topology: topology, Domain: domain}
		for wl, lost := range counts {
			w := c.m.Workloads[wl]
			if lost == running[wl] || 2*lost > w.Desired {
				f.Losses = append(f.Losses, Loss{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name,
					Desired: w.Desired, Running: running[wl], Lost: lost, All: lost == running[wl]})
			}
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
	return out
}

// domain names the node, or its zone.
func (c *cluster) domain(n int, zones bool) string {
	if zones {
		return c.m.Nodes[n].Zone
	}
	return c.nodes[n].name
}
