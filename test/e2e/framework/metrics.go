package framework

import (
	"maps"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric reads the gauge or counter (a histogram: its count of observations) of that
// name and exactly those labels from the registry the in-process operator exports, and
// whether there is one.
func Metric(name string, labels map[string]string) (float64, bool, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, false, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if !maps.Equal(got, labels) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true, nil
			}
			if m.GetHistogram() != nil {
				return float64(m.GetHistogram().GetSampleCount()), true, nil
			}
			return m.GetGauge().GetValue(), true, nil
		}
	}
	return 0, false, nil
}
