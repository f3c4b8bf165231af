#!/usr/bin/env python3
"""Writes sys/ and proc/ of the dgx-a100 fixture beside this script (see README.md).

Hand-built, not captured: file formats follow drivers/infiniband/core/sysfs.c,
drivers/pci/pci-sysfs.c and drivers/base/node.c as summarised in
shared/reference/linux-counters.md sections 1, 4 and 9. Run it again after editing:
it deletes and rewrites sys/ and proc/.
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTNAME = "dgx-a100-01"
# Two sockets; CPUs as on a 2 x 64-core host with SMT.
NODES = {0: ("0-63,128-191", 528174556), 1: ("64-127,192-255", 528444416)}


def write(rel, text):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(rel, target_rel, raw=None):
    """A relative symlink at rel pointing to target_rel (both relative to HERE), or with
    the literal target raw, as the kernel writes some of them."""
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    target = raw or os.path.relpath(os.path.join(HERE, target_rel), os.path.dirname(path))
    assert os.path.realpath(os.path.join(os.path.dirname(path), target)) == \
        os.path.realpath(os.path.join(HERE, target_rel))
    os.symlink(target, path)


def write_bytes(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def function(path, cls, vendor, device, node, speed=None, width=None,
             max_speed="16.0 GT/s PCIe", max_width=16, driver=None, bus_range=None,
             subsystem=(0x0000, 0x0000), ptype=None, ext=(), config_len=None, aer=None):
    """One PCI function folder at sys/devices/<path>, with its sys/bus/pci/devices link,
    its binary config space and its IOMMU group.

    ptype is the PCIe Device/Port Type (default: an endpoint when the function has link
    files, else conventional PCI without a PCI Express capability); ext the extended
    capabilities after AER (see acs_cap, ats_cap); config_len cuts config short (64: as a
    reader without CAP_SYS_ADMIN sees it); aer the nonzero AER counts (see aer_files)."""
    dev = "sys/devices/" + path
    bdf = path.rsplit("/", 1)[1]
    write(dev + "/class", "0x%06x" % cls)
    write(dev + "/vendor", "0x%04x" % vendor)
    write(dev + "/device", "0x%04x" % device)
    write(dev + "/subsystem_vendor", "0x%04x" % subsystem[0])
    write(dev + "/subsystem_device", "0x%04x" % subsystem[1])
    write(dev + "/revision", "0x00")
    write(dev + "/numa_node", str(node))
    write(dev + "/local_cpulist", NODES[node][0])
    if ptype is None and speed is not None:
        ptype = PT_ENDPOINT
    if speed is not None:
        write(dev + "/current_link_speed", speed)
        write(dev + "/current_link_width", str(width))
        write(dev + "/max_link_speed", max_speed)
        write(dev + "/max_link_width", str(max_width))
        aer_files(dev, aer or {}, ptype == PT_ROOT_PORT)
        ext = [aer_cap()] + list(ext)
    if bus_range is not None:
        write(dev + "/secondary_bus_number", str(bus_range[0]))
        write(dev + "/subordinate_bus_number", str(bus_range[1]))
    config = config_space(cls, (vendor, device), subsystem, bus_range, ptype,
                          (speed, width), (max_speed, max_width), ext)
    write_bytes(dev + "/config", config[:config_len])
    if driver is not None:
        link(dev + "/driver", "sys/bus/pci/drivers/" + driver)
    link(dev + "/subsystem", "sys/bus/pci")
    link("sys/bus/pci/devices/" + bdf, dev)
    iommu_group(dev, bdf)
    return path


# PCIe Device/Port Type, PCI_EXP_FLAGS bits 7:4 (linux-counters.md 4.2).
PT_ENDPOINT, PT_ROOT_PORT, PT_UPSTREAM, PT_DOWNSTREAM, PT_PCIE_TO_PCI, PT_RC_ENDPOINT = \
    0, 4, 5, 6, 7, 9
SPEED_CODE = {"2.5 GT/s PCIe": 1, "5.0 GT/s PCIe": 2, "8.0 GT/s PCIe": 3,
              "16.0 GT/s PCIe": 4, "32.0 GT/s PCIe": 5}
# ACS Capability: Intel root ports implement SV TB RR CR UF, the switch also DT.
ACS_CAP_ROOT, ACS_CAP_SWITCH = 0x001F, 0x005F
# SrcValid ReqRedir CmpltRedir UpstreamFwd: what the kernel enables when an IOMMU is on.
ACS_REDIRECT = 0x001D


def aer_cap():
    """Extended capability 0x0001 (AER, version 2, 0x48 bytes; registers left zero)."""
    return (0x0001, 2, b"", 0x48)


def acs_cap(capability, control):
    """Extended capability 0x000D: ACS Capability u16 at +4, ACS Control u16 at +6."""
    return (0x000D, 1, struct.pack("<HH", capability, control), 0x08)


def ats_cap(enabled):
    """Extended capability 0x000F: ATS Capability at +4 (Invalidate Queue Depth 0 = 32),
    ATS Control at +6 (bit 15 Enable, STU 0)."""
    return (0x000F, 1, struct.pack("<HH", 0x0000, 0x8000 if enabled else 0x0000), 0x08)


def config_space(cls, ids, subsystem, bus_range, ptype, current, maximum, ext):
    """Config space as pci-sysfs.c gives it to CAP_SYS_ADMIN, little-endian
    (linux-counters.md 4.3): the header, a power management capability at 0x40, for a
    PCIe function (ptype set) the PCI Express capability at 0x60 with DevCtl MPS 256 and
    LNKCAP/LNKSTA matching max_/current_link_* (4096 bytes), else 256 bytes; the extended
    capabilities ext chained from 0x100."""
    cfg = bytearray(4096 if ptype is not None else 256)
    is_bridge = cls >> 8 == BRIDGE >> 8
    struct.pack_into("<HHHH", cfg, 0x00, ids[0], ids[1], 0x0407 if is_bridge else 0x0406,
                     0x0010)  # status bit 4: a capability list
    cfg[0x09:0x0C] = cls.to_bytes(3, "little")
    cfg[0x0E] = 0x01 if is_bridge else 0x00
    if is_bridge:
        cfg[0x19], cfg[0x1A] = bus_range
    else:
        struct.pack_into("<HH", cfg, 0x2C, *subsystem)
    cfg[0x34] = 0x40
    struct.pack_into("<BBH", cfg, 0x40, 0x01, 0x60 if ptype is not None else 0x00, 0x0003)
    if ptype is not None:
        def register(link_files):
            speed, width = link_files
            return (SPEED_CODE[speed] | width << 4) if speed is not None else 0
        port = ptype in (PT_ROOT_PORT, PT_DOWNSTREAM)
        flags = 0x0002 | ptype << 4 | (0x0100 if port else 0)  # version 2, slot
        devctl = 0x2000 | 1 << 5 | 0x0010  # MRRS 512, MPS 256, relaxed ordering
        lnksta = register(current) | (0x2000 if port and current[0] else 0)  # DLL active
        lnkcap = register(maximum) if current[0] is not None else 0  # no link, no LNKCAP
        struct.pack_into("<BBHIHHIHH", cfg, 0x60, 0x10, 0x00, flags, 0x00000002, devctl,
                         0x0000, lnkcap, 0x0000, lnksta)
    offset = 0x100
    for i, (cap_id, version, registers, size) in enumerate(ext):
        following = offset + size if i + 1 < len(ext) else 0
        struct.pack_into("<I", cfg, offset, cap_id | version << 16 | following << 20)
        cfg[offset + 4:offset + 4 + len(registers)] = registers
        offset = following
    return bytes(cfg)


COR_ERRORS = ["Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover",
              "Replay Timer Timeout", "Advisory Non-Fatal", "Corrected Internal Error",
              "Header Log Overflow"]
UNCOR_ERRORS = ["Undefined", "Data Link Protocol", "Surprise Down Error", "Poisoned TLP",
                "Flow Control Protocol", "Completion Timeout", "Completer Abort",
                "Unexpected Completion", "Receiver Overflow", "Malformed TLP", "ECRC",
                "Unsupported Request", "ACS Violation", "Uncorrectable Internal Error",
                "MC Blocked TLP", "AtomicOp Egress Blocked", "TLP Prefix Blocked Error"]


def aer_files(dev, counts, root_port):
    """aer_dev_{correctable,nonfatal,fatal} ("<Name> <count>" lines, then TOTAL_ERR_*) and,
    on a root port, aer_rootport_total_err_*. counts: {"cor"|"nonfatal"|"fatal": {name: n},
    "rootport": (cor, nonfatal, fatal)}, zero where not given (linux-counters.md 4.1)."""
    for file, key, names, total in (("aer_dev_correctable", "cor", COR_ERRORS, "ERR_COR"),
                                    ("aer_dev_nonfatal", "nonfatal", UNCOR_ERRORS,
                                     "ERR_NONFATAL"),
                                    ("aer_dev_fatal", "fatal", UNCOR_ERRORS, "ERR_FATAL")):
        given = counts.get(key, {})
        assert set(given) <= set(names), given
        lines = ["%s %d" % (name, given.get(name, 0)) for name in names]
        write(dev + "/" + file, "\n".join(lines + ["TOTAL_%s %d" % (total, sum(given.values()))]))
    if root_port:
        for key, n in zip(("cor", "nonfatal", "fatal"), counts.get("rootport", (0, 0, 0))):
            write(dev + "/aer_rootport_total_err_" + key, str(n))


def iommu_group(dev, bdf):
    """A group of its own for the function, numbered in creation order, type DMA-FQ (the
    lazy default of intel_iommu=on), with the kernel's links both ways."""
    groups = os.path.join(HERE, "sys/kernel/iommu_groups")
    group = "sys/kernel/iommu_groups/%d" % (len(os.listdir(groups)) if os.path.isdir(groups) else 0)
    write(group + "/type", "DMA-FQ")
    link(group + "/devices/" + bdf, dev)
    link(dev + "/iommu_group", group)


