#!/usr/bin/env bash
# capture-sysfs.sh DEST: copies the parts of sysfs (and procfs) that Hostping's topology
# discovery reads into DEST, as a test fixture: DEST/sys/... and DEST/proc/... mirror the
# live paths.
#   - symlinks stay symlinks with their (relative) sysfs targets, so under DEST they resolve
#     inside DEST: sys/class/infiniband/*, sys/class/net/*, sys/bus/pci/devices/*, and the
#     device, driver, physfn and virtfn* links of the captured devices (a driver link's
#     target, sys/bus/pci/drivers/NAME, is created holding just an empty `uevent`);
#   - attribute files become plain text files with the attribute's content; files that
#     cannot be read (write-only, or EINVAL such as gid_attrs/ndevs/N of an empty GID entry,
#     or speed of a virtual interface) are skipped and listed;
#   - a PCI device's config space is copied as its first 256 bytes (binary).
# What is captured: InfiniBand devices (node and port attributes, 16 GIDs with their types
# and netdevs, hw_counters and counters), network interfaces (a few attributes + device),
# every PCI device (ids, class, NUMA node, local CPUs, link speed and width, bridge bus
# numbers, SR-IOV counts), NUMA nodes (cpulist, meminfo, distance and the node masks), and
# the hostname. It reads the live system, so it works on a real host as well.
#
# Written to run inside the Soft-RoCE guest under TCG, where starting a program costs tens
# of milliseconds (more when the host is busy) while a bash builtin costs well under one:
#   - attribute files are read with bash's `read` builtin, not a cat per file (and not tar:
#     sysfs reports every attribute as 4096 bytes long);
#   - directories, links and config spaces are each created by one command for all of them;
#   - the copy is built in a local staging folder and copied to DEST in one `cp -R`: DEST is
#     typically the guest's 9p out folder, where every small create and write is a round trip
#     to QEMU (writing the files there directly took ~20 s).
# About 10 processes in all. Usage in the guest:
#   scripts/guest/run.sh --out DIR -- scripts/guest/capture-sysfs.sh /mnt/fixture
set -euo pipefail
shopt -s nullglob

