#!/usr/bin/env bash
# Builds and runs scripts/app-check, an application outside the workspace that depends on
# kinformer, kinformer-apiserver and kinformer-proto through path dependencies and picks the
# Kubernetes version itself, on the oldest and the newest version k8s-openapi supports
# (features `earliest` and `latest`). No library crate of the workspace may enable a
# k8s-openapi version feature: if one did, one of these builds would fail with k8s-openapi's
# "Both v1_X and v1_Y features are enabled".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/scripts/app-check"
# the workspace's versions of every dependency
cp "$root/Cargo.lock" Cargo.lock
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
for version in earliest latest; do
    echo "==> application check: k8s-openapi/$version"
    cargo run -q --features "$version"
done
