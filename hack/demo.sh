#!/usr/bin/env bash
# demo.sh walks through the scenarios of examples/ on a local testbed (6 nodes, 3 zones):
# the audit of manifests and of live state, a NodeCompanion keeping one guard pod per
# storage node (the operator installed by its Helm chart), kubectl drains held to one node
# at a time, replicas piled onto one node, a single replica surged through a drain by a
# DisruptionPolicy, the piled replicas spread again by the rebalance controller, and a
# worker's crash answered in seconds. `make demo` builds
# what it needs first; DEMO_KEEP=1 leaves the testbed running, DEMO_DIR moves it, and
# HOLDFAST / HOLDFAST_TESTBED point at other builds of the two binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DEMO_DIR:-/tmp/holdfast-demo}
holdfast=${HOLDFAST:-$PWD/bin/holdfast}
testbed=${HOLDFAST_TESTBED:-$PWD/bin/testbed}
kubectl=$("$testbed" build --src hack/testbed)/kubectl
helm=(go tool -modfile=hack/tools/go.mod helm)
export KUBECONFIG=$dir/kubeconfig

logs=$dir-logs
rm -rf "$logs"; mkdir -p "$logs"
marks=$logs/marks.txt
: >"$marks"
# step narrates a step and marks it on the report's timeline.
step() {
	printf '\n\033[1m== %s\033[0m\n' "$*"
	printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "${*%%:*}" >>"$marks"
}
say() { printf '   %s\n' "$*"; }
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }
# wait_for DESCRIPTION COMMAND...: polls COMMAND until it succeeds (90 s at most).
wait_for() {
	local what=$1 deadline=$((SECONDS + 90)); shift
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS > deadline)); then echo "demo: timed out waiting for $what" >&2; return 1; fi
		sleep 0.2
	done
}

