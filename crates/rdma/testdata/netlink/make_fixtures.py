#!/usr/bin/env python3
"""Builds the RDMA netlink reply fixtures of this folder, byte for byte as an x86_64 kernel
sends them, by replaying the kernel's own nla_put sequence:

- drivers/infiniband/core/nldev.c: fill_nldev_handle, fill_dev_info (RDMA_NLDEV_CMD_GET),
  res_get_common_dumpit + fill_res_mr_entry + fill_res_name_pid (RES_MR_GET),
  nldev_stat_get_dumpit -> res_get_common_dumpit + fill_stat_mr_entry (STAT_GET, MR);
  tables and entries are nla_nest_start_noflag (no NLA_F_NESTED).
- drivers/infiniband/hw/mlx5/restrack.c: fill_res_mr_entry (DRIVER table, nla_nest_start:
  NLA_F_NESTED set, "odp" = "explicit"|"implicit") and fill_stat_mr_entry
  (STAT_HWCOUNTERS, nla_nest_start, entries via rdma_nl_stat_hwcounter_entry).
- nla_put_u64_64bit adds no PAD attribute on x86_64 (CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS).
- Numbers from include/uapi/rdma/rdma_netlink.h (read from the installed header, so this
  script shares nothing with the Rust code it tests).

The *-rxe0.hex files beside them are real: captured in the Soft-RoCE guest by
tests/guest.rs (RdmaNetlink::record); the layout here matches them (entry attribute order,
message types, NLMSG_DONE in a buffer of its own).

The values are those of a root reader (CAP_NET_ADMIN: keys present) on a ConnectX-6 host
where process 5150 runs an ODP application and process 4242 a pinned one. This machine has
no RDMA hardware, so nothing could be captured; when a capture exists
(`strace -e trace=recvmsg -xx rdma resource show mr -dd`), put it beside these.

Run: python3 make_fixtures.py  (writes *.hex: one "# recv N" block per receive buffer)
"""
import re
import struct

HEADER = "/usr/include/rdma/rdma_netlink.h"


