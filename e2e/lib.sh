# Shared by e2e/*.sh. Sourced, not run.
# shellcheck shell=bash

E2E_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_BIN="$E2E_ROOT/bin"
# Where a harness instance keeps kubeconfig, state.json, its pid and log.
# Set E2E_DIR to run several instances side by side.
E2E_DIR="${E2E_DIR:-$E2E_ROOT/run}"
# The Kubernetes release linked into the harness (see harness/go.mod).
E2E_K8S_VERSION="v1.36.3"

log() { echo "e2e: $*" >&2; }

# build_cached NAME SRC_DIR [GO BUILD ARGS...]
# Builds SRC_DIR into $E2E_BIN/NAME unless a binary built from the same
# sources (*.go, go.mod, go.sum), Go version and flags is already there.
# Niced: other engineers compile on the same cores. Dependencies come from
# the Go module proxy (GOPROXY) only.
build_cached() {
    local name="$1" src="$2"
    shift 2
    local bin="$E2E_BIN/$name" stamp="$E2E_BIN/.$name.sources"
    local sum
    sum="$( (cd "$src" && cat ./*.go go.mod go.sum 2>/dev/null; go version; echo "$*") | sha256sum | cut -d' ' -f1)"
    if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then
        return 0
    fi
    mkdir -p "$E2E_BIN"
    log "building $name (cached in $bin; the first build of the harness takes minutes)"
    local t0=$SECONDS
    (cd "$src" && nice -n 10 go build -trimpath "$@" -o "$bin.tmp" .) || return 1
    mv "$bin.tmp" "$bin"
    echo "$sum" > "$stamp"
    log "built $name in $((SECONDS - t0))s"
}

build_harness() {
    local pkg=k8s.io/component-base/version
    local minor="${E2E_K8S_VERSION#v1.}"
    minor="${minor%%.*}"
    build_cached harness "$E2E_ROOT/harness" -ldflags \
        "-X $pkg.gitVersion=$E2E_K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}

build_diff() {
    build_cached diff "$E2E_ROOT/diff"
}
