#!/usr/bin/env bash
# Accuracy of flap diagnosis over seeds: for each case, runs
#   hostping check --sim MODEL --inject flap:LINK:F --runs RUNS --seed S --format json
# for S in 1..SEEDS and classifies the last report of the series:
#   alone    link_flapping naming exactly LINK (and no other diagnosis)
#   with     link_flapping naming LINK with other links, or beside other diagnoses
#   failure  link_failure (on any link), no flapping naming LINK
#   healthy  no diagnosis
#   other    anything else (first such seed and causes printed)
# Usage: scripts/flap-accuracy.sh [-b BINARY] [-n SEEDS] [-r RUNS] MODEL:LINK:F ...
# Needs jq. Simulated host only: the figures measure the analyzer, not hardware.
set -euo pipefail
bin=target/release/hostping
seeds=30
runs=4
while getopts "b:n:r:" o; do
    case $o in
        b) bin=$OPTARG ;;
        n) seeds=$OPTARG ;;
        r) runs=$OPTARG ;;
        *) echo "usage: $0 [-b BINARY] [-n SEEDS] [-r RUNS] MODEL:LINK:F ..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-b BINARY] [-n SEEDS] [-r RUNS] MODEL:LINK:F ..." >&2; exit 2; }
printf '%-14s %-20s %-5s %6s %5s %8s %8s %6s\n' model link f alone with failure healthy other
for case in "$@"; do
    IFS=: read -r model link f <<<"$case"
    alone=0 with=0 failure=0 healthy=0 other=0 note=
    for s in $(seq 1 "$seeds"); do
        last=$("$bin" check --sim "$model" --inject "flap:$link:$f" --runs "$runs" --seed "$s" \
            --format json | tail -n 1) || true
        class=$(jq -r --arg l "$link" '
            [.diagnoses[] | select(.cause == "link_flapping" and (.links | index($l)))] as $f
            | if ($f | length) > 0 then
                (if (.diagnoses | length) == 1 and ($f[0].links == [$l]) then "alone" else "with" end)
              elif (.diagnoses | length) == 0 then "healthy"
              elif ([.diagnoses[].cause] | all(. == "link_failure")) then "failure"
              else "other" end' <<<"$last")
        case $class in
            alone) alone=$((alone + 1)) ;;
            with) with=$((with + 1)) ;;
            failure) failure=$((failure + 1)) ;;
            healthy) healthy=$((healthy + 1)) ;;
            *) other=$((other + 1))
               [ -n "$note" ] || note="seed $s: $(jq -c '[.diagnoses[] | [.cause, .links]]' <<<"$last")" ;;
        esac
        if [ "$class" = with ] && [ -z "$note" ]; then
            note="seed $s: $(jq -c '[.diagnoses[] | [.cause, .links]]' <<<"$last")"
        fi
    done
    printf '%-14s %-20s %-5s %6d %5d %8d %8d %6d  %s\n' "$model" "$link" "$f" \
        "$alone" "$with" "$failure" "$healthy" "$other" "$note"
done
