# shellcheck shell=bash
# step.sh: sourced by the guest check scripts (softroce-check.sh, odp-check.sh,
# mesh-agents.sh).
#
# step NAME COMMAND...: runs COMMAND with stdout to $out/NAME.out, stderr to $out/NAME.err
# and its exit status to $out/NAME.status, and prints how long it took. A failing step does
# not stop the script, so one guest run shows everything that is wrong.
# shellcheck disable=SC2154 # $out is the sourcing script's output folder
step() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s.%N)
    "$@" >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
    echo "$rc" >"$out/$name.status"
    echo "step $name: exit $rc ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
}

# unstarved NAME LIMIT_US COMMAND...: `step NAME COMMAND...` for a probe between the two rxe
# devices, run again while a latency it printed (every "latency_us" number of its JSON: a
# pair probe's one, a mesh's per pair) is above LIMIT_US, or none was printed; four
# attempts at most, the last one kept. Such a latency measured the host's scheduler, not
# the cable: when the host (2 cores shared with other work) takes a vCPU from QEMU, a
# busy-polling side waits for its tick (crates/rdma/tests/guest.rs, `unstarved`, has the
# figures).
unstarved() {
    local name=$1 limit=$2 attempt worst
    shift 2
    for attempt in 1 2 3 4; do
        step "$name" "$@"
        worst=$(grep -o '"latency_us": [0-9.]*' "$out/$name.out" | awk '
            { v = $2 + 0; if (n++ == 0 || v > m) m = v }
            END { if (n) print m }')
        awk -v l="${worst:-inf}" -v m="$limit" 'BEGIN { exit !(l < m) }' && return
        echo "$name (attempt $attempt): latency ${worst:-missing} us, a starved vCPU: again"
    done
}

# start_pair_serve NAME HOSTPING: starts `pair serve` on rxe_b (vCPU 0, port 0: the kernel
# picks one) in the background with its output in $out/NAME.out and .err, waits up to 30 s
# for the line that names its address, and sets pair_serve (its pid) and pair_peer
# (HOST:PORT, empty when it never listened: the probes then fail and say why).
start_pair_serve() {
    local name=$1 hostping=$2
    taskset -c 0 "$hostping" pair serve --device rxe_b --listen 192.168.77.2 --port 0 \
        >"$out/$name.out" 2>"$out/$name.err" &
    pair_serve=$!
    for _ in $(seq 300); do
        grep -q ' listening on ' "$out/$name.out" 2>/dev/null && break
        sleep 0.1
    done
    pair_peer=$(sed -n 's/.* listening on //p' "$out/$name.out")
}
