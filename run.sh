#!/usr/bin/env bash
# Builds hostping (installing what it needs) and runs it with the given arguments.
# With none: a check of the built-in dgx-a100 virtual host with a failed GPU PCIe link.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
cargo build --release --locked --quiet -p hostping
[ $# -gt 0 ] || set -- check --sim dgx-a100 --inject degrade:gpu4--lsw4:0.5
exec target/release/hostping "$@"
