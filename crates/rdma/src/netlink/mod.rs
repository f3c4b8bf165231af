/*!
RDMA netlink (`NETLINK_RDMA`, client `RDMA_NL_NLDEV`): the memory regions each RDMA device
holds and their on-demand-paging statistics, what `rdma resource show mr -dd` and
`rdma statistic mr` (iproute2) read. There is no sysfs file for either
(linux-counters.md 3).

Why: an ODP memory region takes RNIC page faults; a fault on the responder of an RDMA READ
loses the packet and the requester waits for its transport timeout ("damming"), and with
client-side ODP and many QPs the page-status updates fail across QPs and requests are
retransmitted in a storm ("flood"); ISPASS'21, `shared/papers/001_50e040594ebebbef.txt`,
"The first pitfall: packet damming" and "The second pitfall: packet flood". Which regions are ODP, who owns them and how often they fault is the
evidence for `odp_stall`.

# Layers

- [`nldev`]: the numbers of `include/uapi/rdma/rdma_netlink.h` and [`Attr`], a typed view
  of one attribute (`struct nlattr`), with [`AttrWriter`] to emit them.
- [`mr`]: the validated representations, [`MrEntry`] (one `RDMA_NLDEV_ATTR_RES_MR_ENTRY`)
  and [`MrStats`] (one entry of the statistics dump), parsed from and emitted into a
  message's attributes, and [`Device`] of `RDMA_NLDEV_CMD_GET`.
- [`dump`]: the replies of one request in a receive buffer, message by message
  (`struct nlmsghdr`, `NLMSG_ERROR`, `NLMSG_DONE`, the multi-part flag).
- [`reader`]: [`RdmaNetlink`], the socket: it lists devices, dumps their MRs and MR
  statistics, with a timeout, and returns typed values or an [`NetlinkError`] saying why not
  (no RDMA netlink, permission denied, device gone, timed out).

Framing (`nlmsghdr`, `nlattr`, alignment, `NLMSG_ERROR`) comes from `netlink-packet-core`
and the socket from `netlink-sys` (both of the rust-netlink project, which also maintains
`rtnetlink`); only the RDMA attributes are parsed here. Byte order: the kernel writes every
RDMA attribute in host order (`nla_put_u32`, `nla_put_u64_64bit`; none sets
`NLA_F_NET_BYTEORDER`), and so does the `nlmsghdr`.

# What the kernel sends (drivers/infiniband/core/nldev.c)

`RDMA_NLDEV_CMD_RES_MR_GET` with `NLM_F_DUMP` and `RDMA_NLDEV_ATTR_DEV_INDEX` (required:
the kernel refuses a dump without it, `-EINVAL`, as it does for an index that names no
device) answers, per receive buffer, one message of type `RES_MR_GET`:

```text
DEV_INDEX u32, DEV_NAME string,
RES_MR (nest) { RES_MR_ENTRY (nest) {                 fill_res_mr_entry()
    [RES_RKEY u32, RES_LKEY u32]                      only to CAP_NET_ADMIN
    RES_MRLEN u64, RES_MRN u32, [RES_PDN u32]         PDN for user MRs
    RES_PID u32 | RES_KERN_NAME string                owner (no PID from another PID namespace)
    [DRIVER (nest) { DRIVER_STRING "odp", DRIVER_STRING "explicit"|"implicit" }]  mlx5, ODP only
} ... }
```

then `NLMSG_DONE` in a receive buffer of its own (`netlink_dump` sends the filled buffer
first; the `-rxe0.hex` files of `testdata/netlink/` are captures from Linux 6.1). A device
with many MRs continues in further messages, each starting with the device again.
`RDMA_NLDEV_CMD_STAT_GET` with `RDMA_NLDEV_ATTR_STAT_RES = RES_MR` answers the same way (messages of type `STAT_GET`), each entry being `RES_MRN` and, for
an ODP MR of mlx5, `STAT_HWCOUNTERS` (nest) of `STAT_HWCOUNTER_ENTRY` (nest)
`{ ENTRY_NAME string, ENTRY_VALUE u64 }` named `page_faults`, `page_invalidations`,
`page_prefetch` (drivers/infiniband/hw/mlx5/restrack.c, `fill_stat_mr_entry`).
*/

pub mod dump;
pub mod mr;
pub mod nldev;
pub mod reader;

pub use dump::{Body, Dump, Reply, Step};
pub use mr::{
    Device, DriverAttr, DriverValue, MrEntry, MrStats, OdpCounters, OdpKind, OdpRegion, Owner,
};
pub use nldev::{Attr, AttrWriter, WireError};
pub use reader::{NetlinkError, RdmaNetlink};
