#!/bin/sh
# A node maintenance runbook's drain step, written for kubectl drain: leave the
# DaemonSets, evict what has local data or no controller too, give each pod 30 seconds,
# and move only the application's pods (tier=app); with kubectl's global flags, and
# checking kubectl's own lines, as runbooks grep them. KUBECTL names the command; the e2e
# test runs this file unchanged with kubectl and with holdfast.
set -eu
node=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"${KUBECTL:-kubectl}" -v=1 --warnings-as-errors --match-server-version drain "$node" --ignore-daemonsets --delete-emptydir-data --force \
	--grace-period=30 --timeout=5m --pod-selector=tier=app >"$out"
cat "$out"
grep -q "^node/$node cordoned\$" "$out"
grep -q "^evicting pod " "$out"
grep -q "^pod/.* evicted\$" "$out"
grep -q "^node/$node drained\$" "$out"
