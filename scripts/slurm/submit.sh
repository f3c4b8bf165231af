#!/usr/bin/env bash
# submit.sh: submits a sweep of `hostping fabric sim` runs to Slurm as one job array (one run
# per task, one core each) and a merge job that starts when every task has ended and writes
# one table of all runs.
#
# Usage: scripts/slurm/submit.sh --dir DIR [options] [-- SIM_ARGS...]
#   --dir DIR          the sweep's folder (created; must not hold an earlier sweep): runs.txt,
#                      one folder per run, logs/, and merged.csv at the end. It must be on a
#                      file system that the compute nodes share.
#   --mappings LIST    comma-separated --mapping values (default: row-major)
#   --seeds LIST       comma-separated --seed values (default: 1)
#   --telemetry LIST   comma-separated --telemetry values (default: the simulator's)
#   --runs FILE        instead of the three lists: a file of runs, one a line, `NAME ARGS...`
#                      (the run's folder name, then its `fabric sim` arguments, split at
#                      white space; no quoting)
#   --hostping PATH    the binary the tasks run (default: `hostping` on PATH); compute nodes
#                      must see it at the same path
#   --sbatch OPTION    passed to both sbatch calls, repeatable (--sbatch --partition=short
#                      --sbatch --account=me --sbatch --time=02:00:00)
#   -- SIM_ARGS        arguments every run gets (--topology, --workload, ...)
# The runs are every mapping x seed x telemetry, with SIM_ARGS. Prints `ARRAY_JOB MERGE_JOB`
# (the two job ids) on stdout. The merge job depends on the array with afterany, so it runs
# even when some tasks fail and names them (exit 2); a task fails only on exit status 2 or
# worse of `fabric sim` (1 means congestion was diagnosed, a result).
#
# Example (24 runs: 6 mappings x 4 seeds):
#   scripts/slurm/submit.sh --dir sweep --mappings row-major,random,rcm,partition,incremental,tiling:8x4 \
#       --seeds 1,2,3,4 -- --topology tapered --workload stencil:64x72
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { echo "slurm-submit: $*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }

dir="" runs_file="" hostping="" mappings=row-major seeds=1 telemetry=""
sbatch_opts=()
while [ $# -gt 0 ]; do
    case "$1" in
    --dir) dir=${2:?--dir needs a folder}; shift 2 ;;
    --mappings) mappings=${2:?--mappings needs a list}; shift 2 ;;
    --seeds) seeds=${2:?--seeds needs a list}; shift 2 ;;
    --telemetry) telemetry=${2:?--telemetry needs a list}; shift 2 ;;
    --runs) runs_file=${2:?--runs needs a file}; shift 2 ;;
    --hostping) hostping=${2:?--hostping needs a path}; shift 2 ;;
    --sbatch) sbatch_opts+=("${2:?--sbatch needs an option}"); shift 2 ;;
    --) shift; break ;;
    -h | --help) usage 0 ;;
    *) say "unknown option $1"; usage ;;
    esac
done
sim_args=("$@")
[ -n "$dir" ] || { say "--dir is required"; usage; }
command -v sbatch >/dev/null 2>&1 || die "sbatch not found (is this a Slurm login node?)"

hostping=${hostping:-$(command -v hostping || true)}
[ -n "$hostping" ] || die "no hostping on PATH; give --hostping PATH"
[ -x "$hostping" ] || die "$hostping is not an executable file"
hostping=$(cd "$(dirname "$hostping")" && pwd -P)/$(basename "$hostping")

for a in "${sim_args[@]}"; do
    [[ "$a" != *[[:space:]]* ]] || die "argument '$a' has white space, which runs.txt cannot hold"
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
[ ! -e "$dir/runs.txt" ] || die "$dir already holds a sweep (runs.txt); pick another --dir"

# -- runs.txt: one line per array task ---------------------------------------------------
if [ -n "$runs_file" ]; then
    [ ${#sim_args[@]} -eq 0 ] || die "--runs FILE holds every run's arguments; give no SIM_ARGS"
    grep -vE '^[[:space:]]*$' "$runs_file" >"$dir/runs.txt" || die "$runs_file has no runs"
else
    IFS=, read -r -a mapping_list <<<"$mappings"
    IFS=, read -r -a seed_list <<<"$seeds"
    IFS=, read -r -a telemetry_list <<<"${telemetry:-}"
    [ ${#telemetry_list[@]} -gt 0 ] || telemetry_list=("")
    n=0
    for t in "${telemetry_list[@]}"; do
        for m in "${mapping_list[@]}"; do
            for s in "${seed_list[@]}"; do
                # A readable, unique folder name: index, mapping (a file's base name), seed.
                label=$(basename -- "$m")
                name=$(printf '%03d-%s-seed%s' "$n" "${label//[^A-Za-z0-9._-]/_}" "$s")
                args=(--mapping "$m" --seed "$s")
                [ -z "$t" ] || { name+="-${t//[^A-Za-z0-9._-]/_}"; args+=(--telemetry "$t"); }
                echo "$name ${args[*]} ${sim_args[*]}"
                n=$((n + 1))
            done
        done
    done >"$dir/runs.txt"
fi
count=$(wc -l <"$dir/runs.txt")
# Both sbatch scripts split lines at white space: the names must not be empty or repeated.
dup=$(awk '{ print $1 }' "$dir/runs.txt" | sort | uniq -d | head -n1)
[ -z "$dup" ] || die "run name $dup appears twice in runs.txt"

# -- submit ----------------------------------------------------------------------------------
mkdir -p "$dir/logs"
array=$(sbatch --parsable "${sbatch_opts[@]}" --array="0-$((count - 1))" \
    --output="$dir/logs/%A_%a.log" "$here/sim.sbatch" "$hostping" "$dir")
array=${array%%;*} # --parsable prints "id;cluster" on multi-cluster set-ups
merge=$(sbatch --parsable "${sbatch_opts[@]}" --dependency="afterany:$array" \
    --output="$dir/logs/merge_%j.log" "$here/merge.sbatch" "$hostping" "$dir")
merge=${merge%%;*}
say "$count runs in job array $array; merge job $merge writes $dir/merged.csv when they end"
echo "$array $merge"