operator_pid= timeline_pid=
cleanup() {
	for pid in $operator_pid $timeline_pid; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
	if [[ -z ${DEMO_KEEP:-} ]]; then "$testbed" down --dir "$dir" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

step "1. Audit the examples' manifests, each bad one beside its fix"
for d in examples/*/; do
	bad=$("$holdfast" audit -f "$d/bad.yaml" -o json | grep -c '"rule"' || true)
	fixed=$("$holdfast" audit -f "$d/fixed.yaml" -o json | grep -c '"rule"' || true)
	say "$(basename "$d"): bad.yaml $bad findings, fixed.yaml $fixed"
done
run "$holdfast" audit -f examples/003-single-replica-budget/bad.yaml --fail-on error -o json >/dev/null || say "exit code $? : the single-replica drain deadlock fails CI"

step "2. Start a real control plane with 6 kwok nodes in 3 zones"
"$testbed" down --dir "$dir" >/dev/null 2>&1 || true
run "$testbed" up --src hack/testbed --dir "$dir" --nodes 6 --zones 3
run "$kubectl" get nodes -L topology.kubernetes.io/zone
report=$dir-report.html
go build -o bin/timeline ./hack/demo/timeline
bin/timeline --namespaces prod,storage --marks "$marks" --out "$report" &
timeline_pid=$!

step "3. Deploy the scenarios: a one-replica service under minAvailable 1, three replicas with no budget, a storage DaemonSet"
run "$kubectl" apply -f hack/demo/scenarios.yaml
wait_for "the scenarios' pods" "$kubectl" wait -A --for=condition=Ready pod --all --timeout=10s

step "4. Replicas packed on one node: three replicas created while only node-1 is schedulable pile onto it"
run "$kubectl" cordon node-2 node-3 node-4 node-5 node-6
run "$kubectl" apply -f hack/demo/concentrated.yaml
wait_for "prod/api" "$kubectl" -n prod rollout status deploy/api --timeout=10s
run "$kubectl" uncordon node-2 node-3 node-4 node-5 node-6
run "$kubectl" -n prod get pods -l app=api -o wide
say "the nodes are back, and nothing moves the replicas: one node's loss takes all three"

step "5. Audit the live cluster"
run "$holdfast" audit -A --fail-on error || say "exit code $?: errors found"

step "6. DaemonSet pods no budget protects: install the operator with its Helm chart; a NodeCompanion puts a guard next to every storage agent"
say "the chart as a release packages it (hack/chart.sh), installed as on a real cluster: CRDs, RBAC, ServiceAccount, Deployment"
chart=$(hack/chart.sh "$logs" "$(sed 's/^v//' VERSION)" "$(cat VERSION)" 2>/dev/null)
run "${helm[@]}" install holdfast "$chart" --namespace holdfast-system --create-namespace --set replicas=0 --set leaderElection=false --wait
wait_for "the NodeCompanion CRD" "$kubectl" get nodecompanions -A
operator_sa=system:serviceaccount:holdfast-system:holdfast-operator
say "kwok's nodes run no containers, so the chart's Deployment is at 0 replicas and the operator runs on this"
say "machine instead, as $operator_sa: with exactly the permissions the chart grants its pod"
"$holdfast" operator --kubeconfig "$KUBECONFIG" --as "$operator_sa" --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 >"$logs/operator.log" 2>&1 &
operator_pid=$!
run "$kubectl" apply -f hack/demo/companion.yaml
wait_for "six Ready companions" bash -c "[[ \$('$kubectl' -n storage get nodecompanion storage-guard -o jsonpath='{.status.ready}') == 6 ]]"
# The disruption controller counts the companions' budget a moment after they are Ready.
wait_for "the companions' budget to allow one disruption" bash -c "[[ \$('$kubectl' -n storage get pdb storage-guard -o jsonpath='{.status.disruptionsAllowed}') == 1 ]]"
run "$kubectl" -n storage get nodecompanions
run "$kubectl" -n storage get pdb

step "7. Two drains at once, as a careless upgrade loop runs them: the companions' budget lets one node go"
"$kubectl" drain node-5 --ignore-daemonsets --pod-selector=holdfast.dev/companion --timeout=20s >"$logs/drain-node-5.log" 2>&1 &
first=$!
"$kubectl" drain node-6 --ignore-daemonsets --pod-selector=holdfast.dev/companion --timeout=20s >"$logs/drain-node-6.log" 2>&1 &
second=$!
rc5=0; wait $first || rc5=$?
rc6=0; wait $second || rc6=$?
say "kubectl drain node-5 exit $rc5, node-6 exit $rc6 (one of them is refused by the budget until the other node's companion is back)"
grep -h 'Cannot evict\|drained' "$logs"/drain-node-*.log | sort -u | sed 's/^/   /' || true
run "$kubectl" -n storage get nodecompanion storage-guard -o jsonpath='{range .status.drained[*]}drained and holding the budget: {.node} since {.since}{"\n"}{end}'

step "8. A loop draining every node at once: holdfast drain (then uncordon) started on every node at the same moment"
say "each drain takes the one slot in turn; the one-replica service's budget is named instead of hanging"
"$kubectl" delete nodecompanion -n storage storage-guard --wait=true >/dev/null
"$kubectl" uncordon node-5 node-6 >/dev/null
pids=()
for n in 1 2 3 4 5 6; do
	( "$holdfast" drain "node-$n" --ignore-daemonsets --timeout 60s >"$logs/holdfast-drain-node-$n.log" 2>&1 && "$kubectl" uncordon "node-$n" >/dev/null ) &
	pids+=($!)
done
for i in "${!pids[@]}"; do
	rc=0; wait "${pids[$i]}" || rc=$?
	log=$logs/holdfast-drain-node-$((i + 1)).log
	# A node left cordoned names what kept it; a drained one its summary.
	say "node-$((i + 1)) (exit $rc): $(grep -m 1 "^  node-$((i + 1)) " "$log" | sed 's/^ *//' || tail -n 1 "$log")"
done
run "$kubectl" -n prod get pods -o wide

step "9. The single-replica drain deadlock fixed: a DisruptionPolicy surges the one replica instead of blocking the drain"
say "the hand-written minAvailable 1 budget goes; one policy keeps a budget on every workload of prod"
run "$kubectl" -n prod delete pdb mysvc
run "$kubectl" apply -f hack/demo/policy.yaml
# status_says APP TEXT: the policy's status of APP's Deployment, "STATE: MESSAGE", holds
# TEXT. The operator writes a policy's status after its budgets and surge sets, and the
# message changes as a surge goes on.
status_says() {
	local status
	status=$("$kubectl" -n prod get disruptionpolicy defaults -o jsonpath="{range .status.workloads[?(@.name==\"$1\")]}{.state}: {.message}{end}") &&
		[[ $status == *"$2"* ]]
}
wait_for "the policy's budget of prod/mysvc" "$kubectl" -n prod get pdb holdfast-deploy-mysvc
wait_for "prod/mysvc surged for the drain in the policy's status" status_says mysvc "Surging: 1 extra pod beside the 1 replica for the drain of node node-1"
run "$kubectl" -n prod get disruptionpolicies
run "$kubectl" -n prod get disruptionpolicy defaults -o jsonpath='{range .status.workloads[*]}{.kind}/{.name}: {.state}, {.message}{"\n"}{end}'
say "node-1 is still cordoned with mysvc's only replica on it: the same drain again"
run "$holdfast" drain node-1 --ignore-daemonsets --timeout 60s
run "$kubectl" uncordon node-1
# surge_over: holdfast's surge set beside mysvc is gone and mysvc's one replica is Ready.
surge_over() {
	! "$kubectl" -n prod get replicaset holdfast-surge-mysvc >/dev/null 2>&1 &&
		[[ $("$kubectl" -n prod get deploy mysvc -o jsonpath='{.status.readyReplicas}') == 1 ]]
}
wait_for "holdfast's surge set beside prod/mysvc gone" surge_over
say "mysvc ran an extra pod from holdfast's surge set, Ready on another node before its replica went; the set is gone, and the Deployment was never written: generation $("$kubectl" -n prod get deploy mysvc -o jsonpath='{.metadata.generation}'), $("$kubectl" -n prod get deploy mysvc -o jsonpath='{.spec.replicas}') replica"

step "10. Replicas packed on one node, fixed: the operator spreads replicas piled onto one node"
say "node-2 to node-6 are lost again while api rolls out: its three replicas pile onto node-1"
run "$kubectl" cordon node-2 node-3 node-4 node-5 node-6
run "$kubectl" -n prod rollout restart deploy/api
wait_for "prod/api rolled out" "$kubectl" -n prod rollout status deploy/api --timeout=10s
run "$kubectl" uncordon node-2 node-3 node-4 node-5 node-6
run "$kubectl" -n prod get pods -l app=api -o wide
say "api opts in to rebalancing: one pod at a time, within its budget, 5 s apart"
run "$kubectl" -n prod annotate deploy api holdfast.dev/rebalance=true holdfast.dev/rebalance-cooldown=5s
wait_for "prod/api on three nodes" bash -c "[[ \$('$kubectl' -n prod get pods -l app=api -o jsonpath='{range .items[?(@.status.phase==\"Running\")]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u | wc -l) == 3 && \$('$kubectl' -n prod get deploy api -o jsonpath='{.status.readyReplicas}/{.status.replicas}') == 3/3 ]]"
run "$kubectl" -n prod get pods -l app=api -o wide
# The recorder sends an Event after the eviction it explains: the second may be on its way.
wait_for "the two moves' Events" bash -c "[[ \$('$kubectl' -n prod get events --field-selector reason=Rebalanced -o name | wc -l) -ge 2 ]]"
run "$kubectl" -n prod get events --field-selector reason=Rebalanced -o custom-columns=REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message

step "11. A crashed node costing minutes: a worker dies, and the policy adds replicas for what it ran"
node=$("$kubectl" -n prod get pods -l app=mysvc -o jsonpath='{.items[0].spec.nodeName}')
say "$node stops: its kubelet renews nothing any more (testbed crash); Kubernetes alone replaces its pods after about 6 minutes"
crashed=$SECONDS
run "$testbed" crash --dir "$dir" "$node"
# ready_elsewhere APP: one pod of APP Ready on a node other than the crashed one.
ready_elsewhere() {
	"$kubectl" -n prod get pods -l "app=$1" --field-selector "spec.nodeName!=$node" \
		-o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -q True
}
wait_for "prod/mysvc Ready on a live node" ready_elsewhere mysvc
say "mysvc Ready again on another node $((SECONDS - crashed)) s after the crash; the pod on $node is left alone"
wait_for "prod/mysvc Recovering in the policy's status" status_says mysvc "Recovering: 1 pod on lost node $node: 1 extra pod beside the 1 replica"
run "$kubectl" -n prod get disruptionpolicy defaults -o jsonpath='{range .status.workloads[?(@.state=="Recovering")]}{.kind}/{.name}: {.state}, {.message}{"\n"}{end}'
run "$testbed" restore --dir "$dir" "$node"
wait_for "holdfast's surge set beside prod/mysvc gone" surge_over
say "$node is back: mysvc is at its $("$kubectl" -n prod get deploy mysvc -o jsonpath='{.spec.replicas}') replica again, the extra pod gone"

step "Done"
kill "$timeline_pid"; wait "$timeline_pid" || true; timeline_pid=
say "report: $report (ready replicas of every workload through the demo)"
say "the testbed is in $dir; DEMO_KEEP=1 make demo leaves it running (then: make testbed-down TESTBED_DIR=$dir)"
