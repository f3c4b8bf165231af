#!/usr/bin/env python3
"""Writes sys/ and proc/ of the dgx-a100 fixture beside this script (see README.md).

Hand-built, not captured: file formats follow drivers/infiniband/core/sysfs.c,
drivers/pci/pci-sysfs.c and drivers/base/node.c as summarised in
shared/reference/linux-counters.md sections 1, 4 and 9. Run it again after editing:
it deletes and rewrites sys/ and proc/.
"""
import os
import shutil

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


def function(path, cls, vendor, device, node, speed=None, width=None,
             max_speed="16.0 GT/s PCIe", max_width=16, driver=None, bus_range=None,
             subsystem=(0x0000, 0x0000)):
    """One PCI function folder at sys/devices/<path>, with its sys/bus/pci/devices link."""
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
    if speed is not None:
        write(dev + "/current_link_speed", speed)
        write(dev + "/current_link_width", str(width))
        write(dev + "/max_link_speed", max_speed)
        write(dev + "/max_link_width", str(max_width))
    if bus_range is not None:
        write(dev + "/secondary_bus_number", str(bus_range[0]))
        write(dev + "/subordinate_bus_number", str(bus_range[1]))
    if driver is not None:
        link(dev + "/driver", "sys/bus/pci/drivers/" + driver)
    link(dev + "/subsystem", "sys/bus/pci")
    link("sys/bus/pci/devices/" + bdf, dev)
    return path


GEN4 = "16.0 GT/s PCIe"
BRIDGE = 0x060400
ROOT_PORT = (0x8086, 0x347A)  # Intel Ice Lake-SP PCIe root port
SWITCH = (0x1000, 0xC010)  # Broadcom PEX88096 PCIe switch
CX6 = (0x15B3, 0x101B)  # Mellanox ConnectX-6
CX6DX = (0x15B3, 0x101D)  # Mellanox ConnectX-6 Dx
A100 = (0x10DE, 0x20B0)  # NVIDIA A100 SXM4 40GB


