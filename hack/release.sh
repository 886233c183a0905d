#!/usr/bin/env bash
# release.sh DIST builds everything a release publishes into DIST, and publishes nothing:
#   holdfast_VERSION_OS_ARCH.tar.gz      static binaries for linux and darwin, amd64 and arm64,
#                                        with the README, the LICENSE and the NOTICE
#   holdfast-image_VERSION.oci.tar       the multi-platform image index (linux/amd64, linux/arm64)
#                                        as an OCI layout archive, built without a Docker engine;
#                                        the release pushes it to the registry, where its digest
#                                        and signature identify it, and uploads no archive of it
#   holdfast-CHARTVERSION.tgz            the Helm chart (hack/chart.sh)
#   plugins/holdfast.yaml                the krew manifest, pointing at the archives by sha256
#   SHA256SUMS                           the checksums of the files a GitHub release uploads
# `make release` runs it with GIT_VERSION, COMMIT, BUILD_DATE, LDFLAGS, IMAGE_REPO and
# RELEASE (the VERSION file) exported. .github/workflows/release.yaml runs it on a tag,
# then pushes the image and the chart, signs them and uploads the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
: "${GIT_VERSION:?}" "${COMMIT:?}" "${BUILD_DATE:?}" "${LDFLAGS:?}" "${IMAGE_REPO:?}" "${RELEASE:?}"
platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
start=$SECONDS

# On a tag, the tag is the release: the chart and config/default must already say so.
if tag=$(git describe --tags --exact-match 2>/dev/null) && [[ $tag != "$RELEASE" ]]; then
	echo "release: HEAD is tagged $tag but VERSION says $RELEASE: run make bump VERSION=$tag first" >&2
	exit 1
fi
if [[ $GIT_VERSION == "$RELEASE" ]]; then
	chart_version=${RELEASE#v}
else
	# Between releases: a pre-release of the next chart, named after the commit.
	chart_version=${RELEASE#v}-dev.g${GIT_VERSION#v}
	echo "release: $GIT_VERSION is not the release $RELEASE: building chart $chart_version"
fi

rm -rf "$dist"
mkdir -p "$dist/plugins"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# Each archive holds the binary, the README, the LICENSE, the NOTICE and the licence
# texts of the modules linked, and the same commit gives the same bytes (hack/archive.sh).
hack/licenses.sh "$stage/THIRD_PARTY_LICENSES"
for p in "${platforms[@]}"; do
	os=${p%/*} arch=${p#*/}
	name=holdfast_${GIT_VERSION}_${os}_${arch}
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$LDFLAGS" -o "$stage/$name/holdfast" ./cmd/holdfast
	hack/archive.sh "$stage/$name/holdfast" "$stage/THIRD_PARTY_LICENSES" "$dist/$name.tar.gz"
	echo "release: $dist/$name.tar.gz"
done

# The image runs the operator alone: cmd/holdfast-operator, which links none of the rest
# of the CLI (docs/engineering/performance.md).
for arch in amd64 arm64; do
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "$LDFLAGS" -o "$stage/operator_linux_$arch/holdfast" ./cmd/holdfast-operator
done
image=$dist/holdfast-image_${GIT_VERSION}.oci.tar
(cd hack/image && go run . index --tag "$IMAGE_REPO:$GIT_VERSION" --version "$GIT_VERSION" --revision "$COMMIT" --created "$BUILD_DATE" \
	--license "$OLDPWD/LICENSE" --license "$OLDPWD/NOTICE" --license "$stage/THIRD_PARTY_LICENSES" \
	--binary "linux/amd64=$stage/operator_linux_amd64/holdfast" \
	--binary "linux/arm64=$stage/operator_linux_arm64/holdfast" \
	--out "$OLDPWD/$image")
(cd hack/image && go run . check --index "$OLDPWD/$image")

hack/chart.sh "$dist" "$chart_version" "$GIT_VERSION"

hack/krew-manifest.sh "$GIT_VERSION" "$dist" >"$dist/plugins/holdfast.yaml"

# By the names the GitHub release gives them, so that `sha256sum -c` works on a download.
(cd "$dist" && { sha256sum -- *.tar.gz *.tgz; (cd plugins && sha256sum -- holdfast.yaml); } >SHA256SUMS)
echo "release: $GIT_VERSION (chart $chart_version) in $dist in $((SECONDS - start)) s:"
(cd "$dist" && cat SHA256SUMS)
