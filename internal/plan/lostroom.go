package plan

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// LostRoom says, for the pods of the lost nodes in snap at now, which would fit on the
// surviving nodes if each were started again there, all together: by pod
// (namespace/name), "" for one that fits, else why it fits nowhere. The pods are placed
// in the order that saves the most availability first: those of workloads with the
// fewest Ready pods left on the survivors (a single replica, or a workload the loss
// took below its floor), then by priority, highest first. DaemonSet and mirror pods
// belong to their node, and a pod without a controller is started by nothing: neither
// is placed nor named. The pods of the surge sets that stand in for lost pods give their
// room back first. It never changes snap.
func LostRoom(snap *snapshot.Snapshot, now time.Time, lost []string) map[string]string {
	m := availability.Build(snap, now)
	c := newCluster(m)
	var homeless []*pod
	for _, name := range lost {
		i, ok := c.index[name]
		if !ok {
			continue
		}
		n := c.nodes[i]
		n.unschedulable = true
		for _, p := range slices.Clone(n.pods) {
			if p.skip || p.bare {
				continue
			}
			c.unbind(p)
			homeless = append(homeless, p)
		}
	}
	// The surge sets' pods that already stand in for lost pods give their room back:
	// the question is where the lost pods go, and asked again during the surge it must
	// get the same answer, or the surge would shrink under its own pods.
	standIns := map[string]bool{}
	for _, p := range homeless {
		if p.workload != nil && p.workload.Kind == snapshot.KindDeployment {
			standIns[string(p.workload.Object.GetUID())] = true
		}
	}
	for _, p := range slices.Clone(c.pods) {
		if p.node >= 0 && p.member.Pod != nil && standIns[p.member.Pod.Labels[holdfastv1alpha1.SurgeOfLabel]] {
			c.unbind(p)
		}
	}
	left := map[int32]int{}
	for _, p := range c.pods {
		if p.wl >= 0 && p.ready && p.node >= 0 {
			left[p.wl]++
		}
	}
	survivors := func(p *pod) int {
		if p.wl < 0 {
			return 0
		}
		return left[p.wl]
	}
	slices.SortStableFunc(homeless, func(a, b *pod) int {
		return cmp.Or(cmp.Compare(survivors(a), survivors(b)),
			-cmp.Compare(ptr.Deref(a.member.Pod.Spec.Priority, 0), ptr.Deref(b.member.Pod.Spec.Priority, 0)),
			cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	out := make(map[string]string, len(homeless))
	pl := c.newPlacer()
	for _, p := range homeless {
		ok, why := pl.place(p)
		out[p.namespace+"/"+p.name] = ""
		if !ok {
			out[p.namespace+"/"+p.name] = describe(len(c.nodes), why)
		}
	}
	return out
}
