#!/usr/bin/env bash
# archive.sh BINARY LICENSES OUT packs the holdfast binary BINARY with the README, the
# LICENSE, the NOTICE (hack/notice.sh) and LICENSES, the licence texts of the modules it
# links (hack/licenses.sh), as THIRD_PARTY_LICENSES, into the gzipped tarball OUT: one archive of a release
# (hack/release.sh), which the krew manifest unpacks by these names
# (hack/krew-manifest.sh). Names sorted, owners and times
# fixed, gzip without a timestamp: the same inputs give the same bytes, and so the same
# checksums. test/release checks it.
set -euo pipefail
bin=${1:?usage: archive.sh BINARY LICENSES OUT} licenses=${2:?usage: archive.sh BINARY LICENSES OUT} out=${3:?usage: archive.sh BINARY LICENSES OUT}
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$bin" "$stage/holdfast"
cp "$root/README.md" "$root/LICENSE" "$root/NOTICE" "$stage/"
cp "$licenses" "$stage/THIRD_PARTY_LICENSES"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - . | gzip -n -9 >"$out"
