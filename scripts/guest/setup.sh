#!/usr/bin/env bash
# setup.sh: prepares, once, everything the Soft-RoCE (rdma_rxe) QEMU guest needs:
#   - the host packages (QEMU, busybox, rdma-core, perftest, ...), installed when missing;
#   - the Debian kernel that linux-image-amd64 depends on (not -cloud-amd64: that flavour has
#     no rdma_rxe), downloaded with `apt-get download` and unpacked with `dpkg-deb -x` into a
#     cache folder outside the repository (the tree is ~400-500 MB);
#   - a small busybox initramfs with the rxe, virtio and 9p modules and scripts/guest/init.sh.
#
# Usage: scripts/guest/setup.sh [--kernel default|odp]
#   --kernel default  the kernel of this machine's Debian release (bookworm: 6.1), whose rxe
#                     has no on-demand paging (ODP);
#   --kernel odp      the newest kernel of Debian trixie-backports, whose rxe has ODP (rxe ODP
#                     came in Linux 6.14; Debian builds CONFIG_INFINIBAND_ON_DEMAND_PAGING=y).
#                     Its package lists are fetched into the cache with a private apt
#                     configuration (this machine's apt sources are not touched); apt checks
#                     their signatures against the Debian archive keyring as usual.
#   Cache folder: $HOSTPING_GUEST_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/hostping-guest;
#   the odp kernel lives in its sub-folder odp/.
#   Writes guest.env (KVER, KERNEL, INITRD) in its cache folder for run.sh to source.
#   Idempotent: a second run downloads nothing and finishes in well under a second when the
#   kernel and the inputs of the initramfs (init.sh, this script, module list) are unchanged.
#   All messages go to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${HOSTPING_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostping-guest}
start=$EPOCHREALTIME

say() { echo "guest-setup: $*" >&2; }
die() { say "error: $*"; exit 1; }
elapsed() { awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

flavour=default
case "${1:-}" in
"") ;;
--kernel)
    flavour=${2:?--kernel needs default or odp}
    [ "$flavour" = default ] || [ "$flavour" = odp ] || die "--kernel wants default or odp, not $flavour"
    ;;
*) die "unknown argument $1 (usage: setup.sh [--kernel default|odp])" ;;
esac

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# Kernel packages come through `apt` with the options in apt_opts: none for the default
# kernel (this machine's sources); for the odp kernel, a private configuration whose only
# source is trixie-backports, with lists and caches in the cache folder.
apt_opts=()
if [ "$flavour" = odp ]; then
    cache=$cache/odp
    private=$cache/apt
    mkdir -p "$private"/{lists/partial,cache/archives/partial,parts}
    echo "deb http://deb.debian.org/debian trixie-backports main" >"$private/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$private/sources.list" -o "Dir::Etc::SourceParts=$private/parts"
              -o "Dir::State::Lists=$private/lists" -o "Dir::Cache=$private/cache")
    [ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
fi
apt_updated=""
apt_update() {
    # Only once per run, and only when something is actually missing.
    [ -n "$apt_updated" ] && return 0
    if [ "$flavour" = odp ]; then
        say "apt-get update (trixie-backports, private lists)"
        apt-get "${apt_opts[@]}" update -qq >&2
    else
        say "apt-get update"
        $sudo apt-get update -qq >&2
    fi
    apt_updated=1
}

# ---------------------------------------------------------------------------------------
# 1. Host packages. One dpkg-query call for all of them keeps the cached path fast.
# ---------------------------------------------------------------------------------------
packages=(qemu-system-x86 busybox-static rdma-core ibverbs-utils ibverbs-providers
          libibverbs-dev perftest iproute2 cpio kmod xz-utils zstd)
missing=()
installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null || true)
for p in "${packages[@]}"; do
    grep -qE "^$p ii" <<<"$installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing missing packages: ${missing[*]}"
    apt_update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
fi

