// Package policy decides what holdfast's own objects mean for a cluster: the budgets,
// scales and pod annotations a DisruptionPolicy wants for its workloads (a chain of
// small steps per workload, one file per strategy: surge, protect, pacing, windows), the
// copies a ClusterDisruptionPolicy makes, and the Deployment and budgets a NodeCompanion
// keeps. It is pure: it takes what was observed and the time, and returns values. The
// controllers act on its decisions, and the CLI runs the same decisions over a snapshot
// to predict the cluster the operator will make.
package policy