[ $# -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
final=$1
[[ "$final" == /* ]] || final=$PWD/$final
start=${EPOCHREALTIME/./}
if [ -e "$final/sys" ] || [ -e "$final/proc" ]; then
    echo "capture-sysfs: $final already has sys/ or proc/; remove them or pick another DEST" >&2
    exit 2
fi
stage=${TMPDIR:-/tmp}/capture-sysfs.$$
trap 'rm -rf "$stage"' EXIT
dest=$stage/tree # where the copy is built; every captured path P lands at $dest$P

# elapsed: seconds since start, with builtins only.
elapsed() {
    local us=$((${EPOCHREALTIME/./} - start))
    printf '%d.%02d' $((us / 1000000)) $((us % 1000000 / 10000))
}
lap() { [ -z "${HOSTPING_CAPTURE_DEBUG:-}" ] || echo "capture-sysfs: $1 after $(elapsed) s" >&2; }

files=()    # attribute files to copy as text (canonical paths, no symlink in them)
binfiles=() # PCI config spaces
links=()    # symlinks to recreate (each one's parent directory is canonical)
dirs=()     # directories to create even if nothing is copied into them
drivers=()  # driver directories that driver links point to

# canon_into PATH: sets REPLY to the canonical path of directory PATH, with builtins only
# (no readlink/realpath process, no subshell).
canon_into() {
    local old=$PWD
    cd -P -- "$1" && REPLY=$PWD
    cd -- "$old"
}
# add_files DIR NAME...: queue DIR/NAME for every NAME that is a regular file.
add_files() {
    local d=$1 n
    shift
    for n in "$@"; do
        [ -f "$d/$n" ] && [ ! -L "$d/$n" ] && files+=("$d/$n")
    done
    return 0
}
# add_links DIR NAME...: queue DIR/NAME for every NAME that is a symlink.
add_links() {
    local d=$1 n
    shift
    for n in "$@"; do
        [ -L "$d/$n" ] && links+=("$d/$n")
    done
    return 0
}
gid_indices=({0..15})

# -- InfiniBand devices -----------------------------------------------------------------
for cls in /sys/class/infiniband/*; do
    links+=("$cls")
    canon_into "$cls"
    d=$REPLY
    add_files "$d" node_type node_guid sys_image_guid node_desc fw_ver hw_rev hca_type board_id parent
    add_links "$d" device
    for p in "$d"/ports/*; do
        add_files "$p" state phys_state rate link_layer lid lid_mask_count sm_lid sm_sl cap_mask
        add_files "$p/gids" "${gid_indices[@]}"
        add_files "$p/gid_attrs/types" "${gid_indices[@]}"
        add_files "$p/gid_attrs/ndevs" "${gid_indices[@]}"
        for c in "$p"/hw_counters/* "$p"/counters/*; do add_files "${c%/*}" "${c##*/}"; done
    done
done

# -- network interfaces -------------------------------------------------------------------
for cls in /sys/class/net/*; do
    links+=("$cls")
    canon_into "$cls"
    d=$REPLY
    add_files "$d" address addr_len broadcast ifindex iflink mtu operstate carrier speed duplex \
        type dev_id dev_port
    add_links "$d" device
    if [ -L "$d/device" ]; then
        # The device the interface hangs off (a PCI function, or e.g. a virtio device whose
        # parent is the PCI function): a few identifying attributes.
        canon_into "$d/device"
        dirs+=("$REPLY")
        [ -f "$REPLY/config" ] || add_files "$REPLY" vendor device modalias
    fi
done

# -- PCI devices --------------------------------------------------------------------------
for cls in /sys/bus/pci/devices/*; do
    links+=("$cls")
    canon_into "$cls"
    d=$REPLY
    add_files "$d" vendor device class revision subsystem_vendor subsystem_device \
        numa_node local_cpulist local_cpus \
        current_link_speed current_link_width max_link_speed max_link_width \
        secondary_bus_number subordinate_bus_number sriov_numvfs sriov_totalvfs
    add_links "$d" driver physfn
    for v in "$d"/virtfn*; do links+=("$v"); done
    if [ -L "$d/driver" ]; then
        canon_into "$d/driver"
        drivers+=("$REPLY")
    fi
    [ -f "$d/config" ] && binfiles+=("$d/config")
done

# -- NUMA nodes and hostname ------------------------------------------------------------------
add_files /sys/devices/system/node online possible has_memory has_cpu has_normal_memory
for n in /sys/devices/system/node/node[0-9]*; do
    add_files "$n" cpulist meminfo distance
done
add_files /proc/sys/kernel hostname

lap "listed"
# -- write ------------------------------------------------------------------------------------
# Directories first, in one mkdir: every parent of a file or link, plus the extra ones.
declare -A mk=(["$final"]=1 ["$dest"]=1)
for f in "${files[@]}" "${binfiles[@]}" "${links[@]}"; do mk["$dest${f%/*}"]=1; done
for f in "${dirs[@]}" "${drivers[@]}"; do mk["$dest$f"]=1; done
mkdir -p "${!mk[@]}"
# A driver link points at /sys/bus/pci/drivers/NAME, whose contents are not captured. The
# folder is created so that the link resolves, with an empty `uevent` (every sysfs driver
# folder has one; it is write-only there) so that git keeps the folder.
for f in "${drivers[@]}"; do : >"$dest$f/uevent"; done

# Attribute files: read with the builtin, keep only what reads without error. `read -d ''`
# reads to the end of the file and returns 1 there, so errors are told apart by their message.
errf=$stage/read-error
copied=0 skipped=()
for f in "${files[@]}"; do
    content=""
    { IFS= read -r -d '' content <"$f" || true; } 2>"$errf"
    if [ -s "$errf" ]; then
        skipped+=("$f")
        continue
    fi
    printf '%s' "$content" >"$dest$f"
    copied=$((copied + 1))
done

# Config spaces: sysfs gives them their true size (256, or 4096 with PCIe extended space),
# so cp copies them whole; then cut to the first 256 bytes.
if [ ${#binfiles[@]} -gt 0 ]; then
    cp --parents -- "${binfiles[@]}" "$dest/"
    truncate -s '<256' -- "${binfiles[@]/#/$dest}"
fi

# Symlinks: one cp for all of them (-P copies the link itself, --parents keeps the path).
if [ ${#links[@]} -gt 0 ]; then
    cp -P --parents -- "${links[@]}" "$dest/"
fi
lap "written"

# -- verify ------------------------------------------------------------------------------------
# Every link must resolve to a directory inside the copy.
bad=0
for l in "${links[@]}"; do
    if canon_into "$dest$l" 2>/dev/null && [[ "$REPLY" == "$dest"/* ]]; then
        continue
    fi
    echo "capture-sysfs: link $l does not resolve inside the copy" >&2
    bad=$((bad + 1))
done
# Spot check with other readers: a few copies equal what cat reads from the live files
# (meminfo is left out: it changes between two reads).
check=()
for f in "${files[@]}"; do
    case "$f" in */meminfo | */hw_counters/*) ;; *) check+=("$f") ;; esac
done
check=("${check[@]:0:4}" "${check[@]: -4}")
if ! cmp -s <(cat -- "${check[@]}") <(cat -- "${check[@]/#/$dest}"); then
    echo "capture-sysfs: the copies of ${check[*]} differ from the live files" >&2
    bad=$((bad + 1))
fi
lap "verified"

# Publish: one recursive copy (links stay links). -R, not -a: preserving modes and times
# would add round trips per file on 9p, and the fixture does not need them.
cp -R "$dest/." "$final/"

echo "capture-sysfs: $copied attribute files, ${#binfiles[@]} config spaces, ${#links[@]} links into $final in $(elapsed) s" >&2
if [ ${#skipped[@]} -gt 0 ]; then
    echo "capture-sysfs: skipped ${#skipped[@]} unreadable files:" >&2
    printf '    %s\n' "${skipped[@]}" >&2
fi
[ "$bad" -eq 0 ] || { echo "capture-sysfs: $bad problems" >&2; exit 1; }
