#!/usr/bin/env bash
# softroce-check.sh HOSTPING [PERFTEST_RUNS]: runs INSIDE the Soft-RoCE guest (scripts/guest/run.sh)
# and exercises the real backends of hostping on rxe0: discovery, the loopback matrix with
# WRITE and READ and a streaming test, the error paths (registration refused, a hung probe,
# a work completion in error, a memlock limit), perftest on the same device for the
# comparison in BENCHMARKS.md, and last `hostping pair serve|probe` between two more rxe
# devices on a veth pair (pair-net.sh), healthy, with netem delay and with netem loss, then
# a real mesh (mesh-agents.sh) and the job verdict (job-agents.sh) over the same pair.
# Every output lands in $HOSTPING_GUEST_OUT/softroce/; the
# assertions are in crates/hostping/tests/softroce.rs, which reads them on the host.
#
# Each step records its exit status in <step>.status: a failing step does not stop the
# others, so one run shows everything that is wrong.
set -uo pipefail

hostping=${1:?usage: softroce-check.sh HOSTPING [PERFTEST_RUNS]}
perftest_runs=${2:-3}
out="${HOSTPING_GUEST_OUT:?run inside scripts/guest/run.sh}/softroce"
mkdir -p "$out"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=scripts/guest/step.sh
. "$here/step.sh"

# Few iterations: TCG makes a 128 KiB loopback cost milliseconds.
iters=200

step topology "$hostping" topology --format json
step topology-table "$hostping" topology
step check-write "$hostping" check --format json --iterations "$iters"
step check-table "$hostping" check --iterations "$iters"
step check-read "$hostping" check --format json --op read --iterations "$iters" \
    --stream-qps 2 --stream-depth 16 --stream-ms 300
step baseline "$hostping" baseline --runs 2 --iterations 100 -o "$out/baseline.json"
step check-baseline "$hostping" check --format json --iterations 100 --baseline "$out/baseline.json"

# Error paths: each provokes a real failure on the paths to one endpoint; the run must go
# on with the other endpoint.
step fault-reg-mr "$hostping" check --format json --iterations 50 --verbs-fault reg-mr:mem1
step fault-hang "$hostping" check --format json --iterations 50 --timeout-ms 1000 --verbs-fault hang:mem0
step fault-bad-rkey "$hostping" check --format json --iterations 50 --verbs-fault bad-rkey:mem1

# RLIMIT_MEMLOCK, the everyday cause of failed registrations: without CAP_IPC_LOCK, a
# 64 KiB limit refuses every 128 KiB region; a 1 MiB limit holds one path's regions but not
# the 3 runs x 2 paths of a series, so a series that passes proves memory is freed per path.
nocap() { setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock "$@"; }
step memlock-64k nocap sh -c "ulimit -l 64 && exec $hostping check --format json --iterations 20"
step memlock-1m nocap sh -c "ulimit -l 1024 && exec $hostping check --format json --iterations 20 --runs 3"

# Counter sources on a real rxe device after the probes above moved packets: rxe's
# hw_counters, ethtool on the virtio netdev (if rxe0 is RoCE over it), PCIe, IOMMU; and a
# short run of the agent on the real host (probes through rxe0, stores runs, then stops).
step counters "$hostping" counters --format json
step lint "$hostping" lint --format json
printf '[probe]\niterations = 100\n' >"$out/agent.toml"
# The database lives on the guest's tmpfs (SQLite's WAL needs shared memory, which 9p does
# not give); the agent checkpoints it when it stops, so the copy is the whole database.
step agent "$hostping" agent --config "$out/agent.toml" --db /tmp/hostping-agent.db \
    --listen 127.0.0.1:0 --run-for 20s
cp /tmp/hostping-agent.db "$out/agent.db"

# ISPASS'21's ODP micro-benchmarks: rxe of Linux 6.1 has no ODP, so this names what is
# missing and exits 2. Then a short IOTLB sweep (16 KiB .. 4 MiB working sets, 1 ms
# streams, 4 KiB and 2 MiB pages): the mechanics, not the drop.
step odp-bench-damming "$hostping" odp-bench damming
# 2 MiB huge pages for the sweep's 2m curve: 6 on each node (its largest point maps 8 MiB).
echo 12 >/proc/sys/vm/nr_hugepages
cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages >"$out/hugepages"
step check-iotlb "$hostping" check --format json --iterations 50 --reprobe-rounds 0 \
    --iotlb --iotlb-max-mib 4

