#!/usr/bin/env bash
# operator-memory.sh measures the operator's resident memory on a testbed with NODES nodes
# and about PODS pods: a DaemonSet on every node, a NodeCompanion following it, and a
# Deployment filling up the rest; WORKLOADS more Deployments of no replicas, 50 to a
# namespace, each under a budget (made by hand in half the namespaces, by a
# DisruptionPolicy in the others). It prints VmRSS and VmHWM of the operator process and
# the Go heap from its metrics endpoint, a minute after its caches synced. HOLDFAST names
# the binaries to measure, each in turn against the same testbed (the first makes the
# companions); by default, the image's, cmd/holdfast-operator, built from this tree (any
# holdfast binary will do: each is run as BINARY operator). API_QPS is the testbed's
# --api-qps.
#
#   hack/operator-memory.sh            # 200 nodes, 5000 pods
#   NODES=50 PODS=1000 hack/operator-memory.sh
#   NODES=1000 PODS=3000 WORKLOADS=1500 API_QPS=500 HOLDFAST="/tmp/old/holdfast bin/holdfast" hack/operator-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${NODES:-200}
pods=${PODS:-5000}
workloads=${WORKLOADS:-0}
dir=${DIR:-$(mktemp -d /tmp/holdfast-memory.XXXXXX)}
rm -rf "$dir"
bin=$(mktemp -d)
CGO_ENABLED=0 go build -o "$bin/holdfast" ./cmd/holdfast-operator # static, as the image ships it
(cd hack/testbed && go build -o "$bin/testbed" .)

binaries=${HOLDFAST:-$bin/holdfast}

"$bin/testbed" up --src hack/testbed --dir "$dir" --nodes "$nodes" --zones 3 --api-qps "${API_QPS:-0}"
# kubectl of the testbed's release, so that nothing needs installing.
kubectl_bin=$("$bin/testbed" build --src hack/testbed)/kubectl
kubectl() { "$kubectl_bin" "$@"; }
operator_pid=
cleanup() {
	if [[ -n $operator_pid ]]; then kill "$operator_pid" 2>/dev/null || true; fi
	"$bin/testbed" down --dir "$dir" >/dev/null 2>&1 || true
	rm -rf "$bin"
}
trap cleanup EXIT
export KUBECONFIG=$dir/kubeconfig

kubectl apply --server-side -f config/crd/bases >/dev/null
until kubectl get nodecompanions -A >/dev/null 2>&1; do sleep 1; done
kubectl create namespace memory >/dev/null
cat <<EOF | kubectl apply -n memory -f - >/dev/null
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: storage}
spec:
  selector: {matchLabels: {app: storage}}
  template:
    metadata: {labels: {app: storage}}
    spec: {containers: [{name: agent, image: registry.example/storage-agent:1}]}
---
apiVersion: holdfast.dev/v1alpha1
kind: NodeCompanion
metadata: {name: volume-guard}
spec:
  daemonSet: {name: storage}
  template:
    metadata: {labels: {app: volume-guard}}
    spec: {containers: [{name: guard, image: registry.example/volume-guard:1}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: load}
spec:
  replicas: $((pods - 2 * nodes))
  selector: {matchLabels: {app: load}}
  template:
    metadata: {labels: {app: load}}
    spec: {containers: [{name: app, image: registry.example/app:1}]}
EOF

workloads_yaml() {
	local namespaces=$(((workloads + 49) / 50)) n d
	for ((n = 0; n < namespaces; n++)); do
		printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: w%d}\n' "$n"
		if ((n >= namespaces / 2)); then
			printf -- '---\napiVersion: holdfast.dev/v1alpha1\nkind: DisruptionPolicy\nmetadata: {name: all, namespace: w%d}\nspec: {selector: {}, maxUnavailable: 1}\n' "$n"
		fi
		for ((d = n * 50; d < workloads && d < (n + 1) * 50; d++)); do
			cat <<EOF
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-$d, namespace: w$n, labels: {app: app-$d}}
spec:
  replicas: 0
  selector: {matchLabels: {app: app-$d}}
  template:
    metadata: {labels: {app: app-$d}}
    spec: {containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: 100m, memory: 128Mi}}}]}
EOF
			if ((n < namespaces / 2)); then
				printf -- '---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: app-%d, namespace: w%d}\nspec: {maxUnavailable: 1, selector: {matchLabels: {app: app-%d}}}\n' "$d" "$n" "$d"
			fi
		done
		echo ---
	done
}
if ((workloads > 0)); then workloads_yaml | kubectl apply --server-side -f - >/dev/null; fi

measure() {
	"$1" operator --leader-elect=false --metrics-bind-address=127.0.0.1:18080 --metrics-secure=false \
		--health-probe-bind-address=127.0.0.1:18081 >"$dir/operator.log" 2>&1 &
	operator_pid=$!
	echo "$1: waiting for its caches, $pods pods Running and $nodes companions..."
	until curl -sf 127.0.0.1:18081/readyz >/dev/null; do sleep 1; done
	for _ in $(seq 1 120); do
		running=$(kubectl get pods -A --field-selector status.phase=Running --no-headers 2>/dev/null | wc -l)
		covered=$(kubectl get nodecompanion -n memory volume-guard -o jsonpath='{.status.nodesCovered}' 2>/dev/null || echo 0)
		echo "  $(date +%T) running pods $running, companions covering $covered nodes"
		if ((running >= pods && covered >= nodes)); then break; fi
		sleep 10
	done
	# Let a few resyncs and status writes happen at full size before reading.
	sleep 60
	echo "$1:"
	grep -E 'VmRSS|VmHWM' "/proc/$operator_pid/status"
	curl -s 127.0.0.1:18080/metrics | grep -E '^go_memstats_(heap_inuse|sys)_bytes'
	kill "$operator_pid"
	wait "$operator_pid" || true
	operator_pid=
}
for b in $binaries; do measure "$b"; done
kubectl get nodecompanions -n memory