def enum_values(text, name):
    body = re.search(r"enum " + name + r" \{(.*?)\};", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    values, nxt = {}, 0
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            k, v = [s.strip() for s in item.split("=")]
            nxt = values[v] if v in values else int(v, 0)
        else:
            k = item
        values[k] = nxt
        nxt += 1
    return values


TEXT = open(HEADER).read()
A = enum_values(TEXT, "rdma_nldev_attr")
C = enum_values(TEXT, "rdma_nldev_command")
NLDEV = 5  # RDMA_NL_NLDEV
NLA_F_NESTED = 0x8000
NLM_F_MULTI = 2
NLMSG_DONE = 3


def nla(kind, value, nested=False):
    length = 4 + len(value)
    pad = (-length) % 4
    return struct.pack("=HH", length, A[kind] | (NLA_F_NESTED if nested else 0)) + value + b"\0" * pad


def u8(kind, v):
    return nla(kind, struct.pack("=B", v))


def u32(kind, v):
    return nla(kind, struct.pack("=I", v))


def u64(kind, v):
    return nla(kind, struct.pack("=Q", v))


def string(kind, s):
    return nla(kind, s.encode() + b"\0")


def nlmsg(msg_type, flags, seq, payload, port=4022):
    length = 16 + len(payload)
    return struct.pack("=IHHII", length, msg_type, flags, seq, port) + payload + b"\0" * ((-length) % 4)


def done(seq, code=0):
    return nlmsg(NLMSG_DONE, NLM_F_MULTI, seq, struct.pack("=i", code))


def rtype(cmd):
    return (NLDEV << 10) + C[cmd]


def handle(index, name):
    return u32("RDMA_NLDEV_ATTR_DEV_INDEX", index) + string("RDMA_NLDEV_ATTR_DEV_NAME", name)


def dev_info(index, name, fw, guid):
    return (handle(index, name)
            + u32("RDMA_NLDEV_ATTR_PORT_INDEX", 1)
            + u64("RDMA_NLDEV_ATTR_CAP_FLAGS", 0x0000_0011_2123_1c76)
            + string("RDMA_NLDEV_ATTR_FW_VERSION", fw)
            + u64("RDMA_NLDEV_ATTR_NODE_GUID", guid)
            + u64("RDMA_NLDEV_ATTR_SYS_IMAGE_GUID", guid)
            + u8("RDMA_NLDEV_ATTR_DEV_NODE_TYPE", 1)
            + u8("RDMA_NLDEV_ATTR_DEV_DIM", 1)
            + string("RDMA_NLDEV_ATTR_DEV_PROTOCOL", "roce"))


def mr_entry(mrn, length, rkey, lkey, pdn=None, pid=None, kern=None, odp=None):
    e = u32("RDMA_NLDEV_ATTR_RES_RKEY", rkey) + u32("RDMA_NLDEV_ATTR_RES_LKEY", lkey)
    e += u64("RDMA_NLDEV_ATTR_RES_MRLEN", length) + u32("RDMA_NLDEV_ATTR_RES_MRN", mrn)
    if pdn is not None:
        e += u32("RDMA_NLDEV_ATTR_RES_PDN", pdn)
    e += u32("RDMA_NLDEV_ATTR_RES_PID", pid) if pid is not None else string("RDMA_NLDEV_ATTR_RES_KERN_NAME", kern)
    if odp:
        table = string("RDMA_NLDEV_ATTR_DRIVER_STRING", "odp") + string("RDMA_NLDEV_ATTR_DRIVER_STRING", odp)
        e += nla("RDMA_NLDEV_ATTR_DRIVER", table, nested=True)
    return nla("RDMA_NLDEV_ATTR_RES_MR_ENTRY", e)


def stat_entry(mrn, counters=None):
    e = u32("RDMA_NLDEV_ATTR_RES_MRN", mrn)
    if counters:
        table = b"".join(
            nla("RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY",
                string("RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME", n)
                + u64("RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE", v), nested=True)
            for n, v in counters)
        e += nla("RDMA_NLDEV_ATTR_STAT_HWCOUNTERS", table, nested=True)
    return nla("RDMA_NLDEV_ATTR_RES_MR_ENTRY", e)


def table(index, name, entries):
    return handle(index, name) + nla("RDMA_NLDEV_ATTR_RES_MR", b"".join(entries))


def write(path, title, buffers):
    with open(path, "w") as f:
        f.write(f"# {title}\n# made by make_fixtures.py (see its doc: the kernel's nla_put sequence, x86_64)\n")
        for i, buf in enumerate(buffers, 1):
            f.write(f"# recv {i}\n")
            for at in range(0, len(buf), 16):
                f.write(" ".join(f"{b:02x}" for b in buf[at:at + 16]) + "\n")


M = rtype("RDMA_NLDEV_CMD_RES_MR_GET")
write("dev-get.hex", "RDMA_NLDEV_CMD_GET dump, seq 1: mlx5_0 and mlx5_1 (ConnectX-6 Dx, RoCE)", [
    nlmsg(rtype("RDMA_NLDEV_CMD_GET"), NLM_F_MULTI, 1, dev_info(0, "mlx5_0", "22.36.1010", 0x0c42_a103_0065_8e2a))
    + nlmsg(rtype("RDMA_NLDEV_CMD_GET"), NLM_F_MULTI, 1, dev_info(1, "mlx5_1", "22.36.1010", 0x0c42_a103_0065_8e2b)),
    done(1),
])
# Four MRs; the kernel filled the first buffer after two entries and went on in a second
# message (res_get_common_dumpit keeps its place in cb->args[0]). NLMSG_DONE comes in a
# buffer of its own, as netlink_dump sends it after a dump call that filled data.
write("mr-dump-mlx5_0.hex", "RDMA_NLDEV_CMD_RES_MR_GET dump of mlx5_0 (index 0), seq 2", [
    nlmsg(M, NLM_F_MULTI, 2, table(0, "mlx5_0", [
        mr_entry(1, 131072, 0x00003f00, 0x00003f00, kern="nvme_rdma"),
        mr_entry(6, 8388608, 0x0001b4d1, 0x0001b4d1, pdn=3, pid=4242),
    ])),
    nlmsg(M, NLM_F_MULTI, 2, table(0, "mlx5_0", [
        mr_entry(7, 1073741824, 0x0001c0a2, 0x0001c0a2, pdn=4, pid=5150, odp="explicit"),
        mr_entry(8, 0xFFFF_FFFF_FFFF_FFFF, 0x00000500, 0x00000500, pdn=4, pid=5150, odp="implicit"),
    ])),
    done(2),
])
# The statistics dump answers with messages of type STAT_GET (as captured from Linux 6.1 in
# mr-stat-rxe0.hex).
write("mr-stat-mlx5_0.hex", "RDMA_NLDEV_CMD_STAT_GET (STAT_RES = RES_MR) dump of mlx5_0, seq 3", [
    nlmsg(rtype("RDMA_NLDEV_CMD_STAT_GET"), NLM_F_MULTI, 3, table(0, "mlx5_0", [
        stat_entry(1),
        stat_entry(6),
        stat_entry(7, [("page_faults", 1843), ("page_invalidations", 12), ("page_prefetch", 0)]),
        stat_entry(8, [("page_faults", 5210933), ("page_invalidations", 4096), ("page_prefetch", 65536)]),
    ])),
    done(3),
])
# A dump of a device index that no longer exists: the dump's first call returns -EINVAL,
# which netlink_dump sends in NLMSG_DONE.
write("mr-dump-gone.hex", "RDMA_NLDEV_CMD_RES_MR_GET dump of index 7 after the device went away, seq 4", [
    done(4, -22),
])
