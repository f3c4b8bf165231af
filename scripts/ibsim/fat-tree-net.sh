#!/usr/bin/env bash
# fat-tree-net.sh: writes an ibsim net file of a two-tier Clos of 36-port switches: LEAVES
# leaf switches with HOSTS hosts each and 36 - HOSTS uplinks, spread round-robin over
# SPINES spine switches (leaf l's k-th uplink goes to spine (l + k) mod SPINES, on that
# spine's next free port), so every spine reaches many leaves and the fabric is connected.
#
# Usage: scripts/ibsim/fat-tree-net.sh [LEAVES [SPINES [HOSTS]]] > fabric.net
#   Defaults: 72 leaves, 36 spines, 18 hosts a leaf: 108 switches with every port used
#   (72 x 18 uplinks = 36 spines x 36 ports) and 1296 hosts.
set -euo pipefail
leaves=${1:-72} spines=${2:-36} hosts=${3:-18}
up=$((36 - hosts))
if [ "$up" -lt 1 ] || [ "$up" -gt "$spines" ]; then
    echo "fat-tree-net: $up uplinks a leaf need 1 to $spines spines" >&2
    exit 2
fi
[ $((leaves * up)) -le $((spines * 36)) ] ||
    { echo "fat-tree-net: $((leaves * up)) uplinks exceed $spines spines x 36 ports" >&2; exit 2; }
declare -a next_port spine_lines
for ((s = 0; s < spines; s++)); do next_port[s]=1; spine_lines[s]=""; done
echo "# A two-tier Clos: $leaves leaves of $hosts hosts and $up uplinks, $spines spines of 36 ports"
echo "# (scripts/ibsim/fat-tree-net.sh $leaves $spines $hosts)"
for ((l = 0; l < leaves; l++)); do
    echo
    echo "Switch 36 \"leaf-$l\""
    for ((h = 0; h < hosts; h++)); do
        echo "[$((h + 1))] \"host-$l-$h\"[1]"
    done
    for ((k = 0; k < up; k++)); do
        s=$(((l + k) % spines))
        p=${next_port[s]}
        next_port[s]=$((p + 1))
        echo "[$((hosts + k + 1))] \"spine-$s\"[$p]"
        spine_lines[s]+="[$p] \"leaf-$l\"[$((hosts + k + 1))]"$'\n'
    done
done
for ((s = 0; s < spines; s++)); do
    echo
    echo "Switch 36 \"spine-$s\""
    printf '%s' "${spine_lines[s]}"
done
for ((l = 0; l < leaves; l++)); do
    for ((h = 0; h < hosts; h++)); do
        echo
        echo "Hca 1 \"host-$l-$h\""
        echo "[1] \"leaf-$l\"[$((h + 1))]"
    done
done
