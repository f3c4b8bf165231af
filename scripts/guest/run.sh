#!/usr/bin/env bash
# run.sh: runs one command inside a throw-away QEMU guest that has a Soft-RoCE device (rxe0).
#
# Usage: scripts/guest/run.sh [--kernel default|odp] [--out DIR] [--timeout SECONDS] [--mem MIB]
#                             -- COMMAND [ARGS...]
#   --kernel default|odp  which Debian kernel boots (see setup.sh): default, this release's
#                      (6.1: rxe without on-demand paging), or odp, trixie-backports' newest
#                      (rxe with ODP, Linux 6.14 and later).
#   --out DIR          writable host folder, seen as /mnt in the guest ($HOSTPING_GUEST_OUT);
#                      default: a fresh temporary folder. Afterwards it holds command.log
#                      (the command's stdout+stderr), status (its exit status), serial.log
#                      (the whole guest console) and job.sh (what the guest ran).
#   --timeout SECONDS  wall-clock bound for the whole guest, boot included (default 300).
#   --mem MIB          guest memory, split evenly over the two NUMA nodes (default 1024).
# Exit status: COMMAND's, or 124 when the guest timed out, or 125 when the set-up failed or
# the guest died before the command finished (the tail of the serial log is printed for
# 124 and for a guest that died); 2 for a usage error.
#
# The guest (see init.sh) is the Debian kernel prepared by setup.sh, under QEMU TCG (KVM
# hangs on this machine kind), with:
#   - 2 vCPUs on two NUMA nodes (cpu 0 on node 0, cpu 1 on node 1), so NUMA binding is testable;
#   - a virtio-net NIC on a PCIe root port (Gen4 x16) of a PCIe expander bridge tied to NUMA
#     node 1, so sysfs has a real PCIe link and the NIC reports numa_node 1 / local_cpulist 1
#     (rxe0 itself is a virtual device whose parent netdev, eth0, is that NIC). No emulated
#     switch: QEMU's XIO3130 ports train at 2.5 GT/s x1 (2 Gb/s), below rxe0's nominal
#     2.5 Gb/s, which would make no path affinitive; the dgx-a100 fixture covers switches;
#   - a virtual VT-d IOMMU (intel-iommu, booted with intel_iommu=on): every PCI device, the
#     NIC included, sits in a translated (DMA-FQ) IOMMU group, so the real IOMMU discovery
#     reads translated groups from a real kernel (the 6.1 kernel has no dmar perf PMU, which
#     came in 6.3: IOTLB counters read as unavailable);
#   - the host root shared read-only over virtio-9p and chrooted into, so host-built binaries
#     run unchanged, with the guest's own /tmp, /run, /proc, /sys, /dev and /mnt over it;
#   - this checkout (the repository holding this script) shared read-only over virtio-9p at
#     a fixed point of the guest's own, /run/hostping/checkout ($HOSTPING_GUEST_CHECKOUT), so
#     the guest sees it wherever it lies, /tmp included. The command runs there: a working
#     directory inside the checkout, and every argument and exported variable that is a path
#     inside it (the whole word, e.g. target/debug/hostping's absolute path), are rewritten
#     to the same place under the mount point. Other paths mean the host's, as the chroot
#     shows them: a working directory the guest covers (/tmp, /run, ...) outside the
#     checkout is refused;
#   - the command runs as root, with the caller's PATH and HOME=/tmp/home.
set -euo pipefail
shopt -s extglob

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { echo "guest-run: $*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

out="" timeout_s=300 mem=1024 kernel_flavour=default
while [ $# -gt 0 ]; do
    case "$1" in
    --kernel) kernel_flavour=${2:?--kernel needs default or odp}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --mem) mem=${2:?--mem needs MiB}; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage 0 ;;
    *) say "unknown option $1"; usage ;;
    esac
done
[ $# -gt 0 ] || { say "no command given"; usage; }
[[ "$timeout_s" =~ ^[0-9]+$ && "$timeout_s" -gt 0 ]] || die "--timeout wants a positive number of seconds"
[[ "$mem" =~ ^[0-9]+$ && "$mem" -ge 256 ]] || die "--mem wants MiB, 256 or more"
case "$kernel_flavour" in
default | odp) ;;
*) die "--kernel wants default or odp, not $kernel_flavour" ;;
esac
half=$((mem / 2)) # per NUMA node; -m must equal the sum of the nodes' memory
mem=$((half * 2))