def memory_config():
    """Two VT-d units, intel_iommu=on, no hugepages reserved, THP never
    (linux-counters.md 7): the IOTLB-miss risk of HotNets'22 section 3.1."""
    for unit in ("dmar0", "dmar1"):
        d = "sys/devices/virtual/iommu/" + unit
        write(d + "/intel-iommu/version", "1:0")
        write(d + "/intel-iommu/cap", "d2008c40660462")
        write(d + "/intel-iommu/ecap", "f050de")  # bit 2 Device-TLB, bit 6 pass-through
        link("sys/class/iommu/" + unit, d)
    write("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic "
          "root=UUID=4f9b2c1e-8d3a-4b7e-9c2f-1a2b3c4d5e6f ro intel_iommu=on pci=realloc=off "
          "quiet splash")
    total = sum(kib for _, kib in NODES.values())
    write("proc/meminfo", "\n".join("%-16s%8d%s" % (name + ":", value, unit) for name, value, unit in (
        ("MemTotal", total, " kB"), ("MemFree", total - 2 * 9123456, " kB"),
        ("MemAvailable", total - 2 * 8123456, " kB"), ("Buffers", 412332, " kB"),
        ("Cached", 6512340, " kB"), ("AnonPages", 3412088, " kB"),
        ("AnonHugePages", 0, " kB"), ("ShmemHugePages", 0, " kB"),
        ("HugePages_Total", 0, ""), ("HugePages_Free", 0, ""), ("HugePages_Rsvd", 0, ""),
        ("HugePages_Surp", 0, ""), ("Hugepagesize", 2048, " kB"), ("Hugetlb", 0, " kB"),
        ("DirectMap4k", 1203340, " kB"), ("DirectMap2M", 41940992, " kB"),
        ("DirectMap1G", 1031798784, " kB"))))
    for size in (2048, 1048576):
        pool = "sys/kernel/mm/hugepages/hugepages-%dkB/" % size
        for name in ("nr_hugepages", "free_hugepages", "resv_hugepages", "surplus_hugepages",
                     "nr_overcommit_hugepages"):
            write(pool + name, "0")
    thp = "sys/kernel/mm/transparent_hugepage/"
    write(thp + "enabled", "always madvise [never]")
    write(thp + "defrag", "always defer defer+madvise [madvise] never")


