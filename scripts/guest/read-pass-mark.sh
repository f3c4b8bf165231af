#!/usr/bin/env bash
# read-pass-mark.sh HOSTPING: runs INSIDE the Soft-RoCE guest, from softroce-check.sh. The
# loopback engine's 1 B READ beside perftest's ib_read_lat on rxe0, run by run in turn, for
# the comparison of issue 38 (it asks for the loopback READ within 10 % of ib_read_lat);
# crates/hostping/tests/softroce.rs prints it and asserts a looser bound.
#
# The emulated guest's speed flips from one test to the next (one QP's READs take 62 us
# each, the next QP's 130 us, within one process too), and those flips only ever add time:
# the test compares each tool's fastest of the same number of tests, run in turn, the tool
# that goes first alternating. A round is one `hostping check` (two tests: mem0 and mem1,
# each its own QP) and two ib_read_lat runs.
#
# hostping's engine posts from the CPUs of rxe0's NUMA node (it pins each test there,
# crates/rdma/src/engine/affinity.rs); ib_read_lat runs as its users run it by default. Pinned
# with taskset as well it met, now and then, a state of its own twice as fast (one run of
# 25.9 us among 46.9-55 us), which the floors pass over but which would decide them if it came
# three times.
#
# Writes, per round R, $out/read-pass-mark/R/hostping.json (`hostping check --op read`'s
# report) and $out/read-pass-mark/R/perftest/summary.json (perftest.sh's, ib_read_lat alone,
# two runs).
set -uo pipefail

hostping=${1:?usage: read-pass-mark.sh HOSTPING}
out="${HOSTPING_GUEST_OUT:?run inside scripts/guest/run.sh}/softroce"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROUNDS=16

hostping_read() {
    # Its exit status is not looked at: a finding (1; this guest's like paths differ at
    # times) still measured, and a run that measured nothing has no figure in its report.
    "$hostping" check --format json --op read --iterations 1000 --reprobe-rounds 0 \
        >"$1/hostping.json" 2>>"$out/read-pass-mark.err"
}

perftest_read() {
    HOSTPING_PERFTEST_VARIANTS=read_lat_1 HOSTPING_GUEST_OUT="$1" \
        "$here/perftest.sh" 2 >/dev/null 2>>"$out/read-pass-mark.err"
}

for ((round = 1; round <= ROUNDS; round++)); do
    dir=$out/read-pass-mark/$round
    mkdir -p "$dir"
    if ((round % 2)); then
        hostping_read "$dir"
        perftest_read "$dir"
    else
        perftest_read "$dir"
        hostping_read "$dir"
    fi
done
# The test counts the rounds that gave each tool a figure.
exit 0
