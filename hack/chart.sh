#!/usr/bin/env bash
# chart.sh DIST VERSION APP_VERSION lints the Helm chart strictly and packages it as
# DIST/holdfast-VERSION.tgz for the image APP_VERSION: the one packaging step of a
# release (hack/release.sh), which the e2e tests install from too, so that what they
# install is what a release publishes.
set -euo pipefail
dist=${1:?usage: chart.sh DIST VERSION APP_VERSION} version=${2:?usage: chart.sh DIST VERSION APP_VERSION} app_version=${3:?usage: chart.sh DIST VERSION APP_VERSION}
cd "$(dirname "$0")/.."
helm=(go tool -modfile=hack/tools/go.mod helm)
# Linted at the oldest Kubernetes the chart accepts (its kubeVersion): helm built with
# go tool assumes 1.20 otherwise.
kube_version=$(sed -n 's/^kubeVersion: ">=\(.*\)-0"$/\1/p' charts/holdfast/Chart.yaml)
"${helm[@]}" lint --strict --kube-version "${kube_version:?no kubeVersion in charts/holdfast/Chart.yaml}" charts/holdfast >&2
"${helm[@]}" package charts/holdfast --version "$version" --app-version "$app_version" --destination "$dist" >&2
echo "$dist/holdfast-$version.tgz"
