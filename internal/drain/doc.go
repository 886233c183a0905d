// Package drain acts: it cordons nodes and moves their pods off through the policy/v1
// Eviction API, never by deleting them, so that every PodDisruptionBudget is honoured.
//
// Three things make it safe to run on every node at once, as an upgrade loop does:
//
//   - a cluster-wide counting semaphore of coordination.k8s.io Leases (Semaphore): each
//     node's drain holds a slot, renewed while it runs, so at most MaxConcurrent nodes
//     drain at a time whoever started them, and a slot whose holder died expires;
//   - pacing: the next eviction from a workload waits until the replacement of the
//     previous one is Ready, and a node keeps its slot until its pods' replacements are;
//   - refusals are explained, not hidden: a 429 names the budget that refused and is
//     retried with backoff, a budget that can never allow an eviction (over a single
//     replica, say) and a pod under two budgets stop that pod with the reason.
//
// The decisions (which slot to take, which pods to evict, what to do next with a pod,
// how long to back off) are pure functions of their inputs and the time; Drainer does
// the API calls around them.
package drain
