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
