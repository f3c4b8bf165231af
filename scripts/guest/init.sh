#!/bin/sh
# /init of the Soft-RoCE guest (busybox ash, PID 1). setup.sh copies this file into the
# initramfs; run.sh boots it. It:
#   1. mounts proc/sys/devtmpfs and loads the modules listed in /etc/modules.list (in order);
#   2. brings up lo and eth0 (10.0.2.15/24, QEMU user-mode networking) and names the host;
#   3. mounts the host root (9p tag hostroot, read-only) on /host and the writable out folder
#      (9p tag hostout) on /host/mnt, plus proc, sys, dev, /tmp, /run inside /host, and the
#      checkout (9p tag checkout, read-only) on /host/run/hostping/checkout: a folder of the
#      guest's own /run, so the checkout is seen wherever it lies on the host (/tmp too);
#   4. creates rxe0 on eth0 and waits (bounded) until port 1 is ACTIVE;
#   5. runs /mnt/job.sh (written by run.sh) with bash chrooted into the host root, so
#      host-built binaries and the host's libraries run unchanged;
#   6. powers off. The job writes the command's exit status to /mnt/status; run.sh reads it.
# Lines starting with "guest-init:" are progress messages; run.sh keys its timings on
# "guest-init: running" and "guest-init: done".
export PATH=/bin

log() { echo "guest-init: $*"; }
uptime_s() { read -r up _ </proc/uptime; echo "$up"; }
halt() {
    sync
    umount /host/mnt 2>/dev/null
    poweroff -f
    sleep 10 # poweroff -f does not return; never let PID 1 exit (that would panic)
}
fatal() { log "FATAL: $*"; halt; }

mount -t proc proc /proc
echo # the firmware's last line has no newline
log "started (guest uptime $(uptime_s) s)"
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
hostname hostping-guest

# -- modules ------------------------------------------------------------------------------
while read -r ko; do
    insmod "$ko" || log "warning: insmod $ko failed"
done </etc/modules.list

# -- network --------------------------------------------------------------------------------
ip link set lo up
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/class/net/eth0 ] || fatal "no eth0 (virtio-net did not probe)"
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2 dev eth0 2>/dev/null

# -- host root and out folder ------------------------------------------------------------------
# msize 256 KiB (above the default): fewer 9p round trips when executing and reading host
# files. The host root is read-only and the guest lives seconds, so it is cached
# (cache=loose) to cut the round trips further; the out folder is not cached, so what the
# job writes is on the host as soon as the write returns.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /host ||
    fatal "cannot mount the host root (9p tag hostroot)"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 hostout /host/mnt ||
    fatal "cannot mount the out folder (9p tag hostout) on /mnt"
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
# devtmpfs (not a copy of the host's /dev): /dev/infiniband/uverbs0 appears with rxe0.
mount -t devtmpfs devtmpfs /host/dev
# devtmpfs has no /dev/fd and /dev/std*: bash's <(...) and many scripts need them.
ln -s /proc/self/fd /host/dev/fd
ln -s /proc/self/fd/0 /host/dev/stdin
ln -s /proc/self/fd/1 /host/dev/stdout
ln -s /proc/self/fd/2 /host/dev/stderr
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /host/tmp
mount -t tmpfs -o mode=755 tmpfs /host/run
# run.sh rewrites the checkout's paths to this mount point (its guest_checkout).
mkdir -p /host/run/hostping/checkout
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro checkout /host/run/hostping/checkout ||
    fatal "cannot mount the checkout (9p tag checkout) on /run/hostping/checkout"

# -- Soft-RoCE ----------------------------------------------------------------------------------
# busybox has no `rdma`: use the host's iproute2 through the chroot.
PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot /host rdma link add rxe0 type rxe netdev eth0 ||
    log "warning: rdma link add rxe0 failed"
state=""
i=0
while [ $i -lt 100 ]; do # 10 s at most
    state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)
    case "$state" in *ACTIVE*) break ;; esac
    sleep 0.1
    i=$((i + 1))
done
case "$state" in
*ACTIVE*) log "rxe0 port 1 $state" ;;
*) log "warning: rxe0 port 1 not ACTIVE (state '${state:-missing}'); running the command anyway" ;;
esac

# -- the job -----------------------------------------------------------------------------------
[ -f /host/mnt/job.sh ] || fatal "no /mnt/job.sh in the out folder"
# Pinned memory for verbs: the default RLIMIT_MEMLOCK (8 MiB) is too small for bigger MRs.
# shellcheck disable=SC3045 # busybox ash has ulimit -l
ulimit -l unlimited
log "running (guest uptime $(uptime_s) s)"
env -i TERM=linux /bin/chroot /host /bin/bash --noprofile --norc /mnt/job.sh
log "done (guest uptime $(uptime_s) s, status $(cat /host/mnt/status 2>/dev/null || echo missing))"
halt
