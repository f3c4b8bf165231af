#!/usr/bin/env bash
# bench-sweep.sh: one full sweep of every switch port of a simulated fabric, by hostping and
# by the tools operators use, timed in the same run (issue 13, part 5). Run it inside
# scripts/ibsim/run.sh, which brings the fabric up:
#
#   scripts/ibsim/fat-tree-net.sh > /tmp/clos.net
#   scripts/ibsim/run.sh --net /tmp/clos.net -- scripts/ibsim/bench-sweep.sh target/release/hostping [RUNS]
#
# Contenders, each reading every switch port's counters once:
#   hostping    `hostping fabric sample --once --topology T` (T written by `fabric discover`
#               beforehand, as a running sampler keeps it): all MADs in flight at once;
#   perfquery   `perfquery -x -l LID 1-36` per switch, one switch at a time (infiniband_exporter
#               with max-concurrent 1) and 8 at a time (max-concurrent 8);
#   ibqueryerrors  rediscovers the fabric and queries every port (the other exporter).
# Prints, per contender, the ports read and the wall time of each run (min and median, ms).
set -euo pipefail
hostping=${1:?usage: bench-sweep.sh HOSTPING [RUNS]}
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$hostping" fabric discover --format ibnetdiscover >"$work/fabric.topo"
awk '/^Switch/ { for (i = 1; i <= NF; i++) if ($i == "lid") print $(i + 1) }' "$work/fabric.topo" >"$work/lids"
switches=$(wc -l <"$work/lids")
ports=$("$hostping" fabric sample --once --format json --topology "$work/fabric.topo" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["ports"]))')
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
# time_runs NAME COMMAND...: runs COMMAND $runs times, prints min and median wall ms.
time_runs() {
    local name=$1 t0 t1 times=()
    shift
    for ((r = 0; r < runs; r++)); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        times+=("$(ms "$t0" "$t1")")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v n="$name" -v r="$runs" '
        { v[NR] = $1 } END { printf "%-28s min %8.1f ms  median %8.1f ms  (%d runs)\n", n, v[1], v[int((NR + 1) / 2)], r }'
}
per_switch() { # per_switch PARALLEL
    xargs -P "$1" -I{} perfquery -x -l {} 1-36 <"$work/lids"
}
echo "fabric: $switches switches, $ports linked switch ports (every contender reads each once)"
time_runs "hostping fabric sample" "$hostping" fabric sample --once --topology "$work/fabric.topo"
time_runs "perfquery per switch, 1" per_switch 1
time_runs "perfquery per switch, 8" per_switch 8
time_runs "ibqueryerrors" ibqueryerrors
