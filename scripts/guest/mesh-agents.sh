#!/usr/bin/env bash
# mesh-agents.sh HOSTPING: runs INSIDE the Soft-RoCE guest, after the pair steps of
# softroce-check.sh (rxe_a and rxe_b joined by the veth pair of pair-net.sh, no netem left):
# a real `hostping mesh` through the collector. PostgreSQL (the host's binaries, over 9p) in
# /tmp, the collector with probe tokens, agent node01 on rxe_a and node02 on rxe_b (each
# restricted to its device, registered with the collector), and node03 registered by an
# agent that then stopped; `hostping mesh --nodes node[01-03]` must measure the
# node01-node02 pair as `pair probe` measures it in the same rounds, and report node03's
# pairs unreachable. Outputs in
# $HOSTPING_GUEST_OUT/softroce/mesh-*; assertions in crates/hostping/tests/softroce.rs
# (`mesh_through_the_collector_on_soft_roce`). The script's own time is in mesh-time.txt.
set -uo pipefail

hostping=${1:?usage: mesh-agents.sh HOSTPING}
out="${HOSTPING_GUEST_OUT:?run inside scripts/guest/run.sh}/softroce"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/guest/step.sh
. "$here/step.sh"
# shellcheck source=scripts/guest/collector.sh
. "$here/collector.sh"
started=$(date +%s.%N)

dir=/tmp/mesh
mkdir -p "$dir" && chmod 777 "$dir"
collector=http://127.0.0.1:9470
ops=mesh-ops-0123456789abcdef
printf 'node01 tok-node01-0123456789\nnode02 tok-node02-0123456789\nnode03 tok-node03-0123456789\n' \
    >"$dir/tokens"
printf 'ops %s\n' "$ops" >"$dir/probe.tokens"
# Each agent checks the host once at start (short: 20 iterations), then only the pair
# requests probe.
printf '[probe]\niterations = 20\n[triggers]\nhost_status_every = "100h"\nsymptoms_every = "100h"\n' \
    >"$dir/agent.toml"

start_collector mesh "$dir" 5433 127.0.0.1:9470

# agent NAME DEVICE PORT CPU: one agent, its API on 127.0.0.1:PORT, pinned to vCPU CPU
# (the responder and the initiator on different vCPUs, as the pair steps run them).
agent() {
    taskset -c "$4" "$hostping" agent --config "$dir/agent.toml" --db "/tmp/$1.db" \
        --listen "127.0.0.1:$3" --name "$1" --devices "$2" --collector "$collector" \
        --token "tok-$1-0123456789" --probe-tokens "$dir/probe.tokens" \
        2>"$out/mesh-$1.err" &
}
agent node01 rxe_a 9601 1
node01=$!
agent node02 rxe_b 9602 0
node02=$!
# node03 registers (as a simulated dgx-a100: rnic0..rnic3) and stops: its agent is down.
"$hostping" agent --sim dgx-a100 --db /tmp/node03.db --listen 127.0.0.1:9603 --name node03 \
    --collector "$collector" --token tok-node03-0123456789 --run-for 3s \
    2>"$out/mesh-node03.err"
for _ in $(seq 600); do
    [ "$(curl -s "$collector/api/agents" | grep -o '"host"' | wc -l)" = 3 ] && break
    sleep 0.1
done
curl -s "$collector/api/agents" >"$out/mesh-registered.json"
# The agents' first checks done, so that they do not share the vCPUs with the pairs.
for port in 9601 9602; do
    for _ in $(seq 1200); do
        curl -s "http://127.0.0.1:$port/api/runs?limit=1" | grep -q '"id"' && break
        sleep 0.1
    done
done

# The mesh and `pair serve|probe` between the same devices take turns, three rounds, so that
# they are compared in the same moments of the guest (with the agents, the collector and
# PostgreSQL up for both); a round that came out starved runs again (step.sh, `unstarved`).
# 1000 pings a pair (100/s over 10 s), 300 WRITEs at depth 16, as the pair steps probe;
# the responders on vCPU 0, the initiators on vCPU 1.
start_pair_serve mesh-pair-serve "$hostping"
# Starved: above softroce-check.sh's limit for this machine.
starved_us=${HOSTPING_STARVED_US:-100}
mesh_s=0
for i in 1 2 3; do
    unstarved "mesh-pair-$i" "$starved_us" taskset -c 1 timeout 300 "$hostping" pair probe \
        --device rxe_a --peer "$pair_peer" --format json --bw-iterations 300 --depth 16
    mesh_started=$(date +%s.%N)
    unstarved "mesh-agents-$i" "$starved_us" "$hostping" mesh --nodes 'node[01-03]' \
        --collector "$collector" --token "$ops" --duration 10 --rate-cross-leaf 100 \
        --bw-iterations 300 --depth 16 --format json
    mesh_s=$(awk -v t="$mesh_s" -v s="$mesh_started" -v e="$(date +%s.%N)" \
        'BEGIN { print t + e - s }')
done
kill "$pair_serve"
wait "$pair_serve" 2>/dev/null

kill "$node01" "$node02" "$collector_pid"
wait "$node01" "$node02" "$collector_pid" 2>/dev/null
stop_postgres "$dir"
awk -v s="$started" -v m="$mesh_s" -v n="$(date +%s.%N)" \
    'BEGIN { printf "script %.1f s, mesh %.1f s (3 rounds)\n", n - s, m }' >"$out/mesh-time.txt"
exit 0
