#!/usr/bin/env bash
# build.sh builds Karpenter's kwok provider, as pinned in this module, into a cache
# outside the repository (or finds it there) and prints the cache folder, which holds
# the binary `karpenter` and Karpenter's CRDs under crds/. The folder is keyed by
# go.mod (which pins every version; go.sum only checks them) and the toolchain, so a
# version bump never reuses a stale build.
set -euo pipefail
cd "$(dirname "$0")"
# Karpenter needs a newer Go than the machine may have; the go directive names it and
# the module proxy serves it.
export GOTOOLCHAIN="go$(awk '$1 == "go" {print $2}' go.mod)" GOFLAGS=-mod=mod
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/karpenter)
key=$(cat go.mod <(echo "$GOTOOLCHAIN $(go env GOOS GOARCH)") | sha256sum | cut -c1-12)
dir="${HOLDFAST_KARPENTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/holdfast/karpenter}/$version-$key"
# build DIR builds the binary into DIR, and copies Karpenter's CRDs under DIR/crds.
build() {
	go build -ldflags "-s -w" -o "$1/karpenter" sigs.k8s.io/karpenter/kwok
	local src
	src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)
	mkdir -p "$1/crds"
	cp "$src"/kwok/charts/crds/*.yaml "$src"/kwok/apis/crds/*.yaml "$1/crds/"
	chmod -R u+w "$1/crds"
}
source ../cache.sh
cached "karpenter $version" "$dir" 5 build
