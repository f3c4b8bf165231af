#!/usr/bin/env bash
# check-sweep.sh HOSTPING: the test of the Slurm sweep (run by ./test.sh). Starts a one-node
# Slurm (one-node.sh), submits two small sweeps with submit.sh, waits for their merge jobs,
# checks the job states and the merged tables, and stops the daemons.
#   1. a matrix of 3 mappings x 2 seeds of a 128-node stencil on the radix-8 tree: every
#      task and the merge complete, and merged.csv has one sane row per run, in order;
#   2. a runs file with one good run and one that fails (a tiling the tree cannot hold):
#      the merge still runs (afterany), keeps the good row, names the failed run and exits 2.
# Needs root and Debian's slurm-wlm and munge (./test.sh installs them). About 10 s.
# On failure it prints the jobs, the job logs and the daemons' logs, and keeps its folder.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hostping=${1:?usage: check-sweep.sh HOSTPING}
timeout_s=${HOSTPING_SLURM_TIMEOUT:-60}
start=$EPOCHREALTIME
say() { echo "slurm-check: $*" >&2; }
elapsed() { awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hostping-slurm.XXXXXX")
chmod 755 "$work" # munged wants every folder above its socket searchable by all
cluster=$work/cluster
ok=""
cleanup() {
    "$here/one-node.sh" stop "$cluster" || true
    if [ -n "$ok" ]; then rm -rf "$work"; else say "kept $work for inspection"; fi
}
trap cleanup EXIT

# fail MESSAGE: the reason, then everything that explains it.
fail() {
    say "FAILED: $*"
    say "jobs:"
    scontrol -o show job 2>&1 | sed 's/^/    /' >&2 || true
    for f in "$work"/sweep-*/logs/*.log "$cluster"/log/*.log; do
        [ -f "$f" ] || continue
        say "== $f (last 30 lines)"
        tail -n 30 "$f" | sed 's/^/    /' >&2
    done
    exit 1
}

"$here/one-node.sh" start "$cluster" || fail "the one-node cluster did not start"
export SLURM_CONF=$cluster/slurm.conf
say "cluster up after $(elapsed) s"

# Jobs ask for little memory: the node's RealMemory is that of the machine.
small=(--hostping "$hostping" --sbatch --mem=256M --sbatch --time=00:05:00)
cd "$work"
read -r matrix_array matrix_merge < <("$here/submit.sh" --dir sweep-matrix "${small[@]}" \
    --mappings row-major,random,rcm --seeds 1,2 -- --topology radix8 --workload stencil:8x16) ||
    fail "submit.sh (matrix) failed"
cat >runs-partial.txt <<'RUNS'
good --topology radix8 --workload stencil:8x16 --mapping rcm --seed 3
broken --topology radix8 --workload stencil:8x16 --mapping tiling:4x4
RUNS
read -r partial_array partial_merge < <("$here/submit.sh" --dir sweep-partial "${small[@]}" \
    --runs runs-partial.txt) || fail "submit.sh (runs file) failed"

# job_field JOB FIELD: one field of `scontrol show job` (the first line: an array's first task).
job_field() { scontrol -o show job "$1" 2>/dev/null | head -n1 | sed -nE "s/.*[[:space:]]$2=([^[:space:]]*).*/\1/p"; }
# Wait for both merge jobs to end.
deadline=$((SECONDS + timeout_s))
for job in "$matrix_merge" "$partial_merge"; do
    while :; do
        state=$(job_field "$job" JobState)
        case "$state" in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;;
        esac
        [ "$SECONDS" -lt "$deadline" ] || fail "merge job $job still '${state:-unknown}' after $timeout_s s"
        sleep 0.2
    done
done
say "both sweeps ended after $(elapsed) s"

# -- 1. the matrix sweep -----------------------------------------------------------------------
[ "$(job_field "$matrix_merge" JobState)" = COMPLETED ] || fail "matrix merge job $matrix_merge did not complete"
tasks=$(scontrol -o show job "$matrix_array" | sed -nE 's/.* JobState=([A-Z_]+).*/\1/p' | sort | uniq -c | xargs)
[ "$tasks" = "6 COMPLETED" ] || fail "matrix array $matrix_array: tasks are '$tasks', want 6 COMPLETED"
for ((t = 0; t < 6; t++)); do
    grep -q "^sim.sbatch: task $t on " "sweep-matrix/logs/${matrix_array}_$t.log" ||
        fail "no log of task $t of array $matrix_array"
done

csv=sweep-matrix/merged.csv
header='run,topology,workload,mapping,telemetry,seed,job,completion_us,avg_path,congested_hops,cause'
[ "$(head -n1 "$csv")" = "$header" ] || fail "$csv header is '$(head -n1 "$csv")'"
mapfile -t rows < <(tail -n +2 "$csv")
mapfile -t runs < <(awk '{ print $1 }' sweep-matrix/runs.txt)
if [ ${#rows[@]} -ne 6 ] || [ ${#runs[@]} -ne 6 ]; then
    fail "$csv has ${#rows[@]} rows for ${#runs[@]} runs, want 6"
fi
# A row: the run's folder name, its mapping and seed as submitted, a finished job
# (completion time in us, not ">END"), a mean path of 2 to 6 hops (same leaf to across
# pods of the 3-level tree), a congested-hop fraction in [0, 1], and a known cause.
row_re='^([^,]+),radix8,"stencil:8x16,[^"]*",([a-z-]+),reservoir,([0-9]+),stencil 8x16,([0-9]+\.[0-9]+),([0-9]\.[0-9]+),(0\.[0-9]+|1\.0+),(no_congestion|communication_pattern|mapping|background_traffic)$'
for i in "${!rows[@]}"; do
    row=${rows[$i]}
    [[ "$row" =~ $row_re ]] || fail "row $((i + 1)) of $csv is malformed: $row"
    name=${BASH_REMATCH[1]} mapping=${BASH_REMATCH[2]} seed=${BASH_REMATCH[3]}
    completion=${BASH_REMATCH[4]} hops=${BASH_REMATCH[5]}
    [ "$name" = "${runs[$i]}" ] || fail "row $((i + 1)) is run $name, want ${runs[$i]} (runs.txt order)"
    want=$(sed -n "$((i + 1))p" sweep-matrix/runs.txt)
    [[ " $want " == *" --mapping $mapping --seed $seed "* ]] ||
        fail "row $name has mapping $mapping seed $seed; runs.txt says: $want"
    awk -v c="$completion" -v h="$hops" 'BEGIN { exit !(c > 0 && h >= 2 && h <= 6) }' ||
        fail "row $name: completion $completion us or mean path $hops hops out of range"
done

# -- 2. a sweep with a failed task --------------------------------------------------------------
merge_end="$(job_field "$partial_merge" JobState) $(job_field "$partial_merge" ExitCode)"
[ "$merge_end" = "FAILED 2:0" ] || fail "partial merge job $partial_merge ended $merge_end, want FAILED 2:0"
states=$(scontrol -o show job "$partial_array" | sed -nE 's/.* ArrayTaskId=([0-9]+) .* JobState=([A-Z_]+) .* ExitCode=([0-9:]+).*/\1 \2 \3/p' | sort | xargs)
[ "$states" = "0 COMPLETED 0:0 1 FAILED 2:0" ] || fail "partial array $partial_array: tasks '$states', want 0 COMPLETED, 1 FAILED 2:0"
mapfile -t rows < <(tail -n +2 sweep-partial/merged.csv)
if [ ${#rows[@]} -ne 1 ] || [[ "${rows[0]}" != good,radix8,*,rcm,reservoir,3,* ]]; then
    fail "sweep-partial/merged.csv should hold the good run alone: ${rows[*]}"
fi
grep -q "^hostping: error: broken: cannot read" sweep-partial/logs/merge_"$partial_merge".log ||
    fail "the merge log does not name the failed run"

ok=1
say "passed in $(elapsed) s: 6-run matrix sweep merged in order; a failed task named by the merge"
