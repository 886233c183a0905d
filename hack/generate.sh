#!/usr/bin/env bash
# generate.sh regenerates deepcopy functions, CRDs and RBAC from the markers in api/ and
# internal/. `make generate` runs it; `make verify` runs it and fails on any diff.
set -euo pipefail
cd "$(dirname "$0")/.."
controller_gen=(go tool -modfile=hack/tools/go.mod controller-gen)
"${controller_gen[@]}" object paths=./api/...
# generateEmbeddedObjectMeta keeps the labels and annotations of spec.template: without
# it the apiserver prunes them and companion pods lose their labels.
"${controller_gen[@]}" crd:generateEmbeddedObjectMeta=true rbac:roleName=holdfast-operator \
	paths=./... output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
