#!/usr/bin/env bash
# capture-mads.sh: captures real MAD bytes, request and response, from infiniband-diags
# talking to ibsim through libumad2sim, as fixture files for the MAD wire views
# (crates/rdma/src/mad/). Each fixture is one MAD (256 bytes) in the hex format of
# crates/rdma/testdata/ (`#` comment lines, then bytes), with the command that produced it.
#
# Usage: scripts/ibsim/capture-mads.sh OUT_DIR
#   Needs ibsim-utils, libumad2sim0, opensm and infiniband-diags (Debian packages).
#   The fabric is scripts/ibsim/nets/two-switches.net; counters of leaf-a port 7 are set
#   through ibsim's console first, so the fixtures hold known non-zero values.
set -euo pipefail

out=${1:?usage: capture-mads.sh OUT_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Bring the fabric up with run.sh (ibsim, one opensm pass, the preload) and come back
# inside it; counters of leaf-a port 7 are set through ibsim's console first.
if [ -z "${HOSTPING_CAPTURE_INSIDE:-}" ]; then
    export HOSTPING_CAPTURE_INSIDE=1
    exec "$here/run.sh" \
        --console 'PerformanceSet "leaf-a"[7] PortCounters.SymbolErrorCounter=7' \
        --console 'PerformanceSet "leaf-a"[7] PortCounters.LinkDownedCounter=2' \
        --console 'PerformanceSet "leaf-a"[7] PortCounters.PortXmitWait=1234' \
        -- "${BASH_SOURCE[0]}" "$out"
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# capture NAME N DESCRIPTION -- COMMAND...: runs COMMAND with MAD dumps (-d -d -d) and writes
# its N-th request and N-th response to NAME-request.hex and NAME-response.hex.
# In the dump, "send buf" is the 64-byte struct ib_user_mad header then the MAD; "rcv buf"
# is the MAD alone (libibmad's _do_madrpc).
capture() {
    local name=$1 nth=$2 what=$3
    shift 4
    "$@" -d -d -d >"$work/$name.log" 2>&1 ||
        { echo "capture-mads: $* failed:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
    for dir in request response; do
        local marker=send skip=64
        [ "$dir" = response ] && marker=rcv skip=0
        {
            echo "# $what: the $dir"
            echo "# captured by scripts/ibsim/capture-mads.sh: $* (ibsim $(dpkg-query -W -f='${Version}' ibsim-utils), nets/two-switches.net)"
            awk -v m="$marker buf" -v nth="$nth" '$0 == m { on = (++seen == nth); next }
                    on && NF == 8 && /^[0-9a-f ]+$/ { print; next } on { exit }' \
                "$work/$name.log" | tr -d ' \n' | tail -c +$((skip * 2 + 1)) | head -c 512 |
                fold -w 32 | sed 's/../& /g; s/ $//'
        } >"$out/$name-$dir.hex"
        [ "$(grep -vc '^#' "$out/$name-$dir.hex")" -eq 16 ] ||
            { echo "capture-mads: $name: no full $dir MAD in the dump" >&2; exit 1; }
    done
}

# LIDs from opensm: leaf-a is where clients attach (the first node), so it has LID 1.
lid=$(smpquery portinfo -D 0 0 2>/dev/null | awk -F. '/^Lid:/ { print $NF; exit }')
[ -n "$lid" ] || { echo "capture-mads: no LID for leaf-a (did opensm run?)" >&2; exit 1; }
# perfquery asks ClassPortInfo first, then the counters.
capture perf-classportinfo 1 "PerfMgt Get(ClassPortInfo) to leaf-a" -- perfquery "$lid" 7
capture perf-portcounters 2 "PerfMgt Get(PortCounters) of leaf-a port 7" -- perfquery "$lid" 7
capture perf-portcounters-ext 2 "PerfMgt Get(PortCountersExtended) of leaf-a port 7" -- perfquery -x "$lid" 7
capture smp-dr-nodeinfo 1 "directed-route SubnGet(NodeInfo) of leaf-a, path 0" -- smpquery -D nodeinfo 0
capture smp-dr-nodeinfo-hop 1 "directed-route SubnGet(NodeInfo) one hop out of leaf-a port 7" -- smpquery -D nodeinfo 0,7
# smpquery nodedesc asks NodeInfo first.
capture smp-dr-nodedesc 2 "directed-route SubnGet(NodeDescription) of leaf-a" -- smpquery -D nodedesc 0
capture smp-dr-portinfo 1 "directed-route SubnGet(PortInfo) of leaf-a port 7" -- smpquery -D portinfo 0 7
capture smp-lid-switchinfo 1 "LID-routed SubnGet(SwitchInfo) of leaf-a" -- smpquery switchinfo "$lid"
# ibroute asks NodeInfo, NodeDescription and SwitchInfo first, then LFT block 0.
capture smp-lid-lft 4 "LID-routed SubnGet(LinearForwardingTable) block 0 of leaf-a" -- ibroute "$lid"
echo "capture-mads: wrote the fixtures to $out" >&2
