package audit

import (
	"fmt"
	"maps"
	"strings"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// zoneAwareWorkloadPerZone flags a workload under a zone-aware policy that runs in one
// zone while another workload of the policy runs in another.
func zoneAwareWorkloadPerZone(m *availability.Model, w *availability.Workload) *Result {
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	if p == nil || p.Spec.ZoneAware == nil || !policy.ZoneAware(p, &policy.Workload{Kind: w.Kind}) {
		return nil
	}
	zone := soleZone(m, p.Spec.ZoneAware, w)
	if zone == "" {
		return nil
	}
	var others []string
	common := maps.Clone(podLabels(w))
	for _, o := range m.Workloads {
		if o == w || o.Namespace != w.Namespace || !policy.ZoneAware(p, &policy.Workload{Kind: o.Kind}) {
			continue
		}
		if q := policy.Managing(m.DisruptionPolicies, o.Object); q == nil || q.Name != p.Name {
			continue
		}
		if z := soleZone(m, p.Spec.ZoneAware, o); z != "" && z != zone {
			others = append(others, fmt.Sprintf("%s (zone %s)", describe(o), z))
			maps.DeleteFunc(common, func(k, v string) bool { return podLabels(o)[k] != v })
		}
	}
	if len(others) == 0 {
		return nil
	}
	r := &Result{Message: fmt.Sprintf("%s runs in zone %s only, and DisruptionPolicy %s also manages %s: its zone-aware budgets are per workload, so each lets its own zone lose up to the per-zone limit while another zone loses pods too.",
		describe(w), zone, p.Name, strings.Join(others, ", "))}
	if len(common) > 0 {
		r.Fix = snippet(fmt.Sprintf("one pod at a time over every zone's pods; leave these workloads out of DisruptionPolicy %s", p.Name), obj{
			"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
			// Named after the policy: every workload's finding gives the same budget.
			"metadata": obj{"name": p.Name + "-zones", "namespace": w.Namespace},
			"spec":     obj{"selector": obj{"matchLabels": common}, "maxUnavailable": 1},
		})
	}
	return r
}

// soleZone is the one zone where w's pods run, as za counts them (from manifests, the
// zone its template pins them to); "" when they run in several, or none is known.
func soleZone(m *availability.Model, za *holdfastv1alpha1.ZoneAwareSpec, w *availability.Workload) string {
	if w.Projected {
		return policy.TemplateZone(za, w.Template)
	}
	zone := ""
	for _, member := range w.Members {
		n, ok := m.Node(member.NodeName)
		if !ok || member.Terminating {
			continue
		}
		z := policy.NodeZone(za, n.Node)
		if z == "" || zone != "" && z != zone {
			return ""
		}
		zone = z
	}
	return zone
}

func noSpread(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired < 2 || w.Facts.NodeSpread != availability.SpreadNone {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s runs %d replicas with nothing spreading them across nodes: the scheduler may put them all on one node (a fresh idle node scores best), and that node's drain or crash takes the whole service down.", describe(w), w.Desired),
		Fix:     spreadFix(w, describe(w)+": keep replicas on different nodes, and prefer different zones"),
	}
}

func preferredSpreadOnly(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired < 2 || w.Facts.NodeSpread != availability.SpreadPreferred {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s spreads its %d replicas across nodes only as a preference (preferred anti-affinity or ScheduleAnyway): when nodes are busy the scheduler trades it away and all of them can land on one node.", describe(w), w.Desired),
		Fix:     spreadFix(w, describe(w)+": make the spread across nodes a requirement"),
	}
}

func concentratedOnNode(m *availability.Model, w *availability.Workload) *Result {
	p := w.Placement
	if len(m.Nodes) < 2 || p.Scheduled < 2 || p.OnBusiestNode*2 <= p.Scheduled {
		return nil
	}
	loss := "more than half of its capacity"
	if p.OnBusiestNode == p.Scheduled {
		loss = "the whole service"
	}
	res := &Result{Message: fmt.Sprintf("%d of the %d running pods of %s are on node %s: draining, upgrading or losing that node takes down %s at once.",
		p.OnBusiestNode, p.Scheduled, describe(w), p.BusiestNode, loss)}
	restart := fmt.Sprintf("then move the pods: kubectl rollout restart %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace)
	if w.Facts.NodeSpread == availability.SpreadRequired {
		res.Fix = "# " + restart
	} else {
		res.Fix = spreadFix(w, describe(w)+": require spread across nodes, "+restart)
	}
	return res
}

func concentratedInZone(m *availability.Model, w *availability.Workload) *Result {
	p := w.Placement
	zones := m.Zones()
	if len(zones) < 2 || p.Scheduled < 2 || p.InBusiestZone < p.Scheduled {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("all %d running pods of %s are in zone %s of a cluster with %d zones: an outage or upgrade of that zone takes the whole service down.", p.Scheduled, describe(w), p.BusiestZone, len(zones)),
		Fix: snippet(fmt.Sprintf("%s: spread across zones, then kubectl rollout restart %s/%s -n %s", describe(w), strings.ToLower(w.Kind), w.Name, w.Namespace),
			obj{"spec": obj{"template": obj{"spec": obj{"topologySpreadConstraints": []obj{
				{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
					"labelSelector": obj{"matchLabels": podLabels(w)}},
			}}}}}),
	}
}

func surgeWithOnePerNode(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindDeployment || !w.Facts.OnePerNode || w.Facts.Strategy.MaxSurge == 0 || w.Desired < 1 {
		return nil
	}
	eligible := m.EligibleNodes(w.Template)
	var nodes string
	switch {
	case eligible < 0:
		nodes = fmt.Sprintf("on a cluster with %d or fewer eligible nodes", w.Desired)
	case int(w.Desired) >= eligible:
		nodes = fmt.Sprintf("and %s fit on the %s", policy.Plural(w.Desired, "replica"), policy.Plural(int32(eligible), "eligible node"))
	default:
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s allows one pod per node (required anti-affinity on kubernetes.io/hostname) and its rollout surges %s, %s: the surge pod has no node to go to, stays Pending, and the rollout hangs.",
			describe(w), policy.Plural(w.Facts.Strategy.MaxSurge, "extra pod"), nodes),
		Fix: snippet(describe(w)+": replace one pod at a time instead of surging",
			obj{"spec": obj{"strategy": obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxSurge": 0, "maxUnavailable": 1}}}}),
	}
}

func crossZoneDoubleDisruption(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindStatefulSet || w.Desired < 3 || len(w.Budgets) != 1 || w.Budgets[0].AtFullHealth < 2 {
		return nil
	}
	if len(w.Placement.PerZone) < 2 && (len(m.Zones()) < 2 && !w.Projected || w.Facts.ZoneSpread == availability.SpreadNone) {
		return nil
	}
	if p := policy.Managing(m.DisruptionPolicies, w.Object); p != nil && p.Spec.ZoneAware != nil {
		return nil
	}
	b := w.Budgets[0]
	return &Result{
		Message: fmt.Sprintf("%s spreads %d replicas over zones and PodDisruptionBudget %s allows %d disruptions at once, in any zones: two drains in two zones can take one pod from each, and a quorum with a copy per zone loses its majority.",
			describe(w), w.Desired, b.Name, b.AtFullHealth),
		Fix: snippet(fmt.Sprintf("%s: let one zone at a time lose up to %d pods, every other zone held (replaces %s)", describe(w), b.AtFullHealth, b.Name), obj{
			"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy",
			"metadata": obj{"name": w.Name + "-zones", "namespace": w.Namespace},
			"spec": obj{
				"selector": obj{"matchLabels": w.Object.GetLabels()}, "kinds": []string{"StatefulSet"}, "maxUnavailable": 1,
				"zoneAware": obj{"maxUnavailable": b.AtFullHealth},
			},
		}),
	}
}
