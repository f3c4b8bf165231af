#!/usr/bin/env python3
"""Writes the two IOMMU fixture trees of this folder, `intel/` and `amd/`.

No machine here has an IOMMU PMU, so these are written from the kernel code that creates
the files, not captured:
- Intel `dmar<N>` PMU: drivers/iommu/intel/perfmon.c (Linux 6.3+): format `event`
  config:0-27 and `event_group` config:28-31 always; the `filter_*` formats only where the
  unit can filter (iommu_pmu->filter); an `events/<name>` file per event the unit
  supports (evcap), with the string of IOMMU_PMU_EVENT_ATTR; a `cpumask` of one CPU.
- AMD `amd_iommu_<N>` PMU: arch/x86/events/amd/iommu.c: seven formats, 24 events
  (`csource=0x01` .. `0x18`), cpumask `0`.
- The unit folders (sys/devices/virtual/iommu/dmarN with intel-iommu/{version,cap,ecap};
  sys/devices/pci0000:40/0000:40:00.2/iommu/ivhdN on AMD), the RNICs' `iommu` and
  `iommu_group` links, the groups' `type`, hugepage pools and THP settings follow
  Documentation/ABI/testing/sysfs-class-iommu*, sysfs-kernel-iommu_groups and a real
  layout (linux-counters.md 4.1, 7).
When a capture exists (`tar` of those folders, links kept), it should replace these.

Run: python3 make_trees.py (removes and rewrites intel/ and amd/).
"""
import os
import shutil

INTEL_EVENTS = [
    ("iommu_clocks", 0, 0x001), ("iommu_requests", 0, 0x002), ("pw_occupancy", 0, 0x004),
    ("ats_blocked", 0, 0x008), ("iommu_mrds", 1, 0x001), ("iommu_mem_blocked", 1, 0x020),
    ("pg_req_posted", 1, 0x040), ("ctxt_cache_lookup", 2, 0x001), ("ctxt_cache_hit", 2, 0x002),
    ("pasid_cache_lookup", 2, 0x004), ("pasid_cache_hit", 2, 0x008),
    ("ss_nonleaf_lookup", 2, 0x010), ("ss_nonleaf_hit", 2, 0x020),
    ("fs_nonleaf_lookup", 2, 0x040), ("fs_nonleaf_hit", 2, 0x080),
    ("hpt_nonleaf_lookup", 2, 0x100), ("hpt_nonleaf_hit", 2, 0x200),
    ("iotlb_lookup", 3, 0x001), ("iotlb_hit", 3, 0x002), ("hpt_leaf_lookup", 3, 0x004),
    ("hpt_leaf_hit", 3, 0x008), ("int_cache_lookup", 4, 0x001),
    ("int_cache_hit_nonposted", 4, 0x002), ("int_cache_hit_posted", 4, 0x004),
]
INTEL_FILTERS = {
    "filter_requester_id_en": "config1:0", "filter_domain_en": "config1:1",
    "filter_pasid_en": "config1:2", "filter_ats_en": "config1:3",
    "filter_page_table_en": "config1:4", "filter_requester_id": "config1:16-31",
    "filter_domain": "config1:32-47", "filter_pasid": "config2:0-21",
    "filter_ats": "config2:24-28", "filter_page_table": "config2:32-36",
}
AMD_FORMATS = {
    "csource": "config:0-7", "devid": "config:8-23", "domid": "config:24-39",
    "pasid": "config:40-59", "devid_mask": "config1:0-15", "domid_mask": "config1:16-31",
    "pasid_mask": "config1:32-51",
}
AMD_EVENTS = [
    "mem_pass_untrans", "mem_pass_pretrans", "mem_pass_excl", "mem_target_abort",
    "mem_trans_total", "mem_iommu_tlb_pte_hit", "mem_iommu_tlb_pte_mis",
    "mem_iommu_tlb_pde_hit", "mem_iommu_tlb_pde_mis", "mem_dte_hit", "mem_dte_mis",
    "page_tbl_read_tot", "page_tbl_read_nst", "page_tbl_read_gst", "int_dte_hit",
    "int_dte_mis", "cmd_processed", "cmd_processed_inv", "tlb_inv", "ign_rd_wr_mmio_1ff8h",
    "vapic_int_non_guest", "vapic_int_guest", "smi_recv", "smi_blk",
]


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(root, rel, target):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def core_pmus(root, first_type):
    for i, name in enumerate(["cpu", "software", "tracepoint", "breakpoint", "msr"]):
        write(root, f"sys/bus/event_source/devices/{name}/type", str({"software": 1, "tracepoint": 2, "breakpoint": 5}.get(name, first_type + i)))


def pci_function(root, path, unit_link, group):
    """A PCI function folder with its iommu links, and its bus/pci/devices entry."""
    bdf = path.rsplit("/", 1)[1]
    depth = path.count("/") + 1  # below sys/devices
    if unit_link:
        link(root, f"sys/devices/{path}/iommu", unit_link)
    write(root, f"sys/devices/{path}/class", "0x020000")
    write(root, f"sys/devices/{path}/vendor", "0x15b3")
    link(root, f"sys/devices/{path}/iommu_group", "../" * depth + f"../kernel/iommu_groups/{group}")
    link(root, f"sys/bus/pci/devices/{bdf}", f"../../../devices/{path}")
    link(root, f"sys/kernel/iommu_groups/{group}/devices/{bdf}", f"../../../../devices/{path}")


