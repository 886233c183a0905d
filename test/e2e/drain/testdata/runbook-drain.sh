#!/bin/sh
# A node maintenance runbook's drain step, written for kubectl drain: leave the
# DaemonSets, evict what has local data or no controller too, give each pod 30 seconds,
# and move only the application's pods (tier=app). KUBECTL names the command; the e2e
# test runs this file unchanged with kubectl and with holdfast.
set -eu
node=$1
"${KUBECTL:-kubectl}" drain "$node" --ignore-daemonsets --delete-emptydir-data --force \
	--grace-period=30 --timeout=5m --pod-selector=tier=app
