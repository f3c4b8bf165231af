#!/usr/bin/env python3
"""Writes the minimal sysfs subsets of real machines that hwloc describes only as text.

hwloc's tests/hwloc/linux/*.tar.bz2 hold whole sysfs captures, but the index these were
taken from stores them as binary, unreadable; hwloc keeps beside them what `lstopo` printed
for each capture (*.console, *.output). From those files, each tree below holds exactly
what they show and discovery reads: NUMA nodes (cpulist, meminfo MemTotal, distance), CPU
package ids, PCI functions (class, vendor, device, numa_node) and the RDMA class. Every
value is transcribed from the hwloc file named in SOURCES.md; nothing else is written.
Run `python3 reconstruct.py` here to rewrite the folders.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def cpulist(cpus):
    cpus = sorted(cpus)
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def machine(name, nodes, distances, pci=(), infiniband=()):
    """nodes: [(id, cpus, package or None per node, MemTotal kB or None)]."""
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    for (nid, cpus, package, kib), row in zip(nodes, distances):
        d = f"sys/devices/system/node/node{nid}"
        write(root, f"{d}/cpulist", cpulist(cpus))
        if kib is not None:
            write(root, f"{d}/meminfo", f"Node {nid} MemTotal:       {kib} kB")
        write(root, f"{d}/distance", " ".join(str(x) for x in row))
        for c in cpus:
            topo = f"sys/devices/system/cpu/cpu{c}/topology"
            if package is not None:
                write(root, f"{topo}/physical_package_id", str(package))
    os.makedirs(os.path.join(root, "sys/bus/pci/devices"), exist_ok=True)
    for chain, cls, vendor, device, numa in pci:
        # chain: host bridge folder, then functions from the root port down.
        real = os.path.join("sys/devices", *chain)
        write(root, f"{real}/class", cls)
        write(root, f"{real}/vendor", vendor)
        write(root, f"{real}/device", device)
        write(root, f"{real}/numa_node", str(numa))
        link = os.path.join(root, "sys/bus/pci/devices", chain[-1])
        os.symlink(os.path.relpath(os.path.join(root, real), os.path.dirname(link)), link)
    for dev in infiniband:
        # Git keeps no empty folder: `.keep` stands in for the device's own files.
        write(root, f"sys/class/infiniband/{dev}/.keep", "")


GIB = 1024 * 1024  # kB

# 40intel64-4n10c+pci-conflicts.console: 4 x Xeon E7-4870, node k holds PUs k, k+4, ..
# k+36 and 128 GiB; packages P#0..P#2 hold nodes 0..2, node 3's PUs show no package;
# latency matrix all 20 off the diagonal; one RAID controller behind root port 00:03.0.
machine(
    "40intel64-4n10c",
    [(k, [k + 4 * i for i in range(10)], k if k < 3 else None, 128 * GIB) for k in range(4)],
    [[10 if i == j else 20 for j in range(4)] for i in range(4)],
    pci=[
        (["pci0000:00", "0000:00:03.0"], "0x060400", "0x8086", "0x340a", -1),
        (["pci0000:00", "0000:00:03.0", "0000:01:00.0"], "0x010400", "0x1000", "0x0079", -1),
    ],
)

# nvidiagpunumanodes-kept.console: POWER9 (PowerNV 8335-GTW), packages P#0 (PUs 0-15,
# 124 GiB) and P#8 (PUs 88-103, 128 GiB), six V100 memories as CPU-less nodes 250..255
# (15 GiB each); latency matrix 10/40 between the sockets, 80 to every GPU node. The GPUs
# show as id 0000:0000 class 0300 (the capture sanitised their ids).
gpu_nodes = list(range(250, 256))
ids = [0, 8] + gpu_nodes
machine(
    "nvidiagpunumanodes",
    [(0, list(range(0, 16)), 0, 124 * GIB), (8, list(range(88, 104)), 8, 128 * GIB)]
    + [(n, [], None, 15 * GIB) for n in gpu_nodes],
    [
        [10 if a == b else 40 if {a, b} == {0, 8} else 80 for b in ids]
        for a in ids
    ],
    pci=[
        (["pci0004:05", "0004:05:00.0"], "0x030000", "0x0000", "0x0000", 0),
        (["pci0004:06", "0004:06:00.0"], "0x030000", "0x0000", "0x0000", 0),
        (["pci0006:00", "0006:00:00.0"], "0x030000", "0x0000", "0x0000", 0),
        (["pci0007:00", "0007:00:00.0"], "0x030000", "0x0000", "0x0000", 8),
        (["pci0035:04", "0035:04:00.0"], "0x030000", "0x0000", "0x0000", 8),
        (["pci0035:05", "0035:05:00.0"], "0x030000", "0x0000", "0x0000", 8),
    ],
)

# 32em64t-2n8c+1mic.output: 2 x Xeon E5-2680 (Dell DCS8000Z), node 0 cpuset 0xff with
# 17149054976 bytes, node 1 cpuset 0xff00 (its memory is not in the part read: no
# meminfo), distances 10/21; a Xeon Phi whose SCIF registers `scif0` in
# sys/class/infiniband with no ports folder (issue 26).
machine(
    "32em64t-2n8c+1mic",
    [(0, list(range(0, 8)), 0, 17149054976 // 1024), (1, list(range(8, 16)), 1, None)],
    [[10, 21], [21, 10]],
    infiniband=["scif0"],
)