# ---------------------------------------------------------------------------------------
# 2. Which kernel package? linux-image-amd64 is a meta package depending on the current
#    ABI package (linux-image-6.1.0-NN-amd64 on bookworm). Resolving it needs apt lists;
#    a clean CI machine may have none, so update once if the query comes back empty. When
#    apt cannot answer at all (offline, no sudo) fall back to the kernel already cached.
# ---------------------------------------------------------------------------------------
mkdir -p "$cache"
# Concurrent runs (parallel CI jobs) share the cache: one set-up at a time.
exec 9>"$cache/.lock"
flock 9
resolve_kernel_pkg() {
    apt-cache "${apt_opts[@]}" depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ { print $2; exit }' || true
}
# apt-cache takes about a second here (no binary package cache), so remember the answer
# for as long as the apt lists and sources are unchanged (apt-get update renames files
# into /var/lib/apt/lists, which changes the folder's mtime).
lists_dirs=(/var/lib/apt/lists /etc/apt /etc/apt/sources.list.d)
[ "$flavour" = odp ] && lists_dirs=("$private/lists")
apt_key=$(stat -c '%Y' "${lists_dirs[@]}" 2>/dev/null | tr '\n' ' ')
kpkg="" kpkg_version=""
if [ -s "$cache/apt-resolved" ]; then
    read -r key_seen kpkg kpkg_version <"$cache/apt-resolved" || true
    [ "$key_seen" = "${apt_key// /_}" ] || kpkg="" kpkg_version=""
