#!/usr/bin/env bash
# Gateway API on a test cluster, as its own project tests it: its CRDs (standard, then
# experimental channel), its CEL validation suite (`pkg/test/cel`, which runs against any cluster
# named by KUBECONFIG), every example it ships (`kubectl apply`, file by file) and every example
# it ships as invalid (`hack/invalid-examples`, each must be refused). The source comes from the Go
# module proxy (sigs.k8s.io/gateway-api, the version below), the suite is built with `go test -c`.
#
#   e2e/gateway-api.sh KUBECONFIG                 prints one line per suite test, example and
#                                                  invalid example: its result (and the server's
#                                                  answer for a refused example)
#   e2e/gateway-api.sh KUBECONFIG_A KUBECONFIG_B  runs it against both and diffs: exit 0 when the
#                                                  two servers gave the same results
#
# scripts/test.sh runs the second form with the real kube-apiserver (A) and the embedded server
# (B). The suite's own verdict is in the lines (PASS/FAIL); the comparison is what decides, so a
# test that fails on the real server too (the suite is written for its own envtest version) is
# not counted against the embedded one.
set -euo pipefail

GATEWAY_API_VERSION="v1.4.0"
work="$(mktemp -d "${TMPDIR:-/tmp}/gateway-api-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The module's source (read-only in the module cache) copied where `go test` may write.
fetch() {
    local dir
    dir="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
    cp -r "$dir" "$work/src"
    chmod -R u+w "$work/src"
    local channel
    for channel in standard experimental; do
        (cd "$work/src" && nice -n 10 go test -c -tags "$channel" -o "$work/cel-$channel.test" ./pkg/test/cel) >&2
    done
}

mask() {
    sed -E 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<uid>/g;
            s/foo-[0-9]{15,}/foo-<n>/g; s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z/<time>/g'
}

crds() { find "$work/src/config/crd/$1" -name 'gateway.networking*.yaml' | sort; }

# apply_each LABEL WORD DIR: applies each YAML file under DIR; one line per file, WORD when
# it was applied, the server's answer when it was refused.
apply_each() {
    local label="$1" word="$2" f out
    while IFS= read -r f; do
        if out="$(kubectl apply -f "$f" 2>&1)"; then
            echo "$label ${f#"$work/src/"}: $word"
        else
            echo "$label ${f#"$work/src/"}: refused: $(echo "$out" | mask | tr '\n' ' ')"
        fi
    done < <(find "$3" -name '*.yaml' | sort)
}

# run KUBECONFIG: the whole session against one server, one result per line.
run() {
    export KUBECONFIG="$1"
    local channel f
    for channel in standard experimental; do
        echo "## $channel channel"
        for f in $(crds "$channel"); do
            kubectl apply --server-side --force-conflicts -f "$f" > /dev/null
        done
        for f in $(crds "$channel"); do
            kubectl wait --for condition=Established --timeout 60s -f "$f" > /dev/null
        done
        # the suite: one line per test and subtest, its verdict
        (cd "$work/src/pkg/test/cel" && "$work/cel-$channel.test" -test.count=1 -test.v 2>&1 || true) |
            sed -nE 's/^ *--- (PASS|FAIL|SKIP): (.*) \([0-9.]+s\)$/\1 \2/p' | sort
        # every shipped example, file by file; every shipped invalid example must be refused
        # (the server's words are compared)
        apply_each example applied "$work/src/examples/$channel"
        apply_each invalid ACCEPTED "$work/src/hack/invalid-examples/$channel"
    done
    # the CRDs go (and with them every Gateway API object); the examples' namespaces stay, so
    # a second run against the same server does not meet them terminating
    for f in $(crds experimental); do
        kubectl delete --ignore-not-found --wait=false -f "$f" > /dev/null 2>&1 || true
    done
}

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 KUBECONFIG [KUBECONFIG_B]" >&2
    exit 2
fi
command -v kubectl > /dev/null || {
    echo "gateway-api: kubectl not on PATH" >&2
    exit 2
}
fetch
if [[ $# -eq 1 ]]; then
    run "$1"
    exit 0
fi
run "$1" > "$work/a.txt"
run "$2" > "$work/b.txt"
fails() { grep -c -E '^FAIL |: ACCEPTED$' "$1" || true; }
echo "gateway-api $GATEWAY_API_VERSION: $(grep -c -E '^(PASS|FAIL|SKIP) ' "$work/a.txt") suite results," \
    "$(grep -c '^example ' "$work/a.txt") examples, $(grep -c '^invalid ' "$work/a.txt") invalid examples;" \
    "failures: A $(fails "$work/a.txt"), B $(fails "$work/b.txt")"
if ! diff -u --label A --label B "$work/a.txt" "$work/b.txt"; then
    echo "gateway-api: the two servers gave different results (above)" >&2
    exit 1
fi
echo "gateway-api: same results on both servers"
