#!/usr/bin/env bash
# notice.sh writes NOTICE: holdfast's own notice, then the NOTICE files of the modules
# linked into the holdfast binary of any released platform, which their Apache License
# 2.0 asks every redistribution to carry. hack/generate.sh runs it, so that `make verify`
# fails when a dependency's notice is missing; the archives and the image ship NOTICE.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=$(for os in linux darwin; do
	GOOS=$os go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}' ./cmd/holdfast
done | sort -u)
{
	echo "holdfast"
	echo "Copyright The holdfast Authors. Licensed under the Apache License, Version 2.0 (LICENSE)."
	echo
	echo "The holdfast binary and image include the following modules, whose NOTICE files follow."
	while read -r path dir; do
		for notice in "$dir"/NOTICE "$dir"/NOTICE.txt "$dir"/NOTICE.md; do
			[[ -f $notice ]] || continue
			printf '\n==== %s (%s) ====\n\n' "$path" "${notice##*/}"
			cat "$notice"
		done
	done <<<"$modules"
} >NOTICE
