#!/usr/bin/env bash
# job-agents.sh HOSTPING: runs INSIDE the Soft-RoCE guest, after the mesh step of
# softroce-check.sh (rxe_a and rxe_b joined by the veth pair of pair-net.sh, no netem left):
# the job verdict (`hostping job --probe`) on a two-node "job", node01 on rxe_a and node02 on
# rxe_b, in three windows:
#   healthy   -> neither (exit 0);
#   loss      -> `tc netem loss` on veth_a: network (exit 1), node01's cable first;
#   host      -> node01's agent (its checks' loopbacks and the pair probes it starts) in a
#                cgroup v2 with a small cpu.max: host (exit 1), naming node01.
# Before them: a host baseline per node (`hostping baseline`, pinned to the vCPU its agent
# runs on), the agents judging their checks against it, and the pair's baseline recorded
# through the collector (`hostping mesh --record-baseline`) on the healthy pair. In each
# window both agents check their host once (POST /api/probe), then the verdict is asked for
# with its own pair probe. Outputs in $HOSTPING_GUEST_OUT/softroce/job-*; assertions in
# crates/hostping/tests/softroce.rs (`job_verdict_on_soft_roce`). The RNICs' hw_counters
# before and after each window are in job-<window>-counters.txt, the script's time in
# job-time.txt.
set -uo pipefail

hostping=${1:?usage: job-agents.sh HOSTPING}
out="${HOSTPING_GUEST_OUT:?run inside scripts/guest/run.sh}/softroce"
mkdir -p "$out"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/guest/step.sh
. "$here/step.sh"
# shellcheck source=scripts/guest/collector.sh
. "$here/collector.sh"
started=$(date +%s)

# The sizes, chosen so that the verdicts are stable under TCG: host checks and their
# baselines at 200 iterations, no re-probes within a run (at 50 iterations, with re-probes,
# healthy paths' bandwidths wandered 30-50 % from their baseline, and re-probes take
# seconds); each pair 200 pings and 300 WRITEs at depth 16, as its baseline was probed. The
# agents' Abnormal_th is 50 % (the collector judges the pair with it too): under TCG a
# healthy pair's median wanders by 10-20 % from probe to probe, a few us on its 18 us, and
# its network part, the small difference of its loopbacks, by as much; the faults move
# what they move by 60 % to 99 % (the test prints the figures).
# A pair's median above this measured a starved vCPU (softroce-check.sh sets it for this
# machine from its ib_write_lat; 100 us at least).
starved_us=${HOSTPING_STARVED_US:-100}
check_iterations=200
baseline_runs=3
abnormal_th=0.5
pair=(--duration 2 --rate-cross-leaf 100 --bw-iterations 300 --depth 16)
loss=2%
# node01's agent may run 1.5 ms in every 10 ms while starved (at 2 ms its checks' slowest
# path came out 64 % below its baseline, too near Abnormal_th; a starved check takes tens
# of seconds).
starve="1500 10000"

dir=/tmp/job
mkdir -p "$dir" && chmod 777 "$dir"
collector=http://127.0.0.1:9480
ops=job-ops-0123456789abcdef
printf 'node01 tok-node01-0123456789\nnode02 tok-node02-0123456789\n' >"$dir/tokens"
printf 'ops %s\n' "$ops" >"$dir/probe.tokens"
printf '%s\n' "$ops" >"$dir/ops.token"

# baseline NAME CPU: NAME's host baseline, pinned to the vCPU its agent runs on.
baseline() {
    step "job-baseline-$1" taskset -c "$2" "$hostping" baseline --runs "$baseline_runs" \
        --iterations "$check_iterations" -o "$dir/$1-baseline.json"
    cp "$dir/$1-baseline.json" "$out/job-$1-baseline.json"
}

# agent NAME DEVICE PORT CPU: NAME's agent (collector.sh's agent_config), its API on
# 127.0.0.1:PORT, pinned to vCPU CPU as mesh-agents.sh pins them.
agent() {
    agent_config "$1"
    taskset -c "$4" "$hostping" agent --config "$dir/$1.toml" --db "/tmp/job-$1.db" \
        --listen "127.0.0.1:$3" --name "$1" --devices "$2" --collector "$collector" \
        --token "tok-$1-0123456789" --probe-tokens "$dir/probe.tokens" \
        2>"$out/job-$1.err" &
}

# newest_run NODE: the collector's newest run of NODE, as text.
newest_run() { curl -s "$collector/api/hosts/$1/runs?limit=1"; }

# checked NODE PORT: asks NODE's agent for a check and waits (bounded) until the collector
# holds its run.
checked() {
    local before
    before=$(newest_run "$1")
    curl -s -X POST -H "Authorization: Bearer $ops" "http://127.0.0.1:$2/api/probe" >/dev/null
    # Twice a second: polling faster would take a share of the vCPUs the check measures.
    for _ in $(seq 240); do
        [ "$(newest_run "$1")" != "$before" ] && return 0
        sleep 0.5
    done
    echo "job: no new run of $1 reached the collector" >&2
}

counters() {
    for dev in rxe_a rxe_b; do
        for f in /sys/class/infiniband/$dev/ports/1/hw_counters/*; do
            echo "$dev $(basename "$f") $(cat "$f")"
        done
    done
}

# run NODE PORT: NODE's newest run, its whole report, from its agent.
run() {
    local id
    id=$(curl -s "http://127.0.0.1:$2/api/runs?limit=1" | sed -n 's/^\[{"id":\([0-9]*\),.*/\1/p')
    curl -s "http://127.0.0.1:$2/api/runs/$id"
}

# latency FILE: the first pair's median latency in a mesh's or a verdict's JSON, us.
latency() { sed -n 's/^ *"latency_us": \([0-9.]*\),$/\1/p' "$1" | head -1; }

