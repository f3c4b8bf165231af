#!/usr/bin/env bash
# odp-check.sh HOSTPING: runs INSIDE the guest booted with `scripts/guest/run.sh --kernel odp`
# (rxe with ODP READ over RC) and runs ISPASS'21's two ODP micro-benchmarks for real on rxe0,
# one short sweep each: damming at two intervals, flood over 1 and 2 QPs. Every output lands
# in $HOSTPING_GUEST_OUT/odp/; the assertions are in crates/hostping/tests/odp_guest.rs, which
# reads them on the host.
#
# Each step records its exit status in <step>.status: a failing step does not stop the
# others, so one run shows everything that is wrong.
set -uo pipefail

hostping=${1:?usage: odp-check.sh HOSTPING}
out="${HOSTPING_GUEST_OUT:?run inside scripts/guest/run.sh}/odp"
mkdir -p "$out"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/guest/step.sh
. "$here/step.sh"

uname -r >"$out/kernel"
step damming "$hostping" odp-bench damming --intervals 500,2000 --format json
step flood "$hostping" odp-bench flood --qps 2 --format json
step damming-table "$hostping" odp-bench damming --intervals 1000
exit 0
