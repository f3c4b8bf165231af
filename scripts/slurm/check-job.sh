#!/usr/bin/env bash
# check-job.sh HOSTPING: the test of `hostping job --slurm` (run by ./test.sh). Starts a
# one-node Slurm (one-node.sh), a throw-away PostgreSQL and `hostping collector` on it,
# submits a `sleep` job, and asks `hostping job --slurm ID --collector URL --format json`:
# the answer names the job and its node, and, with the node's agent registered but no run
# posted for it, the verdict is `inconclusive` (exit 3); before the node is registered it is
# unknown to the collector, and a pending job and an unknown one are input errors (exit 2).
# Then a job that replays a simulated job's NCCL Inspector records into its dump folder
# (nccl-job.sbatch: `hostping job --sim-cluster ... --nccl-out`, then `hostping nccl replay`,
# this node playing the simulated straggler's host) with a real agent tailing them (`agent
# --nccl-dir`): the collector judges the job by itself once the rank runs late (GET
# /api/jobs/ID/verdict), and `hostping job --slurm ID` names that rank and its GPU on this
# node, with the job's symptom, and no simulated host's name.
# Needs root, Debian's slurm-wlm, munge and postgresql
# (./test.sh installs them). About a minute.
# On failure it prints the jobs and the logs, and keeps its folder.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hostping=${1:?usage: check-job.sh HOSTPING}
start=$EPOCHREALTIME
say() { echo "slurm-job-check: $*" >&2; }
elapsed() { awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hostping-slurm-job.XXXXXX")
chmod 755 "$work" # munged wants every folder above its socket searchable by all
cluster=$work/cluster
pg=$work/pg
mkdir -p "$pg"
chmod 777 "$pg" # PostgreSQL runs as nobody: it refuses to run as root
ok="" collector_pid="" job="" agent_pid="" nccl_job=""
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
as_nobody() { runuser -u nobody -- "$@"; }
cleanup() {
    [ -z "$job" ] || scancel "$job" 2>/dev/null || true
    [ -z "$nccl_job" ] || scancel "$nccl_job" 2>/dev/null || true
    [ -z "$agent_pid" ] || { kill "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null; } || true
    [ -z "$collector_pid" ] || { kill "$collector_pid" 2>/dev/null; wait "$collector_pid" 2>/dev/null; } || true
    [ ! -f "$pg/data/postmaster.pid" ] || as_nobody "$pg_bin/pg_ctl" -D "$pg/data" -m immediate -w stop >/dev/null 2>&1 || true
    "$here/one-node.sh" stop "$cluster" || true
    if [ -n "$ok" ]; then rm -rf "$work"; else say "kept $work for inspection"; fi
}
trap cleanup EXIT

# fail MESSAGE: the reason, then everything that explains it.
fail() {
    say "FAILED: $*"
    scontrol -o show job 2>&1 | sed 's/^/    /' >&2 || true
    for f in "$work"/*.log "$pg"/*.log "$cluster"/log/*.log; do
        [ -f "$f" ] || continue
        say "== $f (last 30 lines)"
        tail -n 30 "$f" | sed 's/^/    /' >&2
    done
    exit 1
}

[ -x "$pg_bin/initdb" ] || fail "no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)"
"$here/one-node.sh" start "$cluster" || fail "the one-node cluster did not start"
export SLURM_CONF=$cluster/slurm.conf
node=$(hostname -s)

# -- a throw-away PostgreSQL and the collector on it --------------------------------------
as_nobody "$pg_bin/initdb" --auth=trust --username=hostping --encoding=UTF8 --no-sync \
    -D "$pg/data" >"$pg/initdb.log" 2>&1 || fail "initdb failed"
read -r first _ </proc/sys/net/ipv4/ip_local_port_range
port=$((10000 + RANDOM % (first - 10000)))
as_nobody "$pg_bin/pg_ctl" -D "$pg/data" -l "$pg/postgres.log" -w -t 20 \
    -o "-c port=$port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$pg -c fsync=off" \
    start >/dev/null || fail "PostgreSQL did not start"
token=tok-check-job-0123456789abcdef
echo "$node $token" >"$work/tokens"
# The log exists before the collector opens it: the loop below reads it at once (a missing
# file would fail sed, and `set -e` the script).
: >"$work/collector.log"
"$hostping" collector --database "postgres://hostping@127.0.0.1:$port/postgres" \
    --tokens "$work/tokens" --listen 127.0.0.1:0 2>"$work/collector.log" &
collector_pid=$!
url=""
for ((i = 0; i < 200; i++)); do # 20 s at most
    url=$(sed -nE 's|.*serving (http://[^/]+)/api/runs.*|\1|p' "$work/collector.log")
    [ -n "$url" ] && break
    kill -0 "$collector_pid" 2>/dev/null || fail "the collector exited"
    sleep 0.1
done
[ -n "$url" ] || fail "the collector did not say where it serves within 20 s"
say "PostgreSQL, collector ($url) and Slurm up after $(elapsed) s"

# -- a running job, and its verdict ----------------------------------------------------------
job=$(sbatch --parsable --mem=64M --time=00:02:00 --chdir "$work" --output "$work/job-%j.log" \
    --wrap 'sleep 60') || fail "sbatch failed"
state=""
for ((i = 0; i < 100; i++)); do # 10 s at most
    state=$(scontrol -o show job "$job" | sed -nE 's/.* JobState=([A-Z_]+).*/\1/p')
    [ "$state" = RUNNING ] && break
    sleep 0.1
done
[ "$state" = RUNNING ] || fail "job $job is '$state', not RUNNING, after 10 s"
# The node has no agent yet: unknown to the collector, an input error naming it (exit 2).
rc=0
"$hostping" job --slurm "$job" --collector "$url" >/dev/null 2>"$work/job-unknown.log" || rc=$?
[ "$rc" -eq 2 ] || fail "hostping job --slurm $job with $node unknown exited $rc, want 2"
grep -qF -- "unknown node: $node" "$work/job-unknown.log" ||
    fail "job --slurm $job: want 'unknown node: $node': $(cat "$work/job-unknown.log")"
# Its agent registers (PUT /api/hosts/NODE/agent with the node's token; bash's /dev/tcp, so
# that no HTTP client need be installed) and posts no run.
register() {
    local body='{"url": "http://127.0.0.1:9", "rnics": ["rnic0"]}' hostport=${url#http://} answer
    exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}" || return 1
    printf 'PUT /api/hosts/%s/agent HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
        "$node" "$hostport" "$token" "${#body}" "$body" >&3
    IFS= read -r -t 10 answer <&3 || answer="no answer in 10 s"
    exec 3<&-
    [[ "$answer" == "HTTP/1.1 2"* ]] || { say "registering $node: $answer"; return 1; }
}
register || fail "the node's agent could not register"
rc=0
"$hostping" job --slurm "$job" --collector "$url" --format json >"$work/verdict.json" \
    2>"$work/job.log" || rc=$?
[ "$rc" -eq 3 ] || fail "hostping job --slurm $job exited $rc, want 3 (inconclusive)"
flat=$(tr -d ' \n' <"$work/verdict.json")
for want in "\"job\":\"$job\"" "\"nodes\":[\"$node\"]" '"verdict":"inconclusive"' '"simulated":false'; do
    [[ "$flat" == *"$want"* ]] || fail "the verdict has no $want: $(cat "$work/verdict.json")"
done
# Not judged: the node, which posted no run.
[[ "$flat" == *"\"healthy\":null"* ]] || fail "node $node is judged without a run: $flat"

# A pending job (no nodes yet) and an unknown one: input errors in words, exit 2.
pending=$(sbatch --parsable --mem=64M --begin=now+3600 --chdir "$work" --output /dev/null \
    --wrap 'true') || fail "sbatch (pending) failed"
for case in "$pending:has no nodes yet" "999999:scontrol does not know the job"; do
    id=${case%%:*} want=${case#*:} rc=0
    "$hostping" job --slurm "$id" --collector "$url" >/dev/null 2>"$work/job-$id.log" || rc=$?
    [ "$rc" -eq 2 ] || fail "hostping job --slurm $id exited $rc, want 2"
    grep -qF -- "$want" "$work/job-$id.log" || fail "job --slurm $id: want '$want': $(cat "$work/job-$id.log")"
done
scancel "$pending" || true

# -- a job's own collectives, tailed by a real agent and judged without asking ----------------
# get PATH: the collector's answer to GET PATH (status line, headers, body), 10 s at most.
get() {
    local hostport=${url#http://}
    timeout 10 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf "GET %s HTTP/1.0\r\nHost: %s:%s\r\n\r\n" "$3" "$1" "$2" >&3 && cat <&3' \
        _ "${hostport%:*}" "${hostport##*:}" "$1"
}
dumps=$work/nccl
mkdir -p "$dumps"
"$hostping" agent --collector "$url" --token "$token" --name "$node" --nccl-dir "$dumps" \
    --db "$work/agent.db" --listen 127.0.0.1:0 2>"$work/agent.log" &
agent_pid=$!
# The simulated job's straggler: from 25 s into the job, the rank on node002's gpu3 (world
# rank 8 + 3: node002 is the job's second host of 8 GPUs) starts each collective 40 ms late.
# This node plays node002; the replay writes the job's first 20 s at once.
straggler=node002:straggler:gpu3:40ms@25s late_gpu=gpu3 late_rank=11
nccl_job=$(sbatch --parsable --chdir "$work" --output "$work/nccl-job-%j.log" \
    "$here/nccl-job.sbatch" "$hostping" "$dumps" "$straggler" 20) ||
    fail "sbatch nccl-job.sbatch failed"
verdict=""
for ((i = 0; i < 180; i++)); do # 90 s at most: the simulation, 20 s written at once, then live
    verdict=$(get "/api/jobs/$nccl_job/verdict" || true)
    [[ "$verdict" == "HTTP/1."?" 200"* ]] && break
    kill -0 "$agent_pid" 2>/dev/null || fail "the agent exited"
    sleep 0.5
done
[[ "$verdict" == "HTTP/1."?" 200"* ]] ||
    fail "no verdict of the collector's own on job $nccl_job within 90 s: $(get "/api/jobs/$nccl_job/symptom")"
say "job $nccl_job judged by the collector without asking after $(elapsed) s"
rc=0
"$hostping" job --slurm "$nccl_job" --collector "$url" --format json >"$work/nccl-verdict.json" \
    2>"$work/nccl-job.log" || rc=$?
[ "$rc" -eq 1 ] || fail "hostping job --slurm $nccl_job exited $rc, want 1 (a culprit)"
flat=$(tr -d ' \n' <"$work/nccl-verdict.json")
for want in "\"job\":\"$nccl_job\"" '"verdict":"host"' \
    "\"host\":\"$node\",\"component\":\"$late_gpu\",\"cause\":\"straggler\"" \
    '"source":"nccl_inspector"' '"slow":true' "\"rank\":$late_rank," '"simulated":true'; do
    [[ "$flat" == *"$want"* ]] || fail "job --slurm $nccl_job's verdict has no $want: $(cat "$work/nccl-verdict.json")"
done
# Every record was moved onto this node: no simulated host is named (unless it is this one).
for sim_host in node001 node002; do
    [ "$sim_host" = "$node" ] || [[ "$flat" != *"\"$sim_host\""* ]] ||
        fail "job --slurm $nccl_job's verdict names the simulated $sim_host: $flat"
done
# The replayed records stayed labelled simulated, every one of them.
replayed=$(cat "$dumps/nccl-inspector-$nccl_job/$node-"*.log) ||
    fail "job $nccl_job wrote no $dumps/nccl-inspector-$nccl_job/$node-*.log"
records=$(grep -c '"inspector_output_format_version"' <<<"$replayed" || true)
labelled=$(grep -cF '"git_rev": "hostping-simulated"' <<<"$replayed" || true)
[ "$records" -gt 0 ] && [ "$labelled" -eq "$records" ] ||
    fail "job $nccl_job: $labelled of its $records replayed records are labelled simulated"
[[ "$(tr -d ' \n' <<<"${verdict#*$'\r\n\r\n'}")" == *"\"host\":\"$node\",\"component\":\"$late_gpu\",\"cause\":\"straggler\""* ]] ||
    fail "the collector's own verdict names no straggler on $node's $late_gpu: $verdict"
# Judged from simulated records: the collector's own verdict says so (the agent's post
# carries the records' label).
[[ "$(tr -d ' \n' <<<"${verdict#*$'\r\n\r\n'}")" == *'"simulated":true'* ]] ||
    fail "the collector's own verdict on replayed simulated records is not labelled simulated: $verdict"

ok=1
say "passed in $(elapsed) s: job $job on $node read from scontrol; the node unknown: exit 2; registered, no run posted: inconclusive, exit 3; pending and unknown jobs: exit 2; job $nccl_job's records tailed by the agent: judged without asking, and job --slurm names rank $late_rank on $late_gpu of $node, the straggler, with the symptom"
