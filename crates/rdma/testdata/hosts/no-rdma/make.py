#!/usr/bin/env python3
"""Writes sys/ and proc/ of the no-rdma fixture beside this script (see README.md).

Hand-built, not captured: a one-socket server without RDMA devices or GPUs. File formats
follow drivers/pci/pci-sysfs.c and drivers/base/node.c as summarised in
shared/reference/linux-counters.md sections 4, 7 and 9. Run it again after editing: it
deletes and rewrites sys/ and proc/.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def write(rel, text):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(rel, target):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)
    assert os.path.exists(path), rel


def function(path, cls, vendor, device, link_files=None, driver=None):
    """A PCI function at sys/devices/<path>; link_files = (speed, width)."""
    dev = "sys/devices/" + path
    depth = path.count("/") + 2  # folders between sys/ and the function folder
    write(dev + "/class", "0x%06x" % cls)
    write(dev + "/vendor", "0x%04x" % vendor)
    write(dev + "/device", "0x%04x" % device)
    write(dev + "/revision", "0x01")
    # One socket, and firmware without _PXM: the kernel prints -1.
    write(dev + "/numa_node", "-1")
    write(dev + "/local_cpulist", "0-15")
    if link_files is not None:
        write(dev + "/current_link_speed", link_files[0])
        write(dev + "/current_link_width", str(link_files[1]))
        write(dev + "/max_link_speed", link_files[0])
        write(dev + "/max_link_width", str(link_files[1]))
    if driver is not None:
        write("sys/bus/pci/drivers/%s/uevent" % driver, "DRIVER=%s" % driver)
        link(dev + "/driver", "../" * depth + "bus/pci/drivers/" + driver)
    link(dev + "/subsystem", "../" * depth + "bus/pci")
    link("sys/bus/pci/devices/" + path.rsplit("/", 1)[1], "../../../devices/" + path)
    return dev


def memory_config():
    """No IOMMU, 2 MiB hugepages reserved, THP always (linux-counters.md 7). Git keeps no
    empty folder, so a checkout may lack sys/class/iommu: both read as no IOMMU."""
    os.makedirs(os.path.join(HERE, "sys/class/iommu"))
    write("proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 root=/dev/mapper/vg-root ro "
          "intel_iommu=off quiet")
    write("proc/meminfo", "\n".join([
        "MemTotal:       65536000 kB",
        "MemFree:        59137719 kB",
        "MemAvailable:   60412345 kB",
        "AnonHugePages:   1431552 kB",
        "HugePages_Total:    1024",
        "HugePages_Free:     1000",
        "HugePages_Rsvd:        8",
        "HugePages_Surp:        0",
        "Hugepagesize:       2048 kB",
        "Hugetlb:         2097152 kB",
    ]))
    for size, counts in ((2048, (1024, 1000, 8, 0)), (1048576, (0, 0, 0, 0))):
        pool = "sys/kernel/mm/hugepages/hugepages-%dkB/" % size
        for name, n in zip(("nr_hugepages", "free_hugepages", "resv_hugepages",
                            "surplus_hugepages"), counts):
            write(pool + name, str(n))
    write("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never")
    write("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never")


def main():
    for d in ("sys", "proc"):
        shutil.rmtree(os.path.join(HERE, d), ignore_errors=True)
    memory_config()
    write("sys/bus/pci/drivers_autoprobe", "1")
    node = "sys/devices/system/node"
    for name in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory"):
        write(node + "/" + name, "0")
    write(node + "/node0/cpulist", "0-15")
    write(node + "/node0/meminfo", "\n".join([
        "Node 0 MemTotal:       65536000 kB",
        "Node 0 MemFree:        61234567 kB",
        "Node 0 MemUsed:         4301433 kB",
    ]))
    write("sys/devices/system/cpu/online", "0-15")

    gen3 = ("8.0 GT/s PCIe", 4)
    function("pci0000:00/0000:00:00.0", 0x060000, 0x8086, 0x3E0F)
    # BMC graphics behind its own bridge: a display controller, but not a GPU.
    function("pci0000:00/0000:00:1c.0", 0x060400, 0x8086, 0xA338, ("2.5 GT/s PCIe", 1),
             driver="pcieport")
    function("pci0000:00/0000:00:1c.0/0000:01:00.0", 0x060400, 0x1A03, 0x1150,
             ("2.5 GT/s PCIe", 1))
    function("pci0000:00/0000:00:1c.0/0000:01:00.0/0000:02:00.0", 0x030000, 0x1A03, 0x2000,
             driver="ast")
    # A plain Ethernet NIC (Intel I350) with its netdev: no RDMA.
    function("pci0000:00/0000:00:1d.0", 0x060400, 0x8086, 0xA330, gen3, driver="pcieport")
    nic = function("pci0000:00/0000:00:1d.0/0000:03:00.0", 0x020000, 0x8086, 0x1521,
                   ("5.0 GT/s PCIe", 4), driver="igb")
    write(nic + "/net/eno1/address", "3c:ec:ef:12:34:56")
    write(nic + "/net/eno1/operstate", "up")
    link(nic + "/net/eno1/device", "../../../0000:03:00.0")
    link("sys/class/net/eno1", "../../devices/pci0000:00/0000:00:1d.0/0000:03:00.0/net/eno1")
    # An NVMe drive.
    function("pci0000:00/0000:00:1b.0", 0x060400, 0x8086, 0xA340, gen3, driver="pcieport")
    function("pci0000:00/0000:00:1b.0/0000:04:00.0", 0x010802, 0x144D, 0xA808, gen3,
             driver="nvme")
    write("sys/devices/virtual/net/lo/address", "00:00:00:00:00:00")
    link("sys/class/net/lo", "../../devices/virtual/net/lo")


if __name__ == "__main__":
    main()
