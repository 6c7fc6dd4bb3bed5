#!/usr/bin/env bash
# Start a real kube-apiserver (+ embedded etcd) on 127.0.0.1 in the background.
#
#   KUBECONFIG="$(e2e/start.sh)"
#
# Prints the kubeconfig path on stdout (progress goes to stderr) once the
# server answers /readyz. Builds the harness on first use (cached in e2e/bin,
# rebuilt only when its sources or go.sum change).
#
# Environment:
#   E2E_DIR          instance directory (default e2e/run); one per instance
#   E2E_WATCH_CACHE  true (default, like real clusters) or false (lists,
#                    watches and continue tokens go straight to etcd: a
#                    compaction then forces 410s at once; see e2e/README.md)
#   E2E_WATCH_LIST   true (default) or false: kube-apiserver's WatchList
#                    feature gate (false: streaming lists are refused with
#                    422 Invalid, and clients must list)
#   E2E_KCM          true (default): also run kube-controller-manager (garbage
#                    collector, namespace and service-account controllers);
#                    false: a bare API server
#   E2E_START_TIMEOUT seconds to wait for readiness (default 180)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

watch_cache="${E2E_WATCH_CACHE:-true}"
watch_list="${E2E_WATCH_LIST:-true}"
kcm="${E2E_KCM:-true}"
timeout="${E2E_START_TIMEOUT:-180}"
mkdir -p "$E2E_DIR"
pidfile="$E2E_DIR/harness.pid"
state="$E2E_DIR/state.json"

if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null && [[ -f "$state" ]]; then
    log "already running (pid $(cat "$pidfile"))"
    echo "$E2E_DIR/kubeconfig"
    exit 0
fi

build_harness

rm -f "$state"
t0=$(date +%s.%N)
nohup "$E2E_BIN/harness" run -dir "$E2E_DIR" -watch-cache="$watch_cache" -watch-list="$watch_list" -kcm="$kcm" \
    > "$E2E_DIR/harness.log" 2>&1 < /dev/null &
pid=$!
echo "$pid" > "$pidfile"

deadline=$((SECONDS + timeout))
until [[ -f "$state" ]]; do
    if ! kill -0 "$pid" 2>/dev/null; then
        log "harness exited before it was ready; last lines of $E2E_DIR/harness.log:"
        tail -n 30 "$E2E_DIR/harness.log" >&2
        rm -f "$pidfile"
        exit 1
    fi
    if (( SECONDS > deadline )); then
        log "not ready after ${timeout}s; stopping it. Log: $E2E_DIR/harness.log"
        kill -TERM "$pid" 2>/dev/null || true
        exit 1
    fi
    sleep 0.1
done

# The harness writes state.json only after /readyz said ok; check once more
# the way a user would.
if command -v kubectl > /dev/null; then
    kubectl --kubeconfig "$E2E_DIR/kubeconfig" get --raw /readyz > /dev/null
fi
t1=$(date +%s.%N)
log "ready in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s: $(grep -o '"server": *"[^"]*"' "$state" | cut -d'"' -f4) (pid $pid, watch cache $watch_cache, watch list $watch_list, kube-controller-manager $kcm)"
echo "$E2E_DIR/kubeconfig"
