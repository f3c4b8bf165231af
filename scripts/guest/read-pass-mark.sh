#!/usr/bin/env bash
# read-pass-mark.sh HOSTPING: runs INSIDE the Soft-RoCE guest, from softroce-check.sh. The
# loopback engine's 1 B READ beside perftest's ib_read_lat on rxe0, run by run in turn, for
# the pass mark of issue 38 (the loopback READ within 10 % of ib_read_lat).
#
# The emulated guest's speed flips from one process to the next (one run of either tool
# takes 60 us a READ, the next 120 us), and those flips only ever add time. So each tool's
# fastest run is what is compared: after MIN_ROUNDS rounds, and while the two fastest runs
# are more than 10 % apart, more rounds follow, up to MAX_ROUNDS. A tool that truly takes
# longer stays apart however many rounds are added. Which tool goes first alternates.
#
# Writes $out/read-pass-mark.tsv: "round<TAB>hostping_us<TAB>ib_read_lat_us" per round, a
# figure "-" where that run failed (hostping's rnic0 -> mem0 latency_us; perftest's
# t_typical[usec], its whole round trip from post to polled completion, as hostping's).
set -uo pipefail

hostping=${1:?usage: read-pass-mark.sh HOSTPING}
out="${HOSTPING_GUEST_OUT:?run inside scripts/guest/run.sh}/softroce"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MIN_ROUNDS=8
MAX_ROUNDS=24
LIMIT=1.10
tsv=$out/read-pass-mark.tsv
: >"$tsv"

hostping_read() {
    "$hostping" check --format json --runs 1 --op read --iterations 1000 --reprobe-rounds 0 \
        2>>"$out/read-pass-mark.err" |
        sed -n 's/.*"rnic":"rnic0","endpoint":"mem0","latency_us":\([0-9.]*\).*/\1/p'
}

perftest_read() {
    local round=$1
    HOSTPING_PERFTEST_VARIANTS=read_lat_1 HOSTPING_GUEST_OUT="$out/read-pass-mark/$round" \
        "$here/perftest.sh" 1 2>>"$out/read-pass-mark.err" >/dev/null
    sed -n 's/.*"variant": "read_lat_1", "run": 1,.*"t_typical_us": \([0-9.]*\).*/\1/p' \
        "$out/read-pass-mark/$round/perftest/summary.json" 2>/dev/null
}

# Whether the fastest runs so far are more than LIMIT apart (or one tool has none).
apart() {
    awk -F'\t' -v limit="$LIMIT" '
        $2 != "-" && $2 != "" && (h == "" || $2 + 0 < h) { h = $2 + 0 }
        $3 != "-" && $3 != "" && (p == "" || $3 + 0 < p) { p = $3 + 0 }
        END { exit !(h == "" || p == "" || h / p > limit) }' "$tsv"
}

for ((round = 1; round <= MAX_ROUNDS; round++)); do
    if ((round % 2)); then
        h=$(hostping_read)
        p=$(perftest_read "$round")
    else
        p=$(perftest_read "$round")
        h=$(hostping_read)
    fi
    printf '%s\t%s\t%s\n' "$round" "${h:--}" "${p:--}" >>"$tsv"
    if ((round >= MIN_ROUNDS)) && ! apart; then
        break
    fi
done
echo "read pass mark: $round rounds" >&2
