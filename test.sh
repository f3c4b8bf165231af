#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every unit, property, integration and
# scenario test of the workspace, and the Soft-RoCE (rdma_rxe) QEMU guest test of the real
# backends. Installs what it needs first (Debian packages, a Rust toolchain, a guest kernel).
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
    cargo clippy --workspace --all-targets --locked --quiet -- -D warnings
fi
# The Soft-RoCE guest's packages and kernel (cached), and libibverbs-dev for the test that
# checks the hand-written verbs ABI against the real header.
scripts/guest/setup.sh
# A real Prometheus server (Debian's package) scrapes the agent in
# crates/hostping/tests/prometheus.rs (the test starts its own server on a free port).
if ! command -v prometheus >/dev/null 2>&1; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "test: installing prometheus (Debian package)" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
        || { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
fi
export HOSTPING_REQUIRE_VERBS_HEADERS=1 HOSTPING_REQUIRE_PROMETHEUS=1
cargo test --workspace --locked
# The real backends on a real verbs device: rdma_rxe in a QEMU guest (scripts/guest/).
cargo test -p hostping --test softroce --locked -- --ignored --nocapture
