#!/usr/bin/env bash
# licenses.sh OUT writes OUT: the licence texts of the modules linked into the holdfast
# binary of any released platform, which their MIT, BSD and ISC licences ask every copy
# of the binary to carry (Apache-2.0 modules' NOTICE files are in NOTICE,
# hack/notice.sh). `make licenses` runs it; the image and the release archives ship OUT.
# A module without a licence file fails it, naming the module.
set -euo pipefail
out=${1:?usage: licenses.sh OUT}
cd "$(dirname "$0")/.."
modules=$(for os in linux darwin; do
	GOOS=$os go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/holdfast
done | sort -u)
mkdir -p "$(dirname "$out")"
{
	echo "Licences of the modules the holdfast binary and image include."
	while read -r path version dir; do
		found=
		for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/License*; do
			[[ -f $f ]] || continue
			found=1
			printf '\n==== %s %s (%s) ====\n\n' "$path" "$version" "${f##*/}"
			cat "$f"
		done
		if [[ -z $found ]]; then
			echo "licenses.sh: $path $version ($dir) has no licence file" >&2
			exit 1
		fi
	done <<<"$modules"
} >"$out.tmp"
mv "$out.tmp" "$out"
