#!/usr/bin/env bash
# hosts-net.sh N: N Soft-RoCE "hosts" behind one switch, each in its own network namespace,
# for tests between real hosts in one guest (job-loop.sh). Runs INSIDE the guest booted with
# the odp kernel (scripts/guest/run.sh --kernel odp), as root; prints a line per host,
# "hN rxe_hN GID_INDEX".
#
# What it builds:
#   - namespace sw, the switch: a bridge br0 (192.168.77.254/24, where the fleet's collector
#     listens) with one port swN a host;
#   - namespace hN, host N (1..N): one end of a veth pair, hN (192.168.77.N/24), its other end
#     swN on the bridge: hN is the host's cable, and `ip netns exec hN tc qdisc ... netem` on
#     it slows that host's traffic alone;
#   - an rdma_rxe device rxe_hN on hN, moved into hN: with the RDMA subsystem in exclusive
#     network-namespace mode, each host sees its own RNIC and no other (as a real host does:
#     its checks probe it alone), and its RoCE packets go out on its own cable.
#
# Why the odp kernel (7.3): on bookworm's 6.1, `rdma dev set DEV netns NS` fails for rxe
# devices with EOPNOTSUPP and rxe receives RoCE only in the initial namespace (pair-net.sh
# works around that for two devices in one namespace); 7.3 moves rxe devices and receives
# RoCE in any namespace (shared/reference/softroce-guest.md, "Two RNICs that reach each
# other over a real link").
#
# Softirq priority as in pair-net.sh: ksoftirqd at SCHED_FIFO 50, so that the emulated
# network stack runs as soon as a packet is there rather than at the next scheduler tick.
set -euo pipefail

n=${1:?usage: hosts-net.sh N}
[[ "$n" =~ ^[1-9]$ ]] || { echo "hosts-net: N must be 1..9, not $n" >&2; exit 2; }
say() { echo "hosts-net: $*" >&2; }

# Exclusive mode first, before any namespace is made (the kernel refuses to switch modes
# while other network namespaces exist).
rdma system set netns exclusive
ip netns add sw
ip -n sw link set lo up
ip -n sw link add br0 type bridge
ip -n sw addr add 192.168.77.254/24 dev br0
ip -n sw link set br0 up
for ((i = 1; i <= n; i++)); do
    ip netns add "h$i"
    ip -n "h$i" link set lo up
    ip link add "h$i" type veth peer name "sw$i"
    ip link set "h$i" netns "h$i"
    ip link set "sw$i" netns sw
    ip -n sw link set "sw$i" master br0
    ip -n sw link set "sw$i" up
    ip -n "h$i" addr add "192.168.77.$i/24" dev "h$i"
    ip -n "h$i" link set "h$i" up
    ip netns exec "h$i" rdma link add "rxe_h$i" type rxe netdev "h$i"
    rdma dev set "rxe_h$i" netns "h$i"
done
for k in $(pgrep ksoftirqd); do chrt -f -p 50 "$k"; done

# gid_index NS DEV ADDR: the index of DEV's RoCE v2 GID holding ADDR (::ffff:ADDR), seen
# from namespace NS, waiting (bounded) for the port to come up and the table to be filled.
gid_index() {
    local ns=$1 dev=$2 hex want
    printf -v hex '%02x%02x:%02x%02x' ${3//./ }
    want="0000:0000:0000:0000:0000:ffff:$hex"
    ip netns exec "$ns" bash -c '
        for ((tries = 0; tries < 100; tries++)); do
            for i in {0..15}; do
                g="" t=""
                { read -r g <"/sys/class/infiniband/$1/ports/1/gids/$i"; } 2>/dev/null || continue
                { read -r t <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i"; } 2>/dev/null || true
                if [ "$g" = "$2" ] && [ "$t" = "RoCE v2" ]; then echo "$i"; exit 0; fi
            done
            sleep 0.1
        done
        exit 1' _ "$dev" "$want" || { say "no RoCE v2 GID for $3 on $dev in $ns"; return 1; }
}
for ((i = 1; i <= n; i++)); do
    echo "h$i rxe_h$i $(gid_index "h$i" "rxe_h$i" "192.168.77.$i")"
done