# lost NAME: the packets rxe_a and rxe_b counted lost over window NAME (sequence-error NAKs
# and out-of-sequence requests, between its counter files; not duplicate requests, which the
# loopbacks of starved vCPUs count by thousands with nothing lost).
lost() {
    awk '$2 ~ /^(rcvd_seq_err|out_of_seq_request)$/ {
             if (FILENAME ~ /before/) n -= $3; else n += $3 }
         END { print n + 0 }' "$out/job-$1-counters-before.txt" "$out/job-$1-counters-after.txt"
}

# starved NAME HOW: whether window NAME's pair measured a starved vCPU rather than the
# pair: its median above $starved_us (the host, 2 cores shared, took a vCPU from QEMU and the
# rounds waited for it, in multiples of the guest's 4 ms tick; softroce-check.sh's
# pair_probe retries the same), or, with HOW `tail`, its p99 judged abnormal while neither
# RNIC counted a packet lost (a round that waited so, not a lossy cable).
starved() {
    local lat
    lat=$(latency "$out/job-$1.out")
    awk -v l="${lat:-inf}" -v m="$starved_us" 'BEGIN { exit !(l >= m) }' && return 0
    [ "$2" = tail ] && grep -q 'p99 half round trip' "$out/job-$1.out" && [ "$(lost "$1")" = 0 ]
}

# unfelt NAME: what window NAME measured other than the fault it is for, or nothing: its
# pair a starved vCPU (`starved` with `median`), or node01's own check healthy although its
# agent was starved. A check's figures are medians, and the cgroup's throttling can fall
# between its timed rounds: a fresh-clone run of 2026-12-01 took 17.6 s for node01's check
# (3 s unstarved) and read every path within its baseline, and the pair's tail and
# bandwidth, starved on node01's side with nothing lost, were then blamed on the cables. The
# window is for a host whose own check sees it starved.
unfelt() {
    if starved "$1" median; then
        echo "the pair measured a starved vCPU ($(latency "$out/job-$1.out") us, $(lost "$1") lost)"
    elif grep -q '"healthy":true' "$out/job-$1-node01-run.json"; then
        echo "node01's own check read healthy although starved"
    fi
}

# window NAME [HOW]: both hosts checked inside the window, then the verdict with its pair
# probe. With HOW, a window that measured something other than its fault is run again,
# four attempts at most: with `median` or `tail`, one whose pair measured a starved vCPU
# (`starved`; nothing of the fault in these windows moves what it reads); with `felt`, that
# or a starved node01 that its own check did not see (`unfelt`).
window() {
    local since lat attempt why
    for attempt in 1 2 3 4; do
        since=$(date +%s)
        sleep 1 # a run started in the same second as `since` is outside (since, until]
        counters >"$out/job-$1-counters-before.txt"
        checked node01 9611
        checked node02 9612
        step "job-$1" "$hostping" job --nodes node01,node02 --collector "$collector" --probe \
            --token-file "$dir/ops.token" --since "$since" --format json
        counters >"$out/job-$1-counters-after.txt"
        run node01 9611 >"$out/job-$1-node01-run.json"
        run node02 9612 >"$out/job-$1-node02-run.json"
        case "${2:-}" in
        "") return 0 ;;
        felt) why=$(unfelt "$1") ;;
        *) why=$(starved "$1" "$2" && echo "the pair measured a starved vCPU ($(latency "$out/job-$1.out") us, $(lost "$1") lost)") ;;
        esac
        [ -n "$why" ] || return 0
        echo "job: $1 (attempt $attempt): $why: again"
    done
}

start_collector job "$dir" 5434 127.0.0.1:9480

baseline node01 1
baseline node02 0
agent node01 rxe_a 9611 1
node01=$!
agent node02 rxe_b 9612 0
node02=$!
# first_run NODE PID: waits (bounded) until NODE's first check (at start) reached the
# collector, or its agent stopped.
first_run() {
    for _ in $(seq 1200); do
        newest_run "$1" | grep -q '"id"' && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
}
first_run node01 "$node01"
first_run node02 "$node02"

# The pair's baseline, probed as the windows probe it: right after both hosts' checks. A
# probe whose median is above $starved_us measured a starved vCPU (`starved`), not the healthy
# pair: recorded again, four attempts at most.
for attempt in 1 2 3 4; do
    checked node01 9611
    checked node02 9612
    step job-record "$hostping" mesh --nodes node01,node02 --collector "$collector" \
        --token-file "$dir/ops.token" --record-baseline "${pair[@]}" --format json
    lat=$(latency "$out/job-record.out")
    awk -v l="${lat:-inf}" -v m="$starved_us" 'BEGIN { exit !(l < m) }' && break
    echo "job: the recorded pair (attempt $attempt) came out at ${lat:-no} us, a starved vCPU: again"
done

window healthy tail

tc qdisc add dev veth_a root netem loss "$loss"
window loss
tc -s qdisc show dev veth_a >"$out/job-loss-netem.txt" 2>&1
tc qdisc del dev veth_a root

mkdir -p /sys/fs/cgroup
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/starved
echo "$starve" >/sys/fs/cgroup/starved/cpu.max
echo "$node01" >/sys/fs/cgroup/starved/cgroup.procs
window host felt
echo "$node01" >/sys/fs/cgroup/cgroup.procs
cat /sys/fs/cgroup/starved/cpu.stat >"$out/job-host-cpu-stat.txt" 2>&1

kill "$node01" "$node02" "$collector_pid"
wait "$node01" "$node02" "$collector_pid" 2>/dev/null
stop_postgres "$dir"
echo "script $(($(date +%s) - started)) s" >"$out/job-time.txt"
exit 0