def bridge(path, ids, node, width=16, secondary=None, subordinate=None, speed=GEN4):
    """A root or switch port; its link files describe the link to the function below."""
    bus = int(path.rsplit("/", 1)[1][5:7], 16)
    sec = secondary if secondary is not None else bus + 1
    return function(path, BRIDGE, *ids, node, speed, width, driver="pcieport",
                    bus_range=(sec, subordinate if subordinate is not None else sec))


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
    function("pci0000:00/0000:00:00.0", 0x060000, 0x8086, 0x09A2, 0)
    bridge("pci0000:00/0000:00:1c.0", ROOT_PORT, 0, width=1, secondary=1, subordinate=2,
           speed="5.0 GT/s PCIe")
    function("pci0000:00/0000:00:1c.0/0000:01:00.0", BRIDGE, 0x1A03, 0x1150, 0,
             "5.0 GT/s PCIe", 1, max_speed="5.0 GT/s PCIe", max_width=1, bus_range=(2, 2))
    function("pci0000:00/0000:00:1c.0/0000:01:00.0/0000:02:00.0", 0x030000, 0x1A03, 0x2000, 0,
             driver="ast")
    bridge("pci0000:00/0000:00:1d.0", ROOT_PORT, 0, width=4, secondary=3)
    function("pci0000:00/0000:00:1d.0/0000:03:00.0", 0x010802, 0x144D, 0xA824, 0, GEN4, 4,
             max_width=4, driver="nvme")

    # Four root ports, each: upper switch -> two leaf switches; leaf 2r holds mlx5_r and
    # GPU 2r, leaf 2r+1 holds GPU 2r+1 (Hostping Figure 2, DESIGN 4.1).
    roce = {1: ("0c:42:a1:3e:5c:10", "10.1.1.11"), 3: ("0c:42:a1:3e:5c:30", "10.1.3.11")}
    lids = {0: 0x11, 2: 0x13}
    for r, base in enumerate((0x10, 0x30, 0x90, 0xB0)):
        s = r // 2
        rp = bridge("pci0000:%02x/0000:%02x:00.0" % (base, base), ROOT_PORT, s,
                    subordinate=base + 9)
        usw = bridge("%s/0000:%02x:00.0" % (rp, base + 1), SWITCH, s,
                     subordinate=base + 9)
        dsp_a = bridge("%s/0000:%02x:00.0" % (usw, base + 2), SWITCH, s, secondary=base + 3,
                       subordinate=base + 6)
        dsp_b = bridge("%s/0000:%02x:01.0" % (usw, base + 2), SWITCH, s, secondary=base + 7,
                       subordinate=base + 9)
        leaf_a = bridge("%s/0000:%02x:00.0" % (dsp_a, base + 3), SWITCH, s,
                        subordinate=base + 6)
        to_nic = bridge("%s/0000:%02x:00.0" % (leaf_a, base + 4), SWITCH, s,
                        secondary=base + 5)
        to_gpu = bridge("%s/0000:%02x:01.0" % (leaf_a, base + 4), SWITCH, s,
                        secondary=base + 6)
        leaf_b = bridge("%s/0000:%02x:00.0" % (dsp_b, base + 7), SWITCH, s,
                        subordinate=base + 9)
        # GPU 5 trained at x8 on its x16 slot: both ends of that link say so.
        gpu_b_width = 8 if r == 2 else 16
        to_gpu_b = bridge("%s/0000:%02x:00.0" % (leaf_b, base + 8), SWITCH, s,
                          width=gpu_b_width)

        ib = r not in roce
        nic = function("%s/0000:%02x:00.0" % (to_nic, base + 5), 0x020700 if ib else 0x020000,
                       *CX6, s, GEN4, 16, driver="mlx5_core", subsystem=(0x15B3, 0x0007))
        netdev = ("ibp%ds0" if ib else "enp%ds0np0") % (base + 5)
        guid = "b859:9f03:00c4:%02x20" % (0x1A + r)
        rdma_device(nic, "mlx5_%d" % r, netdev, guid, ib=lids.get(r), roce=roce.get(r))

        for gpu_bus, parent, width in ((base + 6, to_gpu, 16), (base + 9, to_gpu_b, gpu_b_width)):
            function("%s/0000:%02x:00.0" % (parent, gpu_bus), 0x030200, *A100, s, GEN4, width,
                     driver="nvidia", subsystem=(0x10DE, 0x134F))

    # Socket 0: two NVSwitches (NVIDIA, class 0x0680: not GPUs), each on its own root port.
    for dev, bus in ((0, 0x51), (1, 0x52)):
        rp = "pci0000:50/0000:50:%02x.0" % dev
        bridge(rp, ROOT_PORT, 0, width=1, secondary=bus, speed="8.0 GT/s PCIe")
        function("%s/0000:%02x:00.0" % (rp, bus), 0x068000, 0x10DE, 0x1AF1, 0,
                 "8.0 GT/s PCIe", 1, max_speed="8.0 GT/s PCIe", max_width=1,
                 driver="nvidia-nvswitch")

    # Socket 1: a storage NIC (ConnectX-6 Dx) whose port is DOWN.
    bridge("pci0000:d0/0000:d0:00.0", ROOT_PORT, 1)
    nic = function("pci0000:d0/0000:d0:00.0/0000:d1:00.0", 0x020000, *CX6DX, 1, GEN4, 16,
                   driver="mlx5_core", subsystem=(0x15B3, 0x0016))
    rdma_device(nic, "mlx5_4", "enp209s0np0", "0c42:a103:003e:5c40",
                roce=("0c:42:a1:3e:5c:40", None), state="1: DOWN", phys="3: Disabled",
                rate="100 Gb/sec (4X EDR)", hca="MT4125")

    # The loopback netdev, which has no device.
    write("sys/devices/virtual/net/lo/address", "00:00:00:00:00:00")
    write("sys/devices/virtual/net/lo/operstate", "unknown")
    link("sys/class/net/lo", "sys/devices/virtual/net/lo")


if __name__ == "__main__":
    main()
