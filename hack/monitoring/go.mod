// Module monitoring tests holdfast's Prometheus alerting rules with Prometheus's own rule
// parser and evaluator. It is a module of its own so that holdfast never depends on
// Prometheus.
module github.com/holdfast-dev/holdfast/hack/monitoring

go 1.26.7

require github.com/prometheus/prometheus v0.316.0 // indirect