GEN4 = "16.0 GT/s PCIe"
BRIDGE = 0x060400
ROOT_PORT = (0x8086, 0x347A)  # Intel Ice Lake-SP PCIe root port
SWITCH = (0x1000, 0xC010)  # Broadcom PEX88096 PCIe switch
CX6 = (0x15B3, 0x101B)  # Mellanox ConnectX-6
CX6DX = (0x15B3, 0x101D)  # Mellanox ConnectX-6 Dx
A100 = (0x10DE, 0x20B0)  # NVIDIA A100 SXM4 40GB


def bridge(path, ids, node, width=16, secondary=None, subordinate=None, speed=GEN4,
           ptype=None, acs_control=0x0000, aer=None):
    """A root or switch port; its link files describe the link to the function below.
    ptype defaults to a root port for ROOT_PORT ids, else a switch downstream port; root
    and downstream ports have an ACS capability with acs_control enabled."""
    bus = int(path.rsplit("/", 1)[1][5:7], 16)
    sec = secondary if secondary is not None else bus + 1
    if ptype is None:
        ptype = PT_ROOT_PORT if ids == ROOT_PORT else PT_DOWNSTREAM
    ext = []
    if ptype in (PT_ROOT_PORT, PT_DOWNSTREAM):
        ext = [acs_cap(ACS_CAP_ROOT if ptype == PT_ROOT_PORT else ACS_CAP_SWITCH, acs_control)]
    return function(path, BRIDGE, *ids, node, speed, width, driver="pcieport",
                    bus_range=(sec, subordinate if subordinate is not None else sec),
                    ptype=ptype, ext=ext, aer=aer)


