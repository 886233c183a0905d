package audit

import (
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// snippet renders a fix as YAML under a comment naming what to edit.
func snippet(comment string, v any) string {
	var b strings.Builder
	b.WriteString("# " + comment + "\n")
	renderYAML(&b, v, 0)
	return strings.TrimSuffix(b.String(), "\n")
}

type obj = map[string]any

// podLabels are the labels that pick the workload's pods in a fix: its own selector when
// it is plain matchLabels, else its template's labels.
func podLabels(w *availability.Workload) map[string]string {
	if s := w.LabelSelector; s != nil && len(s.MatchExpressions) == 0 && len(s.MatchLabels) > 0 {
		return s.MatchLabels
	}
	l := maps.Clone(w.Template.Labels)
	delete(l, appsv1.DefaultDeploymentUniqueLabelKey)
	return l
}

func budgetFix(w *availability.Workload) string {
	return snippet("add a PodDisruptionBudget that lets one pod go at a time", obj{
		"apiVersion": "policy/v1",
		"kind":       "PodDisruptionBudget",
		"metadata":   obj{"name": w.Name, "namespace": w.Namespace},
		"spec":       obj{"maxUnavailable": 1, "selector": obj{"matchLabels": podLabels(w)}},
	})
}

func spreadFix(w *availability.Workload, comment string) string {
	return snippet(comment, obj{"spec": obj{"template": obj{"spec": obj{
		"topologySpreadConstraints": []obj{
			{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": obj{"matchLabels": podLabels(w)}},
			{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
				"labelSelector": obj{"matchLabels": podLabels(w)}},
		},
	}}}})
}

func probeFix(w *availability.Workload, containers []string, field string) string {
	var list []obj
	for _, name := range containers {
		probe := obj{"periodSeconds": 5}
		if port := firstPort(w, name); port > 0 {
			probe["tcpSocket"] = obj{"port": port}
		} else {
			probe["exec"] = obj{"command": []string{"<command that succeeds when the container is healthy>"}}
		}
		list = append(list, obj{"name": name, field: probe})
	}
	return snippet(fmt.Sprintf("%s: add a %s (an httpGet on a health endpoint is better when there is one)", describe(w), field),
		obj{"spec": obj{"template": obj{"spec": obj{"containers": list}}}})
}

func firstPort(w *availability.Workload, container string) int32 {
	for _, c := range w.Template.Spec.Containers {
		if c.Name == container && len(c.Ports) > 0 {
			return c.Ports[0].ContainerPort
		}
	}
	return 0
}
