#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every unit, property, integration and
# scenario test of the workspace. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
    cargo clippy --workspace --all-targets --locked --quiet -- -D warnings
fi
cargo test --workspace --locked