# perftest and hostping's comparable figures on the same device in the same boot.
# No re-probes: these runs time one probe per path against perftest, and under emulation
# eleven 1000-iteration probes per path would take minutes.
step hostping-bench "$hostping" check --format json --runs "$perftest_runs" --iterations 1000 \
    --reprobe-rounds 0 --stream-qps 1 --stream-depth 128 --stream-ms 1000
step hostping-bench-read "$hostping" check --format json --runs "$perftest_runs" --op read \
    --iterations 1000 --reprobe-rounds 0
if [ -x "$here/perftest.sh" ]; then
    step perftest "$here/perftest.sh" "$perftest_runs"
    # The loopback READ beside ib_read_lat, run by run in turn: the pass mark.
    step read-pass-mark "$here/read-pass-mark.sh" "$hostping"
fi
dmesg | tail -20 >"$out/dmesg.txt" 2>/dev/null
for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
    echo "$(basename "$f") $(cat "$f")"
done >"$out/hw_counters.txt" 2>/dev/null

# `hostping pair` as a user runs it, last (it adds two rxe devices): `pair serve` on rxe_b,
# `pair probe` from rxe_a over the veth pair of pair-net.sh, three rounds of a healthy probe,
# one with `tc netem delay 200us` on veth_a and one with `netem loss 2%` instead. The responder on
# vCPU 0 and the initiator on vCPU 1, as the rdma guest test pins perftest and its own
# probe (left to the scheduler, two busy-polling sides share one vCPU at times). The host
# parts are rxe's local loopback, which never reaches the veth: netem must not move them.

# What "starved" means on this machine: a probe whose latency is five times perftest's
# `ib_write_lat` of this boot (its 2 B t_typical), 100 us at least. The emulated guest's
# speed follows the host's: one day's machine measured ib_write_lat at 18.5 us, another's
# at 38 us, and its healthy pairs at 80-110 us, which a fixed 100 us called starved. A
# starved probe waits for host scheduler ticks: milliseconds. Exported for mesh-agents.sh
# and job-agents.sh.
write_lat=$(sed -n 's/.*"variant": "write_lat_2".*"t_typical_us": \([0-9.]*\).*/\1/p' \
    "$out/perftest.err" 2>/dev/null | head -1)
HOSTPING_STARVED_US=$(awk -v w="${write_lat:-0}" 'BEGIN { l = 5 * w; print (l > 100 ? int(l) : 100) }')
export HOSTPING_STARVED_US
echo "starved above $HOSTPING_STARVED_US us (ib_write_lat ${write_lat:-not measured} us)"

# pair_probe STEP LIMIT_US [ARGS..]: one probe from rxe_a to the responder (ARGS added to
# `pair probe`), run again while it came out starved (step.sh, `unstarved`).
pair_probe() {
    unstarved "$1" "$2" taskset -c 1 timeout 300 "$hostping" pair probe --device rxe_a \
        --peer "$pair_peer" --format json --bw-iterations 300 --depth 16 "${@:3}"
}
step pair-net bash "$here/pair-net.sh"
if [ "$(cat "$out/pair-net.status")" = 0 ]; then
    start_pair_serve pair-serve "$hostping"
    # The conditions take turns, round by round (healthy, delay, loss), so that what the
    # host's load does to the guest over minutes falls on all three alike; the first
    # healthy probe is the baseline the others are judged against.
    : >"$out/pair-netem.txt"
    for i in 1 2 3; do
        pair_probe "pair-base-$i" "$HOSTPING_STARVED_US"
        [ "$i" = 1 ] && cp "$out/pair-base-1.out" "$out/pair-baseline.json"
        judge=(--baseline "$out/pair-baseline.json")
        tc qdisc add dev veth_a root netem delay 200us
        pair_probe "pair-delay-$i" $((HOSTPING_STARVED_US + 500)) "${judge[@]}"
        tc qdisc change dev veth_a root netem loss 2%
        pair_probe "pair-loss-$i" "$HOSTPING_STARVED_US" "${judge[@]}"
        tc -s qdisc show dev veth_a >>"$out/pair-netem.txt" 2>&1
        tc qdisc del dev veth_a root
    done
    kill "$pair_serve"
    wait "$pair_serve" 2>/dev/null
fi
if [ "$(cat "$out/pair-net.status")" = 0 ]; then
    step mesh bash "$here/mesh-agents.sh" "$hostping"
    # The job verdict on the same pair as a two-node job (healthy, netem loss, a starved
    # host).
    step job bash "$here/job-agents.sh" "$hostping"
fi
exit 0
