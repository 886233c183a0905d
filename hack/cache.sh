# cache.sh is sourced by the build scripts of the peers the e2e tests run (hack/karpenter,
# hack/cluster-autoscaler): each builds into a folder of a cache outside the repository,
# keyed so that a new version never reuses a stale build, and shared by parallel test
# binaries.

# cached NAME DIR MINUTES BUILD prints DIR after running `BUILD DIR` in it unless an
# earlier run completed it; MINUTES says how long a build takes, for the log. Parallel
# callers wait for one build instead of racing.
cached() {
	local name=$1 dir=$2 minutes=$3 build=$4
	mkdir -p "$dir"
	exec 9>"$dir/.lock"
	flock 9
	if [[ ! -e $dir/.complete ]]; then
		echo "$name: not cached; building into $dir (about $minutes minutes on 2 cores)" >&2
		local start=$SECONDS
		"$build" "$dir"
		touch "$dir/.complete"
		echo "$name: built in $((SECONDS - start))s" >&2
	fi
	echo "$dir"
}
