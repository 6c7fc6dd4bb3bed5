#!/usr/bin/env bash
# Differential checks between API servers (see e2e/README.md).
#
#   e2e/diff.sh real
#       Starts two real harness instances (watch cache on and off), records
#       the scenarios against each (twice against the first, to prove the
#       normalization: identical runs must compare equal), saves the
#       observations under e2e/diff/observations/ and compares.
#   e2e/diff.sh embedded KUBECONFIG [COMPACT_URL]
#       Records the scenarios once against another server (the embedded
#       kinformer API server) and compares that recording with both saved real
#       observations: real-nowatchcache.json with diff/allow-embedded.json,
#       then real-watchcache.json with diff/allow-embedded-watchcache.json
#       (E2E_DIFF_REF=nowatchcache or watchcache: only that one). Fails if
#       either comparison has unexplained differences. COMPACT_URL defaults to
#       /__kinformer/faults/compact on that server.
#   e2e/diff.sh live KUBECONFIG [COMPACT_URL]
#       Like embedded, but against a freshly started real harness (watch cache
#       off) instead of the saved file.
#
# Exit status: 0 when every difference is explained by the allow-list.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

obs="$E2E_ROOT/diff/observations"
mkdir -p "$obs"
build_diff
diff_bin="$E2E_BIN/diff"

# start_instance DIR WATCH_CACHE: prints the compact URL.
start_instance() {
    E2E_DIR="$1" E2E_WATCH_CACHE="$2" "$E2E_ROOT/start.sh" > /dev/null
    grep -o '"compactURL": *"[^"]*"' "$1/state.json" | cut -d'"' -f4
}

case "${1:-}" in
real)
    on="$E2E_ROOT/run-diff-cache"
    off="$E2E_ROOT/run-diff-nocache"
    trap 'E2E_DIR="$on" "$E2E_ROOT/stop.sh"; E2E_DIR="$off" "$E2E_ROOT/stop.sh"' EXIT
    on_url="$(start_instance "$on" true)"
    off_url="$(start_instance "$off" false)"
    "$diff_bin" record -kubeconfig "$off/kubeconfig" -compact-url "$off_url" \
        -label "real $E2E_K8S_VERSION, watch cache off" -out "$obs/real-nowatchcache.json"
    "$diff_bin" record -kubeconfig "$off/kubeconfig" -compact-url "$off_url" \
        -label "real $E2E_K8S_VERSION, watch cache off, second run" -out "$E2E_BIN/real-nowatchcache-2.json"
    "$diff_bin" record -kubeconfig "$on/kubeconfig" -compact-url "$on_url" \
        -label "real $E2E_K8S_VERSION, watch cache on" -out "$obs/real-watchcache.json"
    status=0
    log "same server, two runs (must be identical):"
    "$diff_bin" compare -a "$obs/real-nowatchcache.json" -b "$E2E_BIN/real-nowatchcache-2.json" || status=1
    log "watch cache off vs on (differences documented in diff/allow-watchcache.json):"
    "$diff_bin" compare -a "$obs/real-nowatchcache.json" -b "$obs/real-watchcache.json" \
        -allow "$E2E_ROOT/diff/allow-watchcache.json" || status=1
    exit $status
    ;;
embedded)
    kc="${2:?usage: e2e/diff.sh embedded KUBECONFIG [COMPACT_URL]}"
    url="${3:-/__kinformer/faults/compact}"
    t0=$SECONDS
    "$diff_bin" record -kubeconfig "$kc" -compact-url "$url" -label "embedded" -out "$E2E_BIN/embedded.json"
    log "recorded in $((SECONDS - t0))s"
    status=0
    for ref in ${E2E_DIFF_REF:-nowatchcache watchcache}; do
        case "$ref" in
        nowatchcache) allow="$E2E_ROOT/diff/allow-embedded.json" ;;
        watchcache) allow="$E2E_ROOT/diff/allow-embedded-watchcache.json" ;;
        *) log "E2E_DIFF_REF: nowatchcache or watchcache, not $ref"; exit 2 ;;
        esac
        log "embedded vs real-$ref.json (allow-list $(basename "$allow")):"
        "$diff_bin" compare -a "$obs/real-$ref.json" -b "$E2E_BIN/embedded.json" \
            -allow "$allow" -json "$E2E_BIN/embedded-diffs-$ref.json" || status=$?
    done
    exit $status
    ;;
live)
    kc="${2:?usage: e2e/diff.sh live KUBECONFIG [COMPACT_URL]}"
    url="${3:-/__kinformer/faults/compact}"
    off="$E2E_ROOT/run-diff-nocache"
    trap 'E2E_DIR="$off" "$E2E_ROOT/stop.sh"' EXIT
    off_url="$(start_instance "$off" false)"
    "$diff_bin" run -a-kubeconfig "$off/kubeconfig" -a-compact-url "$off_url" -a-label "real $E2E_K8S_VERSION" \
        -b-kubeconfig "$kc" -b-compact-url "$url" -b-label "other" \
        -allow "$E2E_ROOT/diff/allow-embedded.json" -json "$E2E_BIN/live-diffs.json"
    ;;
*)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
