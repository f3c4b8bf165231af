//! The C ABI of libibverbs that the loopback engine uses, written out by hand so that the
//! binary needs no rdma-core headers to build.
//!
//! Every struct mirrors `<infiniband/verbs.h>` (rdma-core; stable ABI since IBVERBS_1.1)
//! field by field up to the last field hostping reads or writes. The data-path verbs
//! (`ibv_post_send`, `ibv_poll_cq`) are `static inline` in the header: they call through
//! `ibv_context.ops`, so that table is mirrored too. So is `ibv_query_device_ex`, which
//! calls through the provider's `struct verbs_context`: that struct grows at its front (new
//! members go first, `context` stays last), so only its tail from `query_device_ex` to
//! `context` is mirrored from `query_rt_values` on ([`verbs_context_tail`]), found from the context by its distance. `tests/verbs_layout.rs` compiles a C
//! program against the real header and compares every offset and size in [`layout`].
#![allow(non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// Opaque handles: only ever used behind pointers.
#[repr(C)]
pub struct ibv_device {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ibv_pd {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ibv_comp_channel {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ibv_cq {
    _private: [u8; 0],
}

/// `struct ibv_context_ops`: the provider's function table. Only the two data-path entries
/// hostping calls are typed; the rest are placeholders of pointer size.
#[repr(C)]
pub struct ibv_context_ops {
    _before_poll_cq: [*mut c_void; 11],
    pub poll_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int>,
    _between: [*mut c_void; 13],
    pub post_send:
        Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int>,
    _after: [*mut c_void; 6],
}

/// `struct ibv_context`.
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub mutex: libc::pthread_mutex_t,
    /// `__VERBS_ABI_IS_EXTENDED` (all ones) when the context is the last member of a
    /// `struct verbs_context`.
    pub abi_compat: *mut c_void,
}

/// `__VERBS_ABI_IS_EXTENDED`: `(void *)UINTPTR_MAX`.
pub const VERBS_ABI_IS_EXTENDED: usize = usize::MAX;

/// The provider's `query_device_ex(context, input, attr, attr_size)`.
pub type QueryDeviceEx =
    unsafe extern "C" fn(*mut ibv_context, *const c_void, *mut ibv_device_attr_ex, usize) -> c_int;

/// The provider's `query_rt_values(context, values)` (`ibv_query_rt_values_ex`).
pub type QueryRtValues = unsafe extern "C" fn(*mut ibv_context, *mut ibv_values_ex) -> c_int;

/// The provider's `create_cq_ex(context, attr)` (`ibv_create_cq_ex`).
pub type CreateCqEx =
    unsafe extern "C" fn(*mut ibv_context, *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex;

/// The tail of `struct verbs_context`, from `query_rt_values` to the end (`context` is
/// last, `sz` just before it). Members before `query_rt_values` are newer and never
/// touched; those between are placeholders of their size. A provider built against an
/// older header has a shorter struct: a member is there only if `sz` reaches it.
#[repr(C)]
pub struct verbs_context_tail {
    pub query_rt_values: Option<QueryRtValues>,
    pub create_cq_ex: Option<CreateCqEx>,
    /// `struct verbs_ex_private *priv`.
    _priv: *mut c_void,
    pub query_device_ex: Option<QueryDeviceEx>,
    /// `ibv_destroy_flow` .. `close_xrcd` (10 pointers) and `_ABI_placeholder3` (u64).
    _between: [*mut c_void; 11],
    /// The size of the provider's whole `struct verbs_context`.
    pub sz: usize,
    pub context: ibv_context,
}

/// `struct ibv_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ibv_odp_caps {
    pub general_caps: u64,
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
}

/// `struct ibv_device_attr_ex` (the capabilities between `hca_core_clock` and
/// `xrc_odp_caps` are sized, not typed).
#[repr(C)]
pub struct ibv_device_attr_ex {
    pub orig_attr: ibv_device_attr,
    pub comp_mask: u32,
    pub odp_caps: ibv_odp_caps,
    /// Valid bits of a completion's hardware timestamp; 0: the device stamps none.
    pub completion_timestamp_mask: u64,
    /// The clock those timestamps count, in kHz.
    pub hca_core_clock: u64,
    /// `device_cap_flags_ex` .. `pci_atomic_caps`.
    _between: [u64; 14],
    pub xrc_odp_caps: u32,
    pub phys_port_cnt_ex: u32,
}

/// `struct ibv_device_attr`.
#[repr(C)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    _rest: [c_int; 16],
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_port_attr`.
#[repr(C)]
pub struct ibv_port_attr {
    pub state: c_uint,
    pub max_mtu: c_uint,
    pub active_mtu: c_uint,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

/// `struct ibv_mr`.
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ibv_qp` up to `qp_type` (the mutex and condition variable after it are the
/// library's).
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub handle: u32,
    pub qp_num: u32,
    pub state: c_uint,
    pub qp_type: c_uint,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`.
#[repr(C)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut c_void,
    pub cap: ibv_qp_cap,
    pub qp_type: c_uint,
    pub sq_sig_all: c_int,
}

/// `union ibv_gid`: 16 bytes, 8-aligned (its other member is two `__be64`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct ibv_gid {
    pub raw: [u8; 16],
}

/// `struct ibv_global_route`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_ah_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

/// `struct ibv_qp_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_attr {
    pub qp_state: c_uint,
    pub cur_qp_state: c_uint,
    pub path_mtu: c_uint,
    pub path_mig_state: c_uint,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `wr.rdma` of `struct ibv_send_wr`; the union is as large as its `atomic` member.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_rdma_wr {
    pub remote_addr: u64,
    pub rkey: u32,
    _union_tail: [u32; 5],
}

/// `struct ibv_send_wr` (the trailing unions are sized, not typed: hostping never uses
/// XRC, memory windows or TSO).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: c_uint,
    pub send_flags: c_uint,
    pub imm_data: u32,
    pub rdma: ibv_rdma_wr,
    pub qp_type_xrc: u32,
    pub _bind_mw_or_tso: [u64; 6],
}

impl Default for ibv_send_wr {
    fn default() -> Self {
        ibv_send_wr {
            wr_id: 0,
            next: std::ptr::null_mut(),
            sg_list: std::ptr::null_mut(),
            num_sge: 0,
            opcode: 0,
            send_flags: 0,
            imm_data: 0,
            rdma: ibv_rdma_wr::default(),
            qp_type_xrc: 0,
            _bind_mw_or_tso: [0; 6],
        }
    }
}

/// `struct ibv_values_ex`: the device's clock now.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_values_ex {
    pub comp_mask: u32,
    /// With `IBV_VALUES_MASK_RAW_CLOCK`: the device's free-running clock, in its cycles, in
    /// `tv_nsec` (`tv_sec` 0), as mlx4 and mlx5 fill it.
    pub raw_clock: libc::timespec,
}

/// `struct ibv_cq_init_attr_ex`.
#[repr(C)]
pub struct ibv_cq_init_attr_ex {
    pub cqe: u32,
    pub cq_context: *mut c_void,
    pub channel: *mut ibv_comp_channel,
    pub comp_vector: u32,
    /// `IBV_WC_EX_WITH_*`: what each completion carries.
    pub wc_flags: u64,
    pub comp_mask: u32,
    pub flags: u32,
    pub parent_domain: *mut ibv_pd,
}

/// `struct ibv_poll_cq_attr`.
#[repr(C)]
#[derive(Default)]
pub struct ibv_poll_cq_attr {
    pub comp_mask: u32,
}

/// `struct ibv_cq_ex`, up to `read_completion_ts`: an `ibv_cq` (its prefix) that is polled
/// through its own functions, one completion at a time, each field read by a call.
#[repr(C)]
pub struct ibv_cq_ex {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: libc::pthread_mutex_t,
    pub cond: libc::pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
    pub comp_mask: u32,
    /// The current completion's status.
    pub status: c_uint,
    /// The current completion's work request id.
    pub wr_id: u64,
    /// ENOENT: no completion.
    pub start_poll: Option<unsafe extern "C" fn(*mut ibv_cq_ex, *mut ibv_poll_cq_attr) -> c_int>,
    /// ENOENT: no more.
    pub next_poll: Option<unsafe extern "C" fn(*mut ibv_cq_ex) -> c_int>,
    pub end_poll: Option<unsafe extern "C" fn(*mut ibv_cq_ex)>,
    /// `read_opcode` .. `read_dlid_path_bits` (10 functions).
    _readers: [*mut c_void; 10],
    /// The current completion's timestamp, in the device's cycles.
    pub read_completion_ts: Option<unsafe extern "C" fn(*mut ibv_cq_ex) -> u64>,
}

/// `struct ibv_wc`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: c_uint,
    pub opcode: c_uint,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

// Enum values from verbs.h.
pub const IBV_QPT_RC: c_uint = 2;
pub const IBV_QPS_INIT: c_uint = 1;
pub const IBV_QPS_RTR: c_uint = 2;
pub const IBV_QPS_RTS: c_uint = 3;
pub const IBV_PORT_ACTIVE: c_uint = 4;
pub const IBV_LINK_LAYER_INFINIBAND: u8 = 1;
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;
pub const IBV_WR_RDMA_WRITE: c_uint = 0;
pub const IBV_WR_RDMA_READ: c_uint = 4;
pub const IBV_SEND_SIGNALED: c_uint = 1 << 1;
/// The payload is copied into the work request: no DMA read of the local buffer.
pub const IBV_SEND_INLINE: c_uint = 1 << 3;
pub const IBV_WC_SUCCESS: c_uint = 0;
/// `ibv_values_ex.raw_clock` is wanted (and, answered, valid).
pub const IBV_VALUES_MASK_RAW_CLOCK: u32 = 1;
/// Each completion carries the device's timestamp (`read_completion_ts`).
pub const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: u64 = 1 << 7;
pub const IBV_ACCESS_LOCAL_WRITE: c_int = 1;
pub const IBV_ACCESS_REMOTE_WRITE: c_int = 1 << 1;
pub const IBV_ACCESS_REMOTE_READ: c_int = 1 << 2;
/// On-demand paging: the pages are not pinned at registration; the RNIC faults them in.
pub const IBV_ACCESS_ON_DEMAND: c_int = 1 << 6;
pub const IBV_ODP_SUPPORT: u64 = 1;
pub const IBV_ODP_SUPPORT_IMPLICIT: u64 = 1 << 1;

pub const IBV_QP_STATE: c_int = 1;
pub const IBV_QP_ACCESS_FLAGS: c_int = 1 << 3;
pub const IBV_QP_PKEY_INDEX: c_int = 1 << 4;
pub const IBV_QP_PORT: c_int = 1 << 5;
pub const IBV_QP_AV: c_int = 1 << 7;
pub const IBV_QP_PATH_MTU: c_int = 1 << 8;
pub const IBV_QP_TIMEOUT: c_int = 1 << 9;
pub const IBV_QP_RETRY_CNT: c_int = 1 << 10;
pub const IBV_QP_RNR_RETRY: c_int = 1 << 11;
pub const IBV_QP_RQ_PSN: c_int = 1 << 12;
pub const IBV_QP_MAX_QP_RD_ATOMIC: c_int = 1 << 13;
pub const IBV_QP_MIN_RNR_TIMER: c_int = 1 << 15;
pub const IBV_QP_SQ_PSN: c_int = 1 << 16;
pub const IBV_QP_MAX_DEST_RD_ATOMIC: c_int = 1 << 17;
pub const IBV_QP_DEST_QPN: c_int = 1 << 20;

/// Offsets and sizes of every mirrored field, as `("struct.field", bytes)` and
/// `("sizeof struct", bytes)`, for the layout test against the real header.
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    macro_rules! off {
        ($t:ident . $f:ident) => {
            (
                concat!(stringify!($t), ".", stringify!($f)),
                offset_of!($t, $f),
            )
        };
    }
    vec![
        off!(ibv_context.ops),
        off!(ibv_context.abi_compat),
        ("sizeof ibv_context", size_of::<ibv_context>()),
        (
            "verbs_context.create_cq_ex - verbs_context.query_rt_values",
            offset_of!(verbs_context_tail, create_cq_ex),
        ),
        (
            "verbs_context.query_device_ex - verbs_context.query_rt_values",
            offset_of!(verbs_context_tail, query_device_ex),
        ),
        (
            "verbs_context.sz - verbs_context.query_rt_values",
            offset_of!(verbs_context_tail, sz),
        ),
        (
            "verbs_context.context - verbs_context.query_rt_values",
            offset_of!(verbs_context_tail, context),
        ),
        (
            "sizeof verbs_context - verbs_context.query_rt_values",
            size_of::<verbs_context_tail>(),
        ),
        off!(ibv_values_ex.raw_clock),
        ("sizeof ibv_values_ex", size_of::<ibv_values_ex>()),
        off!(ibv_cq_init_attr_ex.wc_flags),
        off!(ibv_cq_init_attr_ex.comp_mask),
        off!(ibv_cq_init_attr_ex.parent_domain),
        (
            "sizeof ibv_cq_init_attr_ex",
            size_of::<ibv_cq_init_attr_ex>(),
        ),
        off!(ibv_cq_ex.status),
        off!(ibv_cq_ex.wr_id),
        off!(ibv_cq_ex.start_poll),
        off!(ibv_cq_ex.end_poll),
        off!(ibv_cq_ex.read_completion_ts),
        off!(ibv_device_attr.max_mr_size),
        off!(ibv_device_attr_ex.comp_mask),
        off!(ibv_device_attr_ex.odp_caps),
        (
            "ibv_device_attr_ex.odp_caps.per_transport_caps.rc_odp_caps",
            offset_of!(ibv_device_attr_ex, odp_caps) + offset_of!(ibv_odp_caps, rc_odp_caps),
        ),
        (
            "ibv_device_attr_ex.odp_caps.per_transport_caps.uc_odp_caps",
            offset_of!(ibv_device_attr_ex, odp_caps) + offset_of!(ibv_odp_caps, uc_odp_caps),
        ),
        (
            "ibv_device_attr_ex.odp_caps.per_transport_caps.ud_odp_caps",
            offset_of!(ibv_device_attr_ex, odp_caps) + offset_of!(ibv_odp_caps, ud_odp_caps),
        ),
        ("sizeof ibv_odp_caps", size_of::<ibv_odp_caps>()),
        off!(ibv_device_attr_ex.completion_timestamp_mask),
        off!(ibv_device_attr_ex.hca_core_clock),
        off!(ibv_device_attr_ex.xrc_odp_caps),
        off!(ibv_device_attr_ex.phys_port_cnt_ex),
        ("sizeof ibv_device_attr_ex", size_of::<ibv_device_attr_ex>()),
        (
            "ibv_context_ops.poll_cq",
            offset_of!(ibv_context_ops, poll_cq),
        ),
        (
            "ibv_context_ops.post_send",
            offset_of!(ibv_context_ops, post_send),
        ),
        ("sizeof ibv_context_ops", size_of::<ibv_context_ops>()),
        off!(ibv_device_attr.max_qp_wr),
        off!(ibv_device_attr.max_cqe),
        off!(ibv_device_attr.max_qp_rd_atom),
        off!(ibv_device_attr.max_qp_init_rd_atom),
        off!(ibv_device_attr.phys_port_cnt),
        ("sizeof ibv_device_attr", size_of::<ibv_device_attr>()),
        off!(ibv_port_attr.active_mtu),
        off!(ibv_port_attr.lid),
        off!(ibv_port_attr.link_layer),
        off!(ibv_port_attr.port_cap_flags2),
        ("sizeof ibv_port_attr", size_of::<ibv_port_attr>()),
        off!(ibv_mr.addr),
        off!(ibv_mr.length),
        off!(ibv_mr.lkey),
        off!(ibv_mr.rkey),
        off!(ibv_qp.qp_num),
        off!(ibv_qp.qp_type),
        off!(ibv_qp_init_attr.cap),
        off!(ibv_qp_init_attr.qp_type),
        off!(ibv_qp_init_attr.sq_sig_all),
        ("sizeof ibv_qp_init_attr", size_of::<ibv_qp_init_attr>()),
        off!(ibv_global_route.flow_label),
        off!(ibv_global_route.sgid_index),
        off!(ibv_global_route.hop_limit),
        ("sizeof ibv_global_route", size_of::<ibv_global_route>()),
        off!(ibv_ah_attr.dlid),
        off!(ibv_ah_attr.is_global),
        off!(ibv_ah_attr.port_num),
        ("sizeof ibv_ah_attr", size_of::<ibv_ah_attr>()),
        off!(ibv_qp_attr.dest_qp_num),
        off!(ibv_qp_attr.qp_access_flags),
        off!(ibv_qp_attr.ah_attr),
        off!(ibv_qp_attr.pkey_index),
        off!(ibv_qp_attr.max_rd_atomic),
        off!(ibv_qp_attr.max_dest_rd_atomic),
        off!(ibv_qp_attr.min_rnr_timer),
        off!(ibv_qp_attr.port_num),
        off!(ibv_qp_attr.timeout),
        off!(ibv_qp_attr.retry_cnt),
        off!(ibv_qp_attr.rnr_retry),
        off!(ibv_qp_attr.rate_limit),
        ("sizeof ibv_qp_attr", size_of::<ibv_qp_attr>()),
        ("sizeof ibv_sge", size_of::<ibv_sge>()),
        off!(ibv_send_wr.sg_list),
        off!(ibv_send_wr.num_sge),
        off!(ibv_send_wr.opcode),
        off!(ibv_send_wr.send_flags),
        (
            "ibv_send_wr.wr.rdma.remote_addr",
            offset_of!(ibv_send_wr, rdma),
        ),
        (
            "ibv_send_wr.wr.rdma.rkey",
            offset_of!(ibv_send_wr, rdma) + offset_of!(ibv_rdma_wr, rkey),
        ),
        ("sizeof ibv_send_wr", size_of::<ibv_send_wr>()),
        off!(ibv_wc.status),
        off!(ibv_wc.vendor_err),
        off!(ibv_wc.qp_num),
        ("sizeof ibv_wc", size_of::<ibv_wc>()),
    ]
}
