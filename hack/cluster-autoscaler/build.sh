#!/usr/bin/env bash
# build.sh builds cluster-autoscaler's kwok cloud provider from the source vendored beside
# it into a cache outside the repository (or finds it there) and prints the cache folder,
# which holds the binary `cluster-autoscaler`. The folder is keyed by the source archive
# and the toolchain, so a new archive never reuses a stale build.
set -euo pipefail
cd "$(dirname "$0")"
archive=$(ls cluster-autoscaler-*-kwok-src.tar.gz)
version=${archive#cluster-autoscaler-}
version=${version%-kwok-src.tar.gz}
key=$(cat "$archive" <(echo "$(go env GOVERSION GOOS GOARCH)") | sha256sum | cut -c1-12)
dir="${HOLDFAST_CLUSTER_AUTOSCALER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/holdfast/cluster-autoscaler}/$version-$key"
# build DIR builds the binary into DIR from the archive; its dependencies come from the
# Go module proxy, the module itself is the archive.
build() {
	rm -rf "$1/src"
	mkdir -p "$1/src"
	tar -xzf "$archive" -C "$1/src"
	(cd "$1/src/cluster-autoscaler" && GOFLAGS=-mod=mod go build -tags kwok -ldflags "-s -w" -o "$1/cluster-autoscaler" .)
	rm -rf "$1/src"
}
source ../cache.sh
cached "cluster-autoscaler $version" "$dir" 5 build
