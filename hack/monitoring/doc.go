// Package monitoring holds the tests of holdfast's alerting rules
// (config/monitoring/prometheusrule.yaml): each alert is evaluated with Prometheus's own
// rule engine on series that fire it and on series that do not, labelled as Prometheus
// stores them after scraping the operator through config/monitoring's ServiceMonitor. It
// is a module of its own so that holdfast never depends on Prometheus; `make
// test-monitoring` runs it.
package monitoring