def hugepages(root, pools, thp):
    for size, n in pools:
        for f in ["nr_hugepages", "free_hugepages", "resv_hugepages", "surplus_hugepages"]:
            write(root, f"sys/kernel/mm/hugepages/hugepages-{size}kB/{f}", str(n if f in ("nr_hugepages", "free_hugepages") else 0))
    write(root, "sys/kernel/mm/transparent_hugepage/enabled", thp)
    write(root, "sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never")


def intel(root):
    core_pmus(root, 4)
    write(root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/mapper/vg-root ro intel_iommu=on iommu.strict=0 quiet")
    write(root, "proc/sys/kernel/perf_event_paranoid", "-1")
    # Two VT-d units (Sapphire Rapids-like: cap with 2 MiB and 1 GiB second-level pages,
    # ecap with PMS, bit 51). dmar3 can filter by requester; dmar0 cannot.
    cap, ecap = 0x00D2_0080_C406_6462 | (3 << 34), 0x0000_0F05_0DF | (1 << 51)
    for n, pmu_type, filters in [(0, 18, False), (3, 21, True)]:
        unit = f"sys/devices/virtual/iommu/dmar{n}"
        write(root, f"{unit}/intel-iommu/version", "1:0")
        write(root, f"{unit}/intel-iommu/cap", f"{cap:x}")
        write(root, f"{unit}/intel-iommu/ecap", f"{ecap:x}")
        link(root, f"sys/class/iommu/dmar{n}", f"../../devices/virtual/iommu/dmar{n}")
        pmu = f"sys/bus/event_source/devices/dmar{n}"
        write(root, f"{pmu}/type", str(pmu_type))
        write(root, f"{pmu}/cpumask", "0")
        write(root, f"{pmu}/format/event", "config:0-27")
        write(root, f"{pmu}/format/event_group", "config:28-31")
        if filters:
            for name, spec in INTEL_FILTERS.items():
                write(root, f"{pmu}/format/{name}", spec)
        for name, group, event in INTEL_EVENTS:
            write(root, f"{pmu}/events/{name}", f"event_group=0x{group:x},event=0x{event:03x}")
    # A third unit with no PMU (Linux < 6.3 style, or no ECAP.PMS).
    write(root, "sys/devices/virtual/iommu/dmar7/intel-iommu/version", "1:0")
    write(root, "sys/devices/virtual/iommu/dmar7/intel-iommu/cap", f"{cap:x}")
    write(root, "sys/devices/virtual/iommu/dmar7/intel-iommu/ecap", f"{ecap & ~(1 << 51):x}")
    link(root, "sys/class/iommu/dmar7", "../../devices/virtual/iommu/dmar7")
    # ConnectX-7 ports: 0000:38:00.0 behind dmar3, 0000:b8:00.0 behind dmar0 (no
    # filter), 0000:d8:00.0 behind dmar7 (no PMU). All translated, lazy (DMA-FQ).
    for path, unit, group in [
        ("pci0000:37/0000:37:01.0/0000:38:00.0", "dmar3", 45),
        ("pci0000:b7/0000:b7:01.0/0000:b8:00.0", "dmar0", 90),
        ("pci0000:d7/0000:d7:01.0/0000:d8:00.0", "dmar7", 120),
    ]:
        pci_function(root, path, f"../../../virtual/iommu/{unit}", group)
        write(root, f"sys/kernel/iommu_groups/{group}/type", "DMA-FQ")
    hugepages(root, [(2048, 0), (1048576, 0)], "always madvise [never]")


def amd(root):
    core_pmus(root, 4)
    write(root, "proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.1.0-26-amd64 root=UUID=0b6c ro amd_iommu=on quiet")
    write(root, "proc/sys/kernel/perf_event_paranoid", "2")
    for n, pmu_type in [(0, 11), (1, 12)]:
        pmu = f"sys/bus/event_source/devices/amd_iommu_{n}"
        write(root, f"{pmu}/type", str(pmu_type))
        write(root, f"{pmu}/cpumask", "0")
        for name, spec in AMD_FORMATS.items():
            write(root, f"{pmu}/format/{name}", spec)
        for i, name in enumerate(AMD_EVENTS, 1):
            write(root, f"{pmu}/events/{name}", f"csource=0x{i:02x}")
    # Units: ivhd0 in pci0000:00, ivhd1 in pci0000:40, ivhd3 in pci0000:c0 (no PMU).
    for n, host in [(0, "00"), (1, "40"), (3, "c0")]:
        unit = f"pci0000:{host}/0000:{host}:00.2/iommu/ivhd{n}"
        write(root, f"sys/devices/{unit}/amd-iommu/cap", "64735")
        link(root, f"sys/class/iommu/ivhd{n}", f"../../devices/{unit}")
    # ConnectX-6 at 0000:41:00.0 (ivhd1, DMA); another at 0000:c1:00.0 (ivhd3, identity).
    pci_function(root, "pci0000:40/0000:40:01.1/0000:41:00.0", "../../0000:40:00.2/iommu/ivhd1", 12)
    write(root, "sys/kernel/iommu_groups/12/type", "DMA")
    pci_function(root, "pci0000:c0/0000:c0:01.1/0000:c1:00.0", "../../0000:c0:00.2/iommu/ivhd3", 31)
    write(root, "sys/kernel/iommu_groups/31/type", "identity")
    hugepages(root, [(2048, 4096), (1048576, 0)], "[always] madvise never")


here = os.path.dirname(os.path.abspath(__file__))
for name, build in [("intel", intel), ("amd", amd)]:
    root = os.path.join(here, name)
    shutil.rmtree(root, ignore_errors=True)
    build(root)
