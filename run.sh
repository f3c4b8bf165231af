#!/usr/bin/env bash
# Builds hostping (installing what it needs) and runs it with the given arguments.
# With none: `check` of this host when it has an RDMA device (installing libibverbs and its
# providers from Debian if they are missing), else a check of the built-in dgx-a100 virtual
# host with a failed GPU PCIe link.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
cargo build --release --locked --quiet -p hostping
if [ $# -eq 0 ]; then
    if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
        if ! ldconfig -p | grep -q 'libibverbs\.so\.1 '; then
            echo "run: installing libibverbs1 and ibverbs-providers (Debian packages)" >&2
            sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
            $sudo apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libibverbs1 ibverbs-providers >/dev/null
        fi
        set -- check
    else
        echo "run: no RDMA device here; checking the simulated dgx-a100 host instead" >&2
        set -- check --sim dgx-a100 --inject degrade:gpu4--lsw4:0.5
    fi
fi
exec target/release/hostping "$@"
