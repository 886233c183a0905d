package snapshottest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Style is how Manifests writes mappings.
type Style int

const (
	// Block writes every mapping and sequence one entry a line, as kubectl does.
	Block Style = iota
	// Flow writes each top-level field's value on its line, `{name: x, namespace: y}`,
	// as generators and people in a hurry do.
	Flow
)

func (s Style) String() string {
	if s == Flow {
		return "flow"
	}
	return "block"
}

// Manifests writes one YAML stream of workloads Deployments, each followed by its
// PodDisruptionBudget, 20 to a namespace. The objects are as people write them, if
// short: labels, selectors, resources, probes; and a few are wrong, so that the
// audit has findings: every 7th Deployment without a readiness probe, every 9th without a
// spread, every 50th of one replica, every 13th budget allowing no disruption, every 11th selecting nothing. The
// same workloads give the same bytes.
func Manifests(workloads int, style Style) []byte {
	var b strings.Builder
	for w := range workloads {
		for _, obj := range workload(w) {
			b.WriteString("---\n")
			for _, f := range obj {
				b.WriteString(f.key)
				b.WriteByte(':')
				if style == Flow {
					b.WriteByte(' ')
					writeFlow(&b, f.value)
					b.WriteByte('\n')
					continue
				}
				writeBlockValue(&b, f.value, 0)
			}
		}
	}
	return []byte(b.String())
}

// mapping keeps its fields in the order written; a value is a string, an int, a
// mapping or a sequence ([]any).
type mapping []field

type field struct {
	key   string
	value any
}

func workload(w int) []mapping {
	ns, name := fmt.Sprintf("ns-%d", w/20), fmt.Sprintf("app-%d", w)
	tier := fmt.Sprintf("tier-%d", w%4)
	labels := mapping{{"app", name}, {"tier", tier}}
	replicas := 2 + w%4
	if w%50 == 0 {
		replicas = 1
	}
	container := mapping{
		{"name", "app"},
		{"image", fmt.Sprintf("registry.example/shop:1.%d", w%9)},
		{"resources", mapping{{"requests", mapping{{"cpu", fmt.Sprintf("%dm", 100+w%5*50)}, {"memory", "128Mi"}}}}},
		{"readinessProbe", mapping{{"httpGet", mapping{{"path", "/ready"}, {"port", 8080}}}}},
		{"livenessProbe", mapping{{"tcpSocket", mapping{{"port", 8080}}}}},
	}
	if w%7 == 0 {
		container = slices.Delete(container, 3, 4)
	}
	pod := mapping{{"containers", []any{container}}}
	if w%9 != 0 {
		pod = slices.Insert(pod, 0, field{"topologySpreadConstraints", []any{mapping{
			{"maxSkew", 1}, {"topologyKey", "kubernetes.io/hostname"}, {"whenUnsatisfiable", "DoNotSchedule"},
			{"labelSelector", mapping{{"matchLabels", mapping{{"app", name}}}}},
		}}})
	}
	deployment := mapping{
		{"apiVersion", "apps/v1"},
		{"kind", "Deployment"},
		{"metadata", mapping{{"name", name}, {"namespace", ns}, {"labels", labels}}},
		{"spec", mapping{
			{"replicas", replicas},
			{"selector", mapping{{"matchLabels", mapping{{"app", name}}}}},
			{"template", mapping{
				{"metadata", mapping{{"labels", labels}}},
				{"spec", pod},
			}},
		}},
	}
	selector := mapping{{"matchLabels", mapping{{"app", name}}}}
	if w%11 == 0 {
		selector = mapping{{"matchLabels", mapping{{"app", name + "-old"}}}}
	}
	spec := mapping{{"maxUnavailable", 1}, {"selector", selector}}
	switch {
	case w%13 == 0:
		spec[0] = field{"maxUnavailable", 0}
	case w%3 == 0:
		spec[0] = field{"minAvailable", "50%"}
	}
	budget := mapping{
		{"apiVersion", "policy/v1"},
		{"kind", "PodDisruptionBudget"},
		{"metadata", mapping{{"name", name}, {"namespace", ns}}},
		{"spec", spec},
	}
	return []mapping{deployment, budget}
}

// writeBlockValue writes what follows a key's colon, at the key's indent.
func writeBlockValue(b *strings.Builder, v any, indent int) {
	switch v := v.(type) {
	case mapping:
		b.WriteByte('\n')
		writeBlockMapping(b, v, indent+2, false)
	case []any:
		b.WriteByte('\n')
		for _, item := range v {
			b.WriteString(strings.Repeat(" ", indent))
			b.WriteString("- ")
			if m, ok := item.(mapping); ok {
				writeBlockMapping(b, m, indent+2, true)
				continue
			}
			b.WriteString(scalar(item))
			b.WriteByte('\n')
		}
	default:
		b.WriteByte(' ')
		b.WriteString(scalar(v))
		b.WriteByte('\n')
	}
}

// writeBlockMapping writes m at indent; inItem, its first key is already placed, after
// a sequence's "- ".
func writeBlockMapping(b *strings.Builder, m mapping, indent int, inItem bool) {
	for i, f := range m {
		if i > 0 || !inItem {
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteString(f.key)
		b.WriteByte(':')
		writeBlockValue(b, f.value, indent)
	}
}

func writeFlow(b *strings.Builder, v any) {
	switch v := v.(type) {
	case mapping:
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.key)
			b.WriteString(": ")
			writeFlow(b, f.value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeFlow(b, item)
		}
		b.WriteByte(']')
	default:
		b.WriteString(scalar(v))
	}
}

// scalar writes a value plain, or quoted where plain would read as another type.
func scalar(v any) string {
	switch v := v.(type) {
	case int:
		return strconv.Itoa(v)
	case string:
		if _, err := strconv.Atoi(v); err == nil {
			return strconv.Quote(v)
		}
		return v
	}
	panic(fmt.Sprintf("snapshottest: no YAML for %T", v))
}
