#!/usr/bin/env bash
# Stop the harness started by e2e/start.sh (same E2E_DIR) and clean up:
# SIGTERM (graceful apiserver shutdown, etcd stop, temp data removed by the
# harness itself); after 60s SIGKILL and remove what it left behind.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

pidfile="$E2E_DIR/harness.pid"
state="$E2E_DIR/state.json"
if [[ ! -f "$pidfile" ]]; then
    log "nothing to stop in $E2E_DIR"
    exit 0
fi
pid="$(cat "$pidfile")"
datadir=""
if [[ -f "$state" ]]; then
    datadir="$(grep -o '"dataDir": *"[^"]*"' "$state" | cut -d'"' -f4)"
fi
if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 600); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "harness $pid still running after 60s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
fi
# Normally the harness removed its data dir itself; a killed one did not.
if [[ -n "$datadir" && "$datadir" == */kinformer-e2e-* && -d "$datadir" ]]; then
    rm -rf "$datadir"
fi
rm -f "$pidfile" "$state" "$E2E_DIR/kubeconfig" "$E2E_DIR/ca.crt" "$E2E_DIR/.state.tmp"
log "stopped (log kept: $E2E_DIR/harness.log)"
