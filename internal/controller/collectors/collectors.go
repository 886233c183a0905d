// Package collectors registers the operator's Prometheus collectors.
package collectors

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or, when a process builds the operator
// more than once (tests restart it), the collector of the same kind registered the
// first time, so that its series carry on. The caller's error says whose metrics.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
