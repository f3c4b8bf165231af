#!/usr/bin/env bash
# pair-net.sh: two Soft-RoCE devices joined by a cable, for the RNIC-to-RNIC (pair) probe.
# Runs INSIDE the Soft-RoCE guest, as root (crates/rdma/tests/guest.rs calls it):
#   scripts/guest/pair-net.sh            sets up, prints "rxe_a GID_INDEX" and "rxe_b GID_INDEX"
#
# What it builds: a veth pair veth_a (192.168.77.1) -- veth_b (192.168.77.2), an rdma_rxe
# device on each end (rxe_a on veth_a, rxe_b on veth_b), and routing that makes every RoCE
# packet between them cross the veth: `tc qdisc ... netem` on veth_a then delays the pair's
# traffic like a longer cable.
#
# Why one network namespace, not two (what the 6.1 guest kernel allows; tried in the guest):
#   - `rdma system set netns exclusive` is accepted, but `rdma dev set rxe_a netns nsa` fails
#     with EOPNOTSUPP: rxe devices of 6.1 cannot be moved into a namespace, so in exclusive
#     mode they stay in the initial one and a process in nsa sees no device at all
#     (perftest: "Did not detect devices");
#   - in shared mode (the default) the devices are visible everywhere, but 6.1's rxe opens
#     its UDP socket (port 4791) and looks up its routes in the initial namespace only, so a
#     packet arriving on a veth end inside another namespace finds no listener and is dropped.
#   So both ends stay in the initial namespace, and policy routing takes the place of the
#   namespaces' separation: both addresses are local, which would make the kernel deliver
#   rxe_a's packets to 192.168.77.2 through `lo` (where rxe finds no device for them).
#   Instead, locally generated packets (iif lo) from one address to the other are looked up
#   in their own table whose only route is out through their veth end; the `local` table
#   moves after those rules; arriving packets (iif veth_*) still meet the `local` table and
#   are delivered, accepted although their source is a local address (accept_local=1,
#   rp_filter=0); static neighbour entries spare ARP, which would refuse the same.
#
# Softirq priority: a packet between the two rxe devices is handed on in the NET_RX softirq
# (veth), and, with both vCPUs busy-polling as perftest and hostping do, the ksoftirqd
# threads wait for a scheduler tick: multi-millisecond tails, and with netem (whose timer
# hands packets to ksoftirqd) a typical ping-pong of 3.4 ms instead of 0.25 ms. A real RNIC
# moves packets in hardware; running ksoftirqd as SCHED_FIFO 50 makes the guest's network
# stack run as soon as a packet is there, for perftest and hostping alike.
set -euo pipefail

a=192.168.77.1 b=192.168.77.2
say() { echo "pair-net: $*" >&2; }

ip link add veth_a type veth peer name veth_b
ip addr add "$a/24" dev veth_a
ip addr add "$b/24" dev veth_b
ip link set veth_a up
ip link set veth_b up
sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.veth_a.rp_filter=0 \
    net.ipv4.conf.veth_b.rp_filter=0 net.ipv4.conf.veth_a.accept_local=1 \
    net.ipv4.conf.veth_b.accept_local=1
ip rule add pref 100 iif lo from "$a" to "$b" lookup 100
ip rule add pref 101 iif lo from "$b" to "$a" lookup 101
ip route add "$b" dev veth_a src "$a" table 100
ip route add "$a" dev veth_b src "$b" table 101
ip rule add pref 1000 lookup local
ip rule del pref 0 lookup local
ip neigh replace "$b" lladdr "$(</sys/class/net/veth_b/address)" dev veth_a nud permanent
ip neigh replace "$a" lladdr "$(</sys/class/net/veth_a/address)" dev veth_b nud permanent
rdma link add rxe_a type rxe netdev veth_a
rdma link add rxe_b type rxe netdev veth_b
for k in $(pgrep ksoftirqd); do chrt -f -p 50 "$k"; done

# gid_index DEV ADDR: the index of DEV's RoCE v2 GID holding ADDR (::ffff:ADDR), waiting
# (bounded) for the port to come up and the GID table to be filled.
gid_index() {
    local dev=$1 want hex i g t tries
    printf -v hex '%02x%02x:%02x%02x' ${2//./ }
    want="0000:0000:0000:0000:0000:ffff:$hex"
    for ((tries = 0; tries < 100; tries++)); do
        for i in {0..15}; do
            g="" t=""
            { read -r g <"/sys/class/infiniband/$dev/ports/1/gids/$i"; } 2>/dev/null || continue
            { read -r t <"/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i"; } 2>/dev/null || true
            if [ "$g" = "$want" ] && [ "$t" = "RoCE v2" ]; then
                echo "$i"
                return 0
            fi
        done
        sleep 0.1
    done
    say "no RoCE v2 GID for $2 on $dev"
    return 1
}
echo "rxe_a $(gid_index rxe_a "$a")"
echo "rxe_b $(gid_index rxe_b "$b")"
