#!/usr/bin/env bash
# Regenerates every schema table (generated/v1_NN.rs) and fixtures file
# (tests/fixtures/v1_NN.json), one per Kubernetes minor that k8s-openapi supports.
#
# For each minor: a temporary copy of this module, its go.mod pinned to that minor's
# k8s.io/api, apimachinery, apiextensions-apiserver and client-go (nothing else required:
# `go mod tidy` resolves the rest from what those modules require), then `go run .`.
#
#   gen/generate.sh            # every minor
#   gen/generate.sh 1.36       # only the ones named
#
# Bump a minor's patch release here; add a minor here and in src/tables.rs (table!) when
# k8s-openapi adds one (see README.md).
set -euo pipefail

# Kubernetes minor, k8s.io module version, fuzzed objects per kind in the fixtures
VERSIONS=(
    "1.33 v0.33.13 2"
    "1.34 v0.34.13 2"
    "1.35 v0.35.4 2"
    "1.36 v0.36.6 2"
    "1.37 v0.37.2 2"
)

gen_dir=$(cd "$(dirname "$0")" && pwd)
crate_dir=$(dirname "$gen_dir")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for entry in "${VERSIONS[@]}"; do
    read -r minor version per_kind <<<"$entry"
    if [ $# -gt 0 ] && [[ " $* " != *" $minor "* ]]; then
        continue
    fi
    name="v1_${minor#1.}"
    dir="$work/$name"
    mkdir -p "$dir"
    cp "$gen_dir/main.go" "$gen_dir/go.sum" "$dir/"
    # the module line and the go directive of gen/go.mod; requires of this minor only
    sed -n -e '/^module /p' -e '/^go /p' "$gen_dir/go.mod" >"$dir/go.mod"
    (
        cd "$dir"
        go mod edit \
            -require="k8s.io/api@$version" \
            -require="k8s.io/apimachinery@$version" \
            -require="k8s.io/apiextensions-apiserver@$version" \
            -require="k8s.io/client-go@$version"
        go mod tidy
        echo "proto-gen: Kubernetes $minor (k8s.io/* $version), $per_kind per kind" >&2
        go run . \
            -out "$crate_dir/generated/$name.rs" \
            -fixtures "$crate_dir/tests/fixtures/$name.json" \
            -per-kind "$per_kind"
    )
done
