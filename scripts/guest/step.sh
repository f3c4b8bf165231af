# shellcheck shell=bash
# step.sh: sourced by the guest check scripts (softroce-check.sh, odp-check.sh).
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