fi
if [ -z "$kpkg" ]; then
    kpkg=$(resolve_kernel_pkg)
    if [ -z "$kpkg" ] && [ ! -s "$cache/guest.env" ]; then
        apt_update || true
        kpkg=$(resolve_kernel_pkg)
        apt_key=$(stat -c '%Y' "${lists_dirs[@]}" 2>/dev/null | tr '\n' ' ')
    fi
    if [ -n "$kpkg" ]; then
        kpkg_version=$(apt-cache "${apt_opts[@]}" policy "$kpkg" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')
        echo "${apt_key// /_} $kpkg $kpkg_version" >"$cache/apt-resolved"
    elif [ -s "$cache/guest.env" ]; then
        # Offline, or no apt lists and no way to update them: keep using what we have.
        say "apt cannot resolve linux-image-amd64; using the cached kernel"
        # shellcheck disable=SC1091,SC2153 # guest.env is written below (KPKG, KPKG_VERSION)
        kpkg=$(. "$cache/guest.env" && echo "$KPKG")
        # shellcheck disable=SC1091,SC2153
        kpkg_version=$(. "$cache/guest.env" && echo "$KPKG_VERSION")
    else
        die "cannot resolve the kernel package behind linux-image-amd64 (apt lists missing?)"
    fi
fi
kver=${kpkg#linux-image-}            # e.g. 6.1.0-56-amd64
kdir="$cache/kernel-$kver"           # unpacked packages: boot/, lib/modules/<kver>/, usr/
stamp="$kdir/.unpacked-$kpkg_version"

# ---------------------------------------------------------------------------------------
# 3. Download and unpack the kernel (cold path only). Unpacking into a temporary folder and
#    renaming it at the end means an interrupted run never leaves a half tree that looks
#    complete. Newer Debian kernels split the ABI package into linux-binary-<abi> (the
#    image), linux-modules-<abi> and linux-base-<abi>, and put everything under usr/lib/
#    modules/<abi>/: fetch those parts too, and move the tree to the layout of the older
#    packages (boot/vmlinuz-<abi>, boot/config-<abi>, lib/modules/<abi>/), which this
#    machine's depmod and modprobe read.
# ---------------------------------------------------------------------------------------
if [ ! -e "$stamp" ]; then
    say "fetching $kpkg $kpkg_version into $cache"
    tmp=$(mktemp -d "$cache/.download.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    # As root, apt's download sandbox user (_apt) cannot write into our folder; tell apt not
    # to drop privileges instead of printing a warning.
    sandbox=()
    [ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)
    parts=("$kpkg")
    while read -r part; do parts+=("$part"); done < <(
        apt-cache "${apt_opts[@]}" depends "$kpkg" 2>/dev/null |
            awk -v abi="$kver" '$1 == "Depends:" && ($2 == "linux-binary-" abi ||
                $2 == "linux-modules-" abi || $2 == "linux-base-" abi) { print $2 }')
    if ! (cd "$tmp" && apt-get download -qq "${apt_opts[@]}" "${sandbox[@]}" "${parts[@]}" >&2); then
        apt_update
        (cd "$tmp" && apt-get download -qq "${apt_opts[@]}" "${sandbox[@]}" "${parts[@]}" >&2)
    fi
    for deb in "$tmp"/*.deb; do
        say "unpacking $(basename "$deb")"
        dpkg-deb -x "$deb" "$tmp/tree"
    done
    merged="$tmp/tree/usr/lib/modules/$kver"
    if [ -d "$merged" ] && [ ! -d "$tmp/tree/lib/modules/$kver" ]; then
        mkdir -p "$tmp/tree/lib/modules" "$tmp/tree/boot"
        mv "$merged" "$tmp/tree/lib/modules/$kver"
        for f in vmlinuz config System.map; do
            [ -e "$tmp/tree/lib/modules/$kver/$f" ] && mv "$tmp/tree/lib/modules/$kver/$f" "$tmp/tree/boot/$f-$kver"
        done
    fi
    depmod -b "$tmp/tree" "$kver"
    touch "$tmp/tree/.unpacked-$kpkg_version"
    # Drop trees of older kernel ABIs: each costs ~0.5 GB.
    for old in "$cache"/kernel-*; do
        [ -e "$old" ] && [ "$old" != "$kdir" ] && { say "removing old $old"; rm -rf "$old"; }
    done
    rm -rf "$kdir"
    mv "$tmp/tree" "$kdir"
    rm -rf "$tmp"
    trap - EXIT
fi
[ -f "$kdir/boot/vmlinuz-$kver" ] || die "no kernel image in $kdir/boot"

# The bzImage spends ~4 s of TCG time decompressing itself at every boot. QEMU can instead
# load the uncompressed ELF vmlinux directly through its PVH entry point (CONFIG_PVH), which
# roughly halves the boot. Extract it once: the boot header (Documentation/arch/x86/boot.rst)
# gives where the compressed payload lies (payload_offset at 0x248 and payload_length at
# 0x24c, from the protected-mode code after the (setup_sects + 1) * 512 setup bytes); its last
# 4 bytes are the uncompressed size, not part of the stream. Debian's 6.1 kernels compress it
# with xz, newer ones with zstd. Any failure just means booting the bzImage.
le32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
extract_vmlinux() {
    local image=$1 sects start len
    sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$image" | tr -d ' ')
    [ "$sects" -eq 0 ] && sects=4
    start=$(( (sects + 1) * 512 + $(le32 "$image" $((0x248))) ))
    len=$(( $(le32 "$image" $((0x24c))) - 4 ))
    # (process substitution, not a pipe: the decompressor may stop reading early, and
    # tail's SIGPIPE would fail the pipeline under pipefail)
    case "$(od -An -tx1 -j "$start" -N4 "$image" | tr -d ' ')" in
    fd377a58) xz -dc --single-stream < <(tail -c +$((start + 1)) "$image" | head -c "$len") ;;
    28b52ffd) zstd -dcq < <(tail -c +$((start + 1)) "$image" | head -c "$len") ;;
    *) return 1 ;;
    esac
}
kernel="$kdir/boot/vmlinuz-$kver"
if grep -q '^CONFIG_PVH=y' "$kdir/boot/config-$kver" 2>/dev/null; then
    if [ ! -s "$kdir/vmlinux" ]; then
        if extract_vmlinux "$kernel" >"$kdir/vmlinux.tmp" 2>/dev/null &&
            [ "$(head -c4 "$kdir/vmlinux.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
            mv "$kdir/vmlinux.tmp" "$kdir/vmlinux"
        else
            rm -f "$kdir/vmlinux.tmp"
            say "note: could not extract vmlinux from the bzImage; booting the bzImage (slower)"
        fi
    fi
    [ -s "$kdir/vmlinux" ] && kernel="$kdir/vmlinux"
fi

# ---------------------------------------------------------------------------------------
# 4. The initramfs: busybox, init.sh, and the modules in load order. Rebuilt only when one
#    of its inputs changes (kernel, this script, init.sh, busybox).
# ---------------------------------------------------------------------------------------
# Modules the guest loads. crc32_generic first: rxe asks the crypto layer for "crc32" when
# a device is created, and in this kernel that is a module; without it `rdma link add` fails.
# rdma_rxe/ib_uverbs/ib_core: the verbs device. rdma_ucm: the rdma_cm user interface
# (/dev/infiniband/rdma_cm), for tools that connect through rdma_cm. virtio_pci/virtio_net:
# the NIC behind the emulated PCIe switch. 9p/9pnet_virtio: the host root and the out folder.
# udp_tunnel/ip6_udp_tunnel: rxe's UDP encapsulation (RoCE v2). veth/sch_netem: the cable
# between the two rxe devices of the pair probe's test, and its delay (pair-net.sh).
# bridge: the switch joining the four hosts of hosts-net.sh.
modules=(crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe rdma_ucm
         virtio_pci virtio_net 9pnet_virtio 9p veth sch_netem bridge)
busybox=$(command -v busybox) || die "busybox not found"
key=$( { echo "$kver $kpkg_version ${modules[*]}"; cat "$here/init.sh" "${BASH_SOURCE[0]}";
         stat -c '%s %Y' "$busybox"; } | sha256sum | cut -c1-16)
initrd="$cache/initramfs-$kver-$key.cpio.gz"

if [ ! -s "$initrd" ]; then
    say "building initramfs for $kver"
    root=$(mktemp -d "$cache/.initramfs.XXXXXX")
    trap 'rm -rf "$root"' EXIT
    mkdir -p "$root"/{bin,dev,proc,sys,tmp,host,etc,"lib/modules/$kver"}
    cp "$busybox" "$root/bin/busybox"
    # One symlink per applet. `busybox --list` also names "busybox": linking that would
    # replace the binary with a link to itself (ELOOP at /init).
    for applet in $("$root/bin/busybox" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
    done
    # Dependencies come from the kernel's own modules.dep, already in load order; keep the
    # first occurrence of each module. "builtin X" lines need nothing.
    : >"$root/etc/modules.list"
    for m in "${modules[@]}"; do
        if ! deps=$(modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null); then
            # crc32_generic may be built in, or gone in a newer kernel: not fatal there.
            [ "$m" = crc32_generic ] && { say "note: no module $m in $kver"; continue; }
            die "module $m not found in $kver"
        fi
        awk '$1 == "insmod" { print $2 }' <<<"$deps" | while read -r ko; do
            rel=${ko#"$kdir"/}
            rel=/${rel#/}
            # busybox's insmod takes plain modules: newer kernels ship them xz-compressed.
            case "$rel" in
            *.ko.xz) rel=${rel%.xz} unpack=(xz -dc) ;;
            *.ko.zst) rel=${rel%.zst} unpack=(zstd -dcq) ;;
            *) unpack=(cat) ;;
            esac
            grep -qxF "$rel" "$root/etc/modules.list" && continue
            mkdir -p "$root$(dirname "$rel")"
            "${unpack[@]}" "$ko" >"$root$rel"
            echo "$rel" >>"$root/etc/modules.list"
        done
    done
    nmod=$(wc -l <"$root/etc/modules.list")
    install -m 0755 "$here/init.sh" "$root/init"
    echo "$kver" >"$root/etc/kernel-version"
    # newc format, owned by root whoever builds it; gzip -1: the kernel unpacks it in a
    # blink and the image is only a few MB anyway.
    (cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
        gzip -1 >"$initrd.tmp"
    mv "$initrd.tmp" "$initrd"
    rm -rf "$root"
    trap - EXIT
    # Older initramfs images are useless now.
    for old in "$cache"/initramfs-*.cpio.gz; do
        [ "$old" = "$initrd" ] || rm -f "$old"
    done
    say "initramfs: $(du -h "$initrd" | cut -f1), $nmod modules"
fi

# ---------------------------------------------------------------------------------------
# 5. Hand the result to run.sh.
# ---------------------------------------------------------------------------------------
cat >"$cache/guest.env.tmp" <<EOF
KPKG=$kpkg
KPKG_VERSION=$kpkg_version
KVER=$kver
KERNEL=$kernel
INITRD=$initrd
EOF
mv "$cache/guest.env.tmp" "$cache/guest.env"
say "ready in $(elapsed) s: kernel $kver ($kpkg_version), cache $cache"