def gid_text(groups):
    return ":".join(groups)


def mac_gid(mac):
    b = [int(x, 16) for x in mac.split(":")]
    eui = [b[0] ^ 2, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]]
    return gid_text(["fe80", "0000", "0000", "0000"] + ["%02x%02x" % (eui[i], eui[i + 1]) for i in range(0, 8, 2)])


def v4_gid(ip):
    a = [int(x) for x in ip.split(".")]
    return gid_text(["0000"] * 5 + ["ffff", "%02x%02x" % (a[0], a[1]), "%02x%02x" % (a[2], a[3])])


def v6_gid(prefix, mac):
    return mac_gid(mac).replace("fe80:0000:0000:0000", prefix)


def rdma_device(fn_dev, name, netdev, guid, ib=None, roce=None, state="4: ACTIVE",
                phys="5: LinkUp", rate="200 Gb/sec (4X HDR)", hca="MT4123"):
    """sys/devices/.../infiniband/<name> with port 1, its class link, and its netdev."""
    fn_dev = "sys/devices/" + fn_dev
    d = fn_dev + "/infiniband/" + name
    link("sys/class/infiniband/" + name, d)
    bdf = fn_dev.rsplit("/", 1)[1]
    link(d + "/device", fn_dev, raw="../../../" + bdf)
    write(d + "/node_type", "1: CA")
    write(d + "/node_guid", guid)
    write(d + "/sys_image_guid", guid)
    write(d + "/fw_ver", "20.35.1012")
    write(d + "/hca_type", hca)
    write(d + "/board_id", "MT_0000000223")
    write(d + "/hw_rev", "0")
    write(d + "/node_desc", "%s %s" % (HOSTNAME, name))
    p = d + "/ports/1"
    write(p + "/state", state)
    write(p + "/phys_state", phys)
    write(p + "/rate", rate)
    write(p + "/cap_mask", "0x2651e848" if ib else "0x04010000")
    write(p + "/sm_sl", "0")
    write(p + "/lid_mask_count", "0")
    write(p + "/pkeys/0", "0xffff")
    if ib is not None:
        write(p + "/link_layer", "InfiniBand")
        write(p + "/lid", "0x%x" % ib)
        write(p + "/sm_lid", "0x1")
        gid0 = gid_text(["fe80", "0000", "0000", "0000"] + guid.split(":"))
        for i in range(16):
            write(p + "/gids/%d" % i, gid0 if i == 0 else gid_text(["0000"] * 8))
            write(p + "/gid_attrs/types/%d" % i, "IB/RoCE v1")
        # IB GID entries have no netdev: reading gid_attrs/ndevs/<i> fails with EINVAL,
        # which a fixture cannot reproduce, so the files are left out.
    else:
        mac, ip = roce
        write(p + "/link_layer", "Ethernet")
        write(p + "/lid", "0x0")
        write(p + "/sm_lid", "0x0")
        used = {0: (mac_gid(mac), "IB/RoCE v1"), 1: (mac_gid(mac), "RoCE v2")}
        if ip is not None:
            used[2] = (v4_gid(ip), "IB/RoCE v1")
            used[3] = (v4_gid(ip), "RoCE v2")
            # A global IPv6 address added later lands past the 16 entries hostping reads.
            used[16] = (v6_gid("2001:0db8:0001:0000", mac), "IB/RoCE v1")
            used[17] = (v6_gid("2001:0db8:0001:0000", mac), "RoCE v2")
        for i in range(max(used) + 1):
            gid, kind = used.get(i, (gid_text(["0000"] * 8), None))
            write(p + "/gids/%d" % i, gid)
            if kind is not None:
                write(p + "/gid_attrs/types/%d" % i, kind)
                write(p + "/gid_attrs/ndevs/%d" % i, netdev)
    # PMA counters: mlx5 exposes the extended table, 64-bit data counters (reference 1.3);
    # hw_counters of the port and of the device (1.4), the RoCE-only groups on RoCE ports.
    # A port that is DOWN has moved nothing; the others some 100 GB, by GUID.
    moved = int(guid[-4:], 16) * 1000003 if state == "4: ACTIVE" else 0
    pma = dict.fromkeys(["symbol_error", "link_error_recovery", "link_downed",
                         "port_rcv_errors", "port_rcv_remote_physical_errors",
                         "port_rcv_switch_relay_errors", "local_link_integrity_errors",
                         "excessive_buffer_overrun_errors", "VL15_dropped",
                         "port_xmit_discards", "port_xmit_constraint_errors",
                         "port_rcv_constraint_errors", "port_xmit_wait",
                         "multicast_rcv_packets", "multicast_xmit_packets"], 0)
    pma.update(port_xmit_data=3 * moved, port_rcv_data=5 * moved,
               port_xmit_packets=3 * moved // 1024, port_rcv_packets=5 * moved // 1024,
               unicast_xmit_packets=3 * moved // 1024, unicast_rcv_packets=5 * moved // 1024)
    hw = dict.fromkeys(["duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err",
                        "out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
                        "req_cqe_flush_error", "req_remote_access_errors",
                        "req_remote_invalid_request", "resp_cqe_error", "resp_cqe_flush_error",
                        "resp_local_length_error", "resp_remote_access_errors",
                        "rnr_nak_retry_err", "rx_atomic_requests", "rx_dct_connect"], 0)
    if ib is None:
        hw.update(dict.fromkeys(["np_cnp_sent", "np_ecn_marked_roce_packets",
                                 "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart",
                                 "roce_slow_restart_cnps", "roce_slow_restart_trans",
                                 "rp_cnp_handled", "rp_cnp_ignored", "rx_icrc_encapsulated"], 0))
    hw.update(rx_write_requests=moved // 4096, rx_read_requests=moved // 65536, lifespan=10)
    for key, value in pma.items():
        write(p + "/counters/" + key, str(value))
    for key, value in hw.items():
        write(p + "/hw_counters/" + key, str(value))
        write(d + "/hw_counters/" + key, str(value))
    n = fn_dev + "/net/" + netdev
    link("sys/class/net/" + netdev, n)
    link(n + "/device", fn_dev, raw="../../../" + bdf)
    if ib is not None:
        # IPoIB hardware address: 4 bytes of flags and QPN, then the port GID.
        gid = ("fe800000" * 1 + "0" * 8 + guid.replace(":", ""))
        write(n + "/address", "00:00:10:29:" + ":".join(gid[i:i + 2] for i in range(0, 32, 2)))
    else:
        write(n + "/address", roce[0])
    write(n + "/operstate", "up" if state == "4: ACTIVE" else "down")
    write(n + "/mtu", "4092" if ib else "9000")
    write(n + "/type", "32" if ib else "1")


def main():
    for d in ("sys", "proc"):
        shutil.rmtree(os.path.join(HERE, d), ignore_errors=True)
    write("proc/sys/kernel/hostname", HOSTNAME)
    memory_config()

    # NUMA nodes and CPUs.
    write("sys/devices/system/node/online", "0-1")
    write("sys/devices/system/node/possible", "0-1")
    write("sys/devices/system/node/has_cpu", "0-1")
    write("sys/devices/system/node/has_memory", "0-1")
    write("sys/devices/system/node/has_normal_memory", "0-1")
    write("sys/devices/system/cpu/online", "0-255")
    for n, (cpus, kib) in NODES.items():
        node = "sys/devices/system/node/node%d" % n
        write(node + "/cpulist", cpus)
        write(node + "/meminfo", "\n".join([
            "Node %d MemTotal:       %d kB" % (n, kib),
            "Node %d MemFree:        %d kB" % (n, kib - 9123456),
            "Node %d MemUsed:         %d kB" % (n, 9123456),
            "Node %d HugePages_Total:     0" % n,
        ]))

    for drv in ("pcieport", "mlx5_core", "nvidia", "nvme", "ast", "nvidia-nvswitch"):
        write("sys/bus/pci/drivers/%s/uevent" % drv, "DRIVER=%s" % drv)

    # Socket 0, bus 00: host bridge, BMC graphics (ASPEED, not a GPU), boot NVMe.
    function("pci0000:00/0000:00:00.0", 0x060000, 0x8086, 0x09A2, 0, ptype=PT_RC_ENDPOINT)
    bridge("pci0000:00/0000:00:1c.0", ROOT_PORT, 0, width=1, secondary=1, subordinate=2,
           speed="5.0 GT/s PCIe")
    function("pci0000:00/0000:00:1c.0/0000:01:00.0", BRIDGE, 0x1A03, 0x1150, 0,
             "5.0 GT/s PCIe", 1, max_speed="5.0 GT/s PCIe", max_width=1, bus_range=(2, 2),
             ptype=PT_PCIE_TO_PCI)
    function("pci0000:00/0000:00:1c.0/0000:01:00.0/0000:02:00.0", 0x030000, 0x1A03, 0x2000, 0,
             driver="ast")
    bridge("pci0000:00/0000:00:1d.0", ROOT_PORT, 0, width=4, secondary=3)
    function("pci0000:00/0000:00:1d.0/0000:03:00.0", 0x010802, 0x144D, 0xA824, 0, GEN4, 4,
             max_width=4, driver="nvme")

    # Four root ports, each: upper switch -> two leaf switches; leaf 2r holds mlx5_r and
    # GPU 2r, leaf 2r+1 holds GPU 2r+1 (Hostping Figure 2, DESIGN 4.1).
    roce = {1: ("0c:42:a1:3e:5c:10", "10.1.1.11"), 3: ("0c:42:a1:3e:5c:30", "10.1.3.11")}
    # GPU 3's link (0000:39:00.0 below 0000:38:00.0) logs correctable errors at both ends,
    # reported up to root port 0000:30:00.0.
    gpu3_aer = {"cor": {"Bad TLP": 12, "Bad DLLP": 31, "Replay Timer Timeout": 4},
                "nonfatal": {"Completion Timeout": 1}}
    gpu3_port_aer = {"cor": {"Receiver Error": 9, "Bad DLLP": 5, "RELAY_NUM Rollover": 2}}
    lids = {0: 0x11, 2: 0x13}
    for r, base in enumerate((0x10, 0x30, 0x90, 0xB0)):
        s = r // 2
        rp = bridge("pci0000:%02x/0000:%02x:00.0" % (base, base), ROOT_PORT, s,
                    subordinate=base + 9, aer={"rootport": (63, 1, 0)} if r == 1 else None)
        usw = bridge("%s/0000:%02x:00.0" % (rp, base + 1), SWITCH, s,
                     subordinate=base + 9, ptype=PT_UPSTREAM)
        dsp_a = bridge("%s/0000:%02x:00.0" % (usw, base + 2), SWITCH, s, secondary=base + 3,
                       subordinate=base + 6)
        dsp_b = bridge("%s/0000:%02x:01.0" % (usw, base + 2), SWITCH, s, secondary=base + 7,
                       subordinate=base + 9)
        leaf_a = bridge("%s/0000:%02x:00.0" % (dsp_a, base + 3), SWITCH, s,
                        subordinate=base + 6, ptype=PT_UPSTREAM)
        # Leaf switch 2 (root port 1) still has the ACS redirects the kernel enabled at
        # boot; elsewhere they were cleared (Hostping 6 #7).
        acs = ACS_REDIRECT if r == 1 else 0x0000
        to_nic = bridge("%s/0000:%02x:00.0" % (leaf_a, base + 4), SWITCH, s,
                        secondary=base + 5, acs_control=acs)
        to_gpu = bridge("%s/0000:%02x:01.0" % (leaf_a, base + 4), SWITCH, s,
                        secondary=base + 6, acs_control=acs)
        leaf_b = bridge("%s/0000:%02x:00.0" % (dsp_b, base + 7), SWITCH, s,
                        subordinate=base + 9, ptype=PT_UPSTREAM)
        # GPU 5 trained at x8 on its x16 slot: both ends of that link say so.
        gpu_b_width = 8 if r == 2 else 16
        to_gpu_b = bridge("%s/0000:%02x:00.0" % (leaf_b, base + 8), SWITCH, s,
                          width=gpu_b_width, aer=gpu3_port_aer if r == 1 else None)

        ib = r not in roce
        nic = function("%s/0000:%02x:00.0" % (to_nic, base + 5), 0x020700 if ib else 0x020000,
                       *CX6, s, GEN4, 16, driver="mlx5_core", subsystem=(0x15B3, 0x0007),
                       ext=[ats_cap(r != 3)])  # ATS off on mlx5_3 (Hostping 6 #8)
        netdev = ("ibp%ds0" if ib else "enp%ds0np0") % (base + 5)
        guid = "b859:9f03:00c4:%02x20" % (0x1A + r)
        rdma_device(nic, "mlx5_%d" % r, netdev, guid, ib=lids.get(r), roce=roce.get(r))

        for gpu_bus, parent, width in ((base + 6, to_gpu, 16), (base + 9, to_gpu_b, gpu_b_width)):
            function("%s/0000:%02x:00.0" % (parent, gpu_bus), 0x030200, *A100, s, GEN4, width,
                     driver="nvidia", subsystem=(0x10DE, 0x134F), ext=[ats_cap(True)],
                     aer=gpu3_aer if gpu_bus == 0x39 else None)

    # Socket 0: two NVSwitches (NVIDIA, class 0x0680: not GPUs), each on its own root port.
    for dev, bus in ((0, 0x51), (1, 0x52)):
        rp = "pci0000:50/0000:50:%02x.0" % dev
        bridge(rp, ROOT_PORT, 0, width=1, secondary=bus, speed="8.0 GT/s PCIe")
        function("%s/0000:%02x:00.0" % (rp, bus), 0x068000, 0x10DE, 0x1AF1, 0,
                 "8.0 GT/s PCIe", 1, max_speed="8.0 GT/s PCIe", max_width=1,
                 driver="nvidia-nvswitch")

    # Socket 1: a storage NIC (ConnectX-6 Dx) whose port is DOWN.
    bridge("pci0000:d0/0000:d0:00.0", ROOT_PORT, 1)
    # Its config as a reader without CAP_SYS_ADMIN sees it: the first 64 bytes.
    nic = function("pci0000:d0/0000:d0:00.0/0000:d1:00.0", 0x020000, *CX6DX, 1, GEN4, 16,
                   driver="mlx5_core", subsystem=(0x15B3, 0x0016), ext=[ats_cap(True)],
                   config_len=64)
    rdma_device(nic, "mlx5_4", "enp209s0np0", "0c42:a103:003e:5c40",
                roce=("0c:42:a1:3e:5c:40", None), state="1: DOWN", phys="3: Disabled",
                rate="100 Gb/sec (4X EDR)", hca="MT4125")

    # The loopback netdev, which has no device.
    write("sys/devices/virtual/net/lo/address", "00:00:00:00:00:00")
    write("sys/devices/virtual/net/lo/operstate", "unknown")
    link("sys/class/net/lo", "sys/devices/virtual/net/lo")


if __name__ == "__main__":
    main()
