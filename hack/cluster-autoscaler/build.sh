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
mkdir -p "$dir"
# Parallel test binaries share one build instead of racing.
exec 9>"$dir/.lock"
flock 9
if [[ ! -e $dir/.complete ]]; then
	echo "cluster-autoscaler: $version is not cached; building into $dir (about 10 minutes on 2 cores)" >&2
	start=$SECONDS
	rm -rf "$dir/src"
	mkdir -p "$dir/src"
	tar -xzf "$archive" -C "$dir/src"
	# Its dependencies come from the Go module proxy; the module itself is the archive.
	(cd "$dir/src/cluster-autoscaler" && GOFLAGS=-mod=mod go build -tags kwok -ldflags "-s -w" -o "$dir/cluster-autoscaler" .)
	rm -rf "$dir/src"
	touch "$dir/.complete"
	echo "cluster-autoscaler: built in $((SECONDS - start))s" >&2
fi
echo "$dir"