# -- where the guest sees host paths ---------------------------------------------------------
# The checkout is shared on its own (see the header); the rest of the host is the chroot,
# less the folders the guest mounts afresh.
guest_checkout=/run/hostping/checkout
checkout=$(cd "$here/../.." && pwd -P)
checkout_as_called=$(cd "$here/../.." && pwd) # the same folder reached through a symlink
covered() { case "$1/" in /tmp/* | /run/* | /proc/* | /sys/* | /dev/* | /mnt/*) return 0 ;; esac; return 1; }
# in_guest PATH: sets REPLY to PATH as the guest sees it (paths inside the checkout move to
# the mount point; anything else is unchanged). Returns 1 when PATH is not in the checkout.
in_guest() {
    local p
    for p in "$checkout" "$checkout_as_called"; do
        if [ "$1" = "$p" ] || [[ "$1" == "$p"/* ]]; then
            REPLY=$guest_checkout${1#"$p"}
            return 0
        fi
    done
    REPLY=$1
    return 1
}
if ! in_guest "$(pwd -P)" && covered "$REPLY"; then
    die "the guest mounts its own /tmp, /run, /proc, /sys, /dev and /mnt, so it cannot see $REPLY; run from the checkout ($checkout) or a folder outside those"
fi
cwd=$REPLY
args=()
for a in "$@"; do
    if ! in_guest "$a" && [[ "$a" == /* ]] && covered "$a" && [[ "$a/" != /mnt/* ]] && [ -e "$a" ]; then
        top=${a#/}
        say "note: the guest mounts its own /${top%%/*}, so the host's $a is not what it sees"
    fi
    args+=("$REPLY")
done

t_start=$EPOCHREALTIME
"$here/setup.sh" --kernel "$kernel_flavour" || { say "error: scripts/guest/setup.sh failed"; exit 125; }
guest_cache=${HOSTPING_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostping-guest}
[ "$kernel_flavour" = odp ] && guest_cache=$guest_cache/odp
# shellcheck disable=SC1091
. "$guest_cache/guest.env"

if [ -z "$out" ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/hostping-guest.XXXXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
rm -f "$out/status" "$out/command.log" "$out/serial.log" "$out/job.sh"

# -- the job: a bash script the guest runs chrooted into the host root ------------------------
# Environment: a clean one, plus the caller's PATH (host paths are valid in the chroot) and
# the variables tests are likely to need.
# shellcheck disable=SC2016 # the $ in the single-quoted lines are for the guest's bash
{
    echo '#!/bin/bash'
    echo '# Written by scripts/guest/run.sh; run by the guest init chrooted into the host root.'
    printf 'export PATH=%q\n' "$PATH:/usr/local/sbin:/usr/sbin:/sbin"
    echo "export HOME=/tmp/home HOSTPING_GUEST=1 HOSTPING_GUEST_OUT=/mnt HOSTPING_GUEST_CHECKOUT=$guest_checkout"
    while IFS= read -r name; do
        in_guest "${!name}" || true
        printf 'export %s=%q\n' "$name" "$REPLY"
    done < <(compgen -e | grep -E '^(HOSTPING_|RUST_|CARGO_)|^(LANG|LC_ALL|NO_COLOR|TZ)$' |
             grep -vE '^HOSTPING_GUEST(_OUT|_CACHE|_CHECKOUT)?$' || true)
    echo 'mkdir -p "$HOME"'
    printf 'cmd=('; printf ' %q' "${args[@]}"; printf ' )\n'
    printf 'cd -- %q || { echo 126 >/mnt/status; exit; }\n' "$cwd"
    # stdout and stderr go, merged, to the serial console (run.sh shows it live) and to
    # command.log; stdin is empty so nothing can wait for a terminal.
    echo '( exec "${cmd[@]}" ) </dev/null 2>&1 | tee /mnt/command.log'
    echo 'echo "${PIPESTATUS[0]}" >/mnt/status'
} >"$out/job.sh"

# -- QEMU --------------------------------------------------------------------------------
# shellcheck disable=SC2054 # the commas belong to QEMU's option syntax
qemu=(
    qemu-system-x86_64
    -M q35 -accel tcg -cpu max -smp 2 -m "$mem"
    -nodefaults -nographic -no-reboot -no-user-config -serial stdio
    -kernel "$KERNEL" -initrd "$INITRD" -append 'console=ttyS0 panic=-1 quiet intel_iommu=on'
    # a virtual IOMMU (VT-d), before the PCI devices it translates for: the guest's devices
    # get IOMMU groups in translated (DMA) mode, which the real IOMMU discovery reads
    -device intel-iommu,intremap=off
    # two NUMA nodes, one vCPU and half the memory each
    -object "memory-backend-ram,id=m0,size=${half}M" -numa "node,nodeid=0,cpus=0,memdev=m0"
    -object "memory-backend-ram,id=m1,size=${half}M" -numa "node,nodeid=1,cpus=1,memdev=m1"
    # NIC: expander host bridge on node 1 (bus 0x80) -> root port (Gen4 x16) -> NIC
    -device pxb-pcie,id=pxb1,bus_nr=128,numa_node=1,bus=pcie.0
    -device pcie-root-port,id=rp1,bus=pxb1,chassis=1,slot=1,x-speed=16,x-width=16
    -netdev user,id=n0
    -device virtio-net-pci,netdev=n0,bus=rp1,mac=52:54:00:12:34:56,romfile=
    # host root, read-only; out folder, writable (multidevs=remap: both span several host
    # file systems, whose inode numbers would otherwise collide in the guest)
    -fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot,bus=pcie.0
    # (a comma in a path is written twice in QEMU's option syntax)
    -fsdev "local,id=fsout,path=${out//,/,,},security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=fsout,mount_tag=hostout,bus=pcie.0
    # the checkout, read-only, mounted at $guest_checkout by init.sh
    -fsdev "local,id=fscheckout,path=${checkout//,/,,},security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=fscheckout,mount_tag=checkout,bus=pcie.0
)

# boot: runs the guest once (QEMU, bounded by what is left of --timeout), setting
# qemu_status, t_qemu, t_run (the command started) and t_end.
boot() {
    local left
    left=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" -v t="$timeout_s" \
        'BEGIN { l = t - (b - a); print (l < 1 ? 1 : int(l)) }')
    say "booting $KVER (TCG, 2 vCPUs on 2 NUMA nodes, ${mem} MiB), out folder $out"
    t_qemu=$EPOCHREALTIME t_run="" t_done=""
    set +e
    # Serial console: shown live, kept in serial.log (without the console's carriage
    # returns); the progress lines of init.sh give the boot and command timings.
    # --foreground keeps QEMU in the terminal's process group, so Ctrl-C stops it too
    # instead of orphaning it.
    timeout --foreground --kill-after=10 "$left" "${qemu[@]}" </dev/null 2>&1 |
        while IFS= read -r line; do
            line=${line%$'\r'}
            # Firmware clears the screen with escape sequences: keep the log plain text.
            line=${line//$'\e'@(c|\[*([0-9;?])[a-zA-Z])/}
            case "$line" in
            *"guest-init: running"*) echo "$EPOCHREALTIME" >"$out/.t_run" ;;
            *"guest-init: done"*) echo "$EPOCHREALTIME" >"$out/.t_done" ;;
            esac
            printf '%s\n' "$line"
            printf '%s\n' "$line" >>"$out/serial.log"
        done
    qemu_status=${PIPESTATUS[0]}
    set -e
    t_end=$EPOCHREALTIME
    [ -f "$out/.t_run" ] && t_run=$(<"$out/.t_run")
    [ -f "$out/.t_done" ] && t_done=$(<"$out/.t_done")
    rm -f "$out/.t_run" "$out/.t_done"
}
boot
# A kernel that died while booting, before the command started, failed under emulation
# (TCG on a loaded host has crashed the 7.3 kernel in its own code patching, an int3 in
# __hrtimer_start_range_ns): nothing under test ran, so the guest boots once more, its
# first console kept as serial-boot1.log.
if [ -z "$t_run" ] && [ ! -s "$out/status" ] && [ "$qemu_status" -ne 124 ] &&
    [ "$qemu_status" -ne 137 ] && grep -q 'Kernel panic' "$out/serial.log" 2>/dev/null; then
    say "the kernel died while booting (see $out/serial-boot1.log): booting again"
    mv "$out/serial.log" "$out/serial-boot1.log"
    boot
fi

timing="setup+start $(secs "$t_start" "$t_qemu") s"
[ -n "$t_run" ] && timing+=", boot $(secs "$t_qemu" "$t_run") s"
[ -n "$t_run" ] && [ -n "$t_done" ] && timing+=", command $(secs "$t_run" "$t_done") s"
timing+=", total $(secs "$t_start" "$t_end") s"

tail_serial() {
    say "last lines of $out/serial.log:"
    tail -n 25 "$out/serial.log" 2>/dev/null | sed 's/^/    /' >&2
}
if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
    say "TIMEOUT: the guest did not finish within $timeout_s s ($timing)"
    tail_serial
    exit 124
fi
if [ ! -s "$out/status" ]; then
    say "the guest stopped before the command finished (QEMU status $qemu_status; $timing)"
    tail_serial
    exit 125
fi
status=$(<"$out/status")
say "command exited with status $status ($timing); output in $out"
exit "$status"
