#!/usr/bin/env bash
# Runs every check the project has: formatting, clippy, and all tests.
# This is the README's test command and exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

echo "==> cargo test (unit, integration, property, doc tests, examples compiled)"
PROPTEST_CASES="${PROPTEST_CASES:-1000}" cargo test --workspace --all-targets
cargo test --workspace --doc
