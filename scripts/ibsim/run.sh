#!/usr/bin/env bash
# run.sh: runs one command against a simulated InfiniBand fabric: ibsim (ibsim-utils) on a
# net file, LIDs assigned by one pass of a real opensm, and the command's libibumad calls
# redirected to ibsim by libumad2sim (LD_PRELOAD). Each run has its own ibsim socket
# (IBSIM_SOCKNAME), so runs side by side cannot meet.
#
# Usage: scripts/ibsim/run.sh [--net FILE] [--console CMD]... -- COMMAND [ARGS...]
#   --net FILE     the fabric (default: scripts/ibsim/nets/two-switches.net)
#   --console CMD  an ibsim console command sent after opensm and before COMMAND, e.g.
#                  'PerformanceSet "leaf-a"[7] PortCounters.SymbolErrorCounter=7' or
#                  'Error "leaf-b" 100' (every MAD to leaf-b lost); repeatable
#   --routing ENGINE  opensm's routing engine (opensm -R: minhop, updn, ...; default minhop)
# Exit status: COMMAND's; 125 when ibsim or opensm could not be started.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
net=$here/nets/two-switches.net
console=()
routing=minhop
while [ $# -gt 0 ]; do
    case "$1" in
    --net) net=${2:?--net needs a file}; shift 2 ;;
    --console) console+=("${2:?--console needs a command}"); shift 2 ;;
    --routing) routing=${2:?--routing needs an engine}; shift 2 ;;
    --) shift; break ;;
    *) echo "ibsim-run: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "ibsim-run: no command given" >&2; exit 2; }
preload=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
for need in ibsim opensm; do
    command -v "$need" >/dev/null || { echo "ibsim-run: $need missing (apt install ibsim-utils libumad2sim0 opensm)" >&2; exit 125; }
done
[ -e "$preload" ] || { echo "ibsim-run: $preload missing (apt install libumad2sim0)" >&2; exit 125; }

work=$(mktemp -d)
export IBSIM_SOCKNAME=hostping-ibsim-$$
ibsim_pid="" holder_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    kill "$ibsim_pid" "$holder_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# ibsim reads its console from stdin and spins at 100 % CPU at EOF: a FIFO held open by a
# sleeping writer keeps it waiting.
mkfifo "$work/console"
sleep infinity >"$work/console" &
holder_pid=$!
ibsim -s "$net" <"$work/console" >"$work/ibsim.log" 2>&1 &
ibsim_pid=$!
exec 7>"$work/console"
for _ in $(seq 100); do grep -q 'sim>' "$work/ibsim.log" && break; sleep 0.1; done
grep -q 'sim>' "$work/ibsim.log" || { echo "ibsim-run: ibsim did not start:" >&2; tail -5 "$work/ibsim.log" >&2; exit 125; }
if ! OSM_TMP_DIR=$work OSM_CACHE_DIR=$work LD_PRELOAD=$preload \
    timeout 60 opensm -o -R "$routing" -f "$work/opensm.log" >/dev/null 2>&1; then
    echo "ibsim-run: opensm did not bring the fabric up:" >&2
    tail -5 "$work/opensm.log" >&2
    exit 125
fi
for c in "${console[@]}"; do
    echo "$c" >&7
done
# The console answers nothing to wait on; give it a moment to read its lines.
[ ${#console[@]} -eq 0 ] || sleep 0.3
set +e
LD_PRELOAD=$preload "$@"
status=$?
set -e
echo Quit >&7
exit "$status"
