//! libibverbs, loaded at run time.
//!
//! [`Verbs::load`] opens `libibverbs.so.1` with dlopen and resolves every symbol hostping
//! uses once, into one table; a missing library or symbol is an [`Unavailable`] result,
//! not a crash, so the same binary runs on machines without rdma-core (as NCCL does).
//! The wrappers ([`Context`], [`Pd`], [`Mr`], [`Cq`], [`Qp`]) own one verbs object each and
//! free it on drop; their lifetimes make the borrow checker enforce the destruction order
//! verbs requires (QP before CQ, MR before PD, everything before the context).

pub mod ffi;
pub mod odp;
mod timestamps;

use ffi::*;
pub use odp::{CapsSource, OdpCaps, TransportOdp};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use timestamps::StampedCompletion;

/// libibverbs or one of its symbols is missing: no verbs on this machine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct Unavailable {
    /// Why, naming the library or symbol.
    pub reason: String,
}

/// A verbs call failed, or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VerbsError {
    /// A call failed.
    #[error("{call}: {source}")]
    Call {
        /// The call and what it was given (`ibv_reg_mr(131072 B)`).
        call: String,
        /// errno as the call left it.
        #[source]
        source: std::io::Error,
    },
    /// The device's provider library (`libmlx5`, `librxe`, ...) left a data-path operation
    /// out: its entry in the context's op table (`ibv_context.ops`, which the `static
    /// inline` verbs call through) is NULL. Calling through it would jump to address 0.
    #[error("{device}: the provider does not implement {op}")]
    NotImplemented {
        /// The device (`mlx5_0`).
        device: String,
        /// The verb (`ibv_poll_cq`).
        op: &'static str,
    },
}

impl VerbsError {
    /// A failed call, with the cause it gives.
    pub fn call(call: impl Into<String>, source: std::io::Error) -> VerbsError {
        VerbsError::Call {
            call: call.into(),
            source,
        }
    }

    fn last(call: impl Into<String>) -> VerbsError {
        VerbsError::call(call, std::io::Error::last_os_error())
    }

    /// Verbs calls that return an errno value instead of setting errno.
    fn code(call: impl Into<String>, rc: c_int) -> VerbsError {
        VerbsError::call(call, std::io::Error::from_raw_os_error(rc.abs()))
    }
}

/// The provider's `poll_cq` (`ibv_poll_cq` calls through it).
type PollCq = unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int;
/// The provider's `post_send` (`ibv_post_send` calls through it).
type PostSend = unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int;

/// An entry of a provider's op table, or [`VerbsError::NotImplemented`] naming `device` and
/// `op` when the provider left it NULL (rdma-core's providers set both data-path entries,
/// but a third-party or half-built provider need not, and the inline verbs would then call
/// address 0).
fn provider_op<F>(device: &str, op: &'static str, entry: Option<F>) -> Result<F, VerbsError> {
    entry.ok_or_else(|| VerbsError::NotImplemented {
        device: device.to_string(),
        op,
    })
}

/// `ops.poll_cq` of a context's op table.
fn poll_cq_op(ops: &ibv_context_ops, device: &str) -> Result<PollCq, VerbsError> {
    provider_op(device, "ibv_poll_cq", ops.poll_cq)
}

/// `ops.post_send` of a context's op table.
fn post_send_op(ops: &ibv_context_ops, device: &str) -> Result<PostSend, VerbsError> {
    provider_op(device, "ibv_post_send", ops.post_send)
}

type RegDmabufMr = unsafe extern "C" fn(*mut ibv_pd, u64, usize, u64, c_int, c_int) -> *mut ibv_mr;

/// Every libibverbs entry point hostping calls, resolved once.
struct Symbols {
    get_device_list: unsafe extern "C" fn(*mut c_int) -> *mut *mut ibv_device,
    free_device_list: unsafe extern "C" fn(*mut *mut ibv_device),
    get_device_name: unsafe extern "C" fn(*mut ibv_device) -> *const c_char,
    open_device: unsafe extern "C" fn(*mut ibv_device) -> *mut ibv_context,
    close_device: unsafe extern "C" fn(*mut ibv_context) -> c_int,
    query_device: unsafe extern "C" fn(*mut ibv_context, *mut ibv_device_attr) -> c_int,
    query_port: unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int,
    query_gid: unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int,
    alloc_pd: unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_pd,
    dealloc_pd: unsafe extern "C" fn(*mut ibv_pd) -> c_int,
    reg_mr: unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, c_int) -> *mut ibv_mr,
    /// IBVERBS_1.12 (rdma-core 34): absent from older libraries.
    reg_dmabuf_mr: Option<RegDmabufMr>,
    dereg_mr: unsafe extern "C" fn(*mut ibv_mr) -> c_int,
    create_cq: unsafe extern "C" fn(
        *mut ibv_context,
        c_int,
        *mut c_void,
        *mut ibv_comp_channel,
        c_int,
    ) -> *mut ibv_cq,
    destroy_cq: unsafe extern "C" fn(*mut ibv_cq) -> c_int,
    create_qp: unsafe extern "C" fn(*mut ibv_pd, *mut ibv_qp_init_attr) -> *mut ibv_qp,
    modify_qp: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int,
    query_qp:
        unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int, *mut ibv_qp_init_attr) -> c_int,
    destroy_qp: unsafe extern "C" fn(*mut ibv_qp) -> c_int,
    wc_status_str: unsafe extern "C" fn(c_uint) -> *const c_char,
}

/// The loaded library and its symbol table.
pub struct Verbs {
    sym: Symbols,
    // Keeps the code behind `sym` mapped; dropped last.
    _lib: libloading::Library,
}

/// The library names tried, in order: the versioned SONAME that rdma-core installs, then
/// the development symlink.
const LIBRARY_NAMES: [&str; 2] = ["libibverbs.so.1", "libibverbs.so"];

impl Verbs {
    /// Loads libibverbs and resolves its symbols.
    pub fn load() -> Result<Arc<Verbs>, Unavailable> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: loading libibverbs runs its constructors, which only register
            // providers; no Rust invariant depends on them.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::resolve(lib, name).map(Arc::new),
                Err(e) => tried.push(format!("{name}: {e}")),
            }
        }
        Err(Unavailable {
            reason: format!(
                "libibverbs is not installed (install rdma-core / libibverbs1): {}",
                tried.join("; ")
            ),
        })
    }

    fn resolve(lib: libloading::Library, name: &str) -> Result<Verbs, Unavailable> {
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the type on the left is the C prototype of this symbol in
                // <infiniband/verbs.h>; dlsym returns the default (newest) version.
                *unsafe { lib.get(concat!($s, "\0").as_bytes()) }.map_err(|e| Unavailable {
                    reason: format!("{name} has no symbol {}: {e}", $s),
                })?
            };
        }
        let sym = Symbols {
            get_device_list: sym!("ibv_get_device_list"),
            free_device_list: sym!("ibv_free_device_list"),
            get_device_name: sym!("ibv_get_device_name"),
            open_device: sym!("ibv_open_device"),
            close_device: sym!("ibv_close_device"),
            query_device: sym!("ibv_query_device"),
            query_port: sym!("ibv_query_port"),
            query_gid: sym!("ibv_query_gid"),
            alloc_pd: sym!("ibv_alloc_pd"),
            dealloc_pd: sym!("ibv_dealloc_pd"),
            reg_mr: sym!("ibv_reg_mr"),
            // SAFETY: as above; an absent symbol is allowed.
            reg_dmabuf_mr: unsafe { lib.get::<RegDmabufMr>(b"ibv_reg_dmabuf_mr\0") }
                .ok()
                .map(|s| *s),
            dereg_mr: sym!("ibv_dereg_mr"),
            create_cq: sym!("ibv_create_cq"),
            destroy_cq: sym!("ibv_destroy_cq"),
            create_qp: sym!("ibv_create_qp"),
            modify_qp: sym!("ibv_modify_qp"),
            query_qp: sym!("ibv_query_qp"),
            destroy_qp: sym!("ibv_destroy_qp"),
            wc_status_str: sym!("ibv_wc_status_str"),
        };
        Ok(Verbs { sym, _lib: lib })
    }

    /// `ibv_get_device_list`, with the common failure explained: ENOSYS means the kernel
    /// has no RDMA support (no `/sys/class/infiniband_verbs`).
    fn device_list(&self) -> Result<(*mut *mut ibv_device, usize), VerbsError> {
        let mut n: c_int = 0;
        // SAFETY: n is an out-parameter; the caller frees the list.
        let list = unsafe { (self.sym.get_device_list)(&mut n) };
        if list.is_null() {
            let e = std::io::Error::last_os_error();
            let call = if e.raw_os_error() == Some(libc::ENOSYS) {
                "ibv_get_device_list (the kernel offers no RDMA verbs: no ib_uverbs)"
            } else {
                "ibv_get_device_list"
            };
            return Err(VerbsError::call(call, e));
        }
        Ok((list, n.max(0) as usize))
    }

    /// Names of the RDMA devices libibverbs sees (`mlx5_0`, `rxe0`).
    pub fn device_names(&self) -> Result<Vec<String>, VerbsError> {
        let (list, n) = self.device_list()?;
        let names = (0..n)
            .map(|i| {
                // SAFETY: list has n valid entries; the name is a NUL-terminated string
                // owned by the device, copied before the list is freed.
                unsafe { CStr::from_ptr((self.sym.get_device_name)(*list.add(i))) }
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        // SAFETY: list came from ibv_get_device_list.
        unsafe { (self.sym.free_device_list)(list) };
        Ok(names)
    }

    /// Opens the device called `name`.
    pub fn open(self: &Arc<Self>, name: &str) -> Result<Context, VerbsError> {
        // The context opened from an entry stays valid after the list is freed
        // (libibverbs keeps devices alive while a context is open).
        let (list, n) = self.device_list()?;
        let mut ctx = std::ptr::null_mut();
        for i in 0..n {
            // SAFETY: i < n.
            let dev = unsafe { *list.add(i) };
            // SAFETY: dev is a valid device of the list.
            let dev_name = unsafe { CStr::from_ptr((self.sym.get_device_name)(dev)) };
            if dev_name.to_bytes() == name.as_bytes() {
                // SAFETY: dev is valid until the list is freed.
                ctx = unsafe { (self.sym.open_device)(dev) };
                if ctx.is_null() {
                    let e = VerbsError::last(format!("ibv_open_device({name})"));
                    // SAFETY: list came from ibv_get_device_list.
                    unsafe { (self.sym.free_device_list)(list) };
                    return Err(e);
                }
                break;
            }
        }
        // SAFETY: list came from ibv_get_device_list.
        unsafe { (self.sym.free_device_list)(list) };
        let ctx = NonNull::new(ctx).ok_or_else(|| {
            VerbsError::call(
                format!("ibv_open_device({name})"),
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "libibverbs has no such device",
                ),
            )
        })?;
        Ok(Context {
            verbs: Arc::clone(self),
            ctx,
            name: name.to_string(),
        })
    }

    /// `ibv_wc_status_str`: "remote access error", "transport retry counter exceeded".
    pub fn wc_status(&self, status: c_uint) -> String {
        // SAFETY: returns a static string for any value.
        unsafe { CStr::from_ptr((self.sym.wc_status_str)(status)) }
            .to_string_lossy()
            .into_owned()
    }

    /// Whether `ibv_reg_dmabuf_mr` exists (GPU memory through dma-buf).
    pub fn has_dmabuf(&self) -> bool {
        self.sym.reg_dmabuf_mr.is_some()
    }
}

/// An open device.
pub struct Context {
    verbs: Arc<Verbs>,
    ctx: NonNull<ibv_context>,
    name: String,
}

/// The device limits the loopback engine sizes its queues by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceCaps {
    /// Work requests per QP.
    pub max_qp_wr: u32,
    /// Entries per CQ.
    pub max_cqe: u32,
    /// Outstanding RDMA READs a QP may be the target of.
    pub max_qp_rd_atom: u8,
    /// Outstanding RDMA READs a QP may issue.
    pub max_qp_init_rd_atom: u8,
}

/// A device's own clock for completion timestamps, as `ibv_query_device_ex` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletionClock {
    /// Valid bits of a completion timestamp; 0 when the device stamps none.
    pub timestamp_mask: u64,
    /// The clock's rate in kHz (0 where unknown).
    pub core_clock_khz: u64,
    /// Which query answered: the legacy one knows nothing of timestamps.
    pub source: CapsSource,
}

impl CompletionClock {
    /// Whether completions can carry the device's timestamps.
    pub fn offered(&self) -> bool {
        self.timestamp_mask != 0 && self.core_clock_khz != 0
    }
}

/// What the engine needs of a port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortInfo {
    /// `IBV_PORT_ACTIVE` = 4.
    pub state: u32,
    /// Active MTU (enum ibv_mtu: 1 = 256 B ... 5 = 4096 B).
    pub active_mtu: u32,
    /// LID (InfiniBand).
    pub lid: u16,
    /// 1 InfiniBand, 2 Ethernet.
    pub link_layer: u8,
}

impl Context {
    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The library this context came from.
    pub fn verbs(&self) -> &Arc<Verbs> {
        &self.verbs
    }

    fn raw(&self) -> *mut ibv_context {
        self.ctx.as_ptr()
    }

    /// `ibv_query_device`.
    pub fn caps(&self) -> Result<DeviceCaps, VerbsError> {
        // SAFETY: ibv_device_attr is plain data; zero is a valid bit pattern.
        let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is open; attr is a properly sized out-parameter.
        let rc = unsafe { (self.verbs.sym.query_device)(self.raw(), &mut attr) };
        if rc != 0 {
            return Err(VerbsError::code(
                format!("ibv_query_device({})", self.name),
                rc,
            ));
        }
        let clamp = |v: c_int| v.clamp(0, 255) as u8;
        Ok(DeviceCaps {
            max_qp_wr: attr.max_qp_wr.max(0) as u32,
            max_cqe: attr.max_cqe.max(0) as u32,
            max_qp_rd_atom: clamp(attr.max_qp_rd_atom),
            max_qp_init_rd_atom: clamp(attr.max_qp_init_rd_atom),
        })
    }

    /// The ODP capabilities: `ibv_query_device_ex` (see [`Context::device_attr_ex`]).
    pub fn odp_caps(&self) -> Result<OdpCaps, VerbsError> {
        let (attr, source) = self.device_attr_ex()?;
        Ok(OdpCaps::from_raw(
            attr.odp_caps,
            attr.xrc_odp_caps,
            attr.orig_attr.max_mr_size,
            source,
        ))
    }

    /// Whether the device stamps completions with its own clock (`ibv_query_device_ex`'s
    /// `completion_timestamp_mask` and `hca_core_clock`): what R-Pingmesh (SIGCOMM'24) takes
    /// host processing out of a probe's time with. A device that reports no mask, or a
    /// library without the extended query, offers none.
    pub fn completion_clock(&self) -> Result<CompletionClock, VerbsError> {
        let (attr, source) = self.device_attr_ex()?;
        Ok(CompletionClock {
            timestamp_mask: attr.completion_timestamp_mask,
            core_clock_khz: attr.hca_core_clock,
            source,
        })
    }

    /// `ibv_query_device_ex` (a `static inline` of verbs.h, mirrored: the provider's
    /// `query_device_ex` through `struct verbs_context`, else the legacy `ibv_query_device`
    /// with every extended field zero, exactly as the inline falls back).
    fn device_attr_ex(&self) -> Result<(ibv_device_attr_ex, CapsSource), VerbsError> {
        // SAFETY: plain data; zero is what the inline's fallback leaves too.
        let mut attr: ibv_device_attr_ex = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is open; the op is only used when the context says it is extended.
        let op = unsafe { query_device_ex_op(self.raw()) };
        let rc = match op {
            // SAFETY: ctx is open, no input (NULL is allowed: comp_mask 0), attr is an
            // out-parameter of the size passed.
            Some(query) => unsafe {
                query(
                    self.raw(),
                    std::ptr::null(),
                    &mut attr,
                    std::mem::size_of::<ibv_device_attr_ex>(),
                )
            },
            None => libc::ENOSYS,
        };
        let source = match rc {
            0 => CapsSource::Extended,
            libc::EOPNOTSUPP | libc::ENOSYS => {
                // SAFETY: as above.
                attr = unsafe { std::mem::zeroed() };
                // SAFETY: ctx is open; orig_attr is a full ibv_device_attr.
                let rc = unsafe { (self.verbs.sym.query_device)(self.raw(), &mut attr.orig_attr) };
                if rc != 0 {
                    return Err(VerbsError::code(
                        format!("ibv_query_device({})", self.name),
                        rc,
                    ));
                }
                CapsSource::Legacy
            }
            rc => {
                return Err(VerbsError::code(
                    format!("ibv_query_device_ex({})", self.name),
                    rc,
                ))
            }
        };
        Ok((attr, source))
    }

    /// `ibv_query_port`.
    pub fn port(&self, port: u8) -> Result<PortInfo, VerbsError> {
        // SAFETY: plain data.
        let mut attr: ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is open; the exported symbol fills the compat prefix of attr, which
        // is zeroed beyond it.
        let rc = unsafe { (self.verbs.sym.query_port)(self.raw(), port, &mut attr) };
        if rc != 0 {
            return Err(VerbsError::code(
                format!("ibv_query_port({} port {port})", self.name),
                rc,
            ));
        }
        Ok(PortInfo {
            state: attr.state,
            active_mtu: attr.active_mtu,
            lid: attr.lid,
            link_layer: attr.link_layer,
        })
    }

    /// `ibv_query_gid`.
    pub fn gid(&self, port: u8, index: u32) -> Result<[u8; 16], VerbsError> {
        let mut gid = ibv_gid::default();
        // SAFETY: ctx is open; gid is a 16-byte out-parameter.
        let rc = unsafe { (self.verbs.sym.query_gid)(self.raw(), port, index as c_int, &mut gid) };
        if rc != 0 {
            return Err(VerbsError::last(format!(
                "ibv_query_gid({} port {port} index {index})",
                self.name
            )));
        }
        Ok(gid.raw)
    }

    /// `ibv_alloc_pd`.
    pub fn alloc_pd(&self) -> Result<Pd<'_>, VerbsError> {
        // SAFETY: ctx is open.
        let pd = unsafe { (self.verbs.sym.alloc_pd)(self.raw()) };
        NonNull::new(pd)
            .map(|pd| Pd { ctx: self, pd })
            .ok_or_else(|| VerbsError::last(format!("ibv_alloc_pd({})", self.name)))
    }

    /// `ibv_create_cq` with `entries` entries, polled (no completion channel).
    pub fn create_cq(&self, entries: u32) -> Result<Cq<'_>, VerbsError> {
        // SAFETY: ctx is open; no channel, vector 0.
        let cq = unsafe {
            (self.verbs.sym.create_cq)(
                self.raw(),
                entries as c_int,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        NonNull::new(cq)
            .map(|cq| Cq {
                ctx: self,
                cq,
                stamped: false,
            })
            .ok_or_else(|| VerbsError::last(format!("ibv_create_cq({entries} entries)")))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every PD, CQ, MR and QP borrows this context, so all are gone.
        unsafe { (self.verbs.sym.close_device)(self.raw()) };
    }
}

/// `verbs_get_ctx_op(ctx, op)` of verbs.h: the member at `offset` in
/// [`verbs_context_tail`] (`offset_of!(verbs_context_tail, query_device_ex)`, ...), when
/// the context is embedded in a `struct verbs_context` (`abi_compat` all ones) large enough
/// to have the member. The caller reads it as the member's type (an `Option` of a function
/// pointer: `None` where the provider left it unset).
///
/// # Safety
/// `ctx` must be an open context; `offset` the offset of a member of pointer size.
unsafe fn ctx_op(ctx: *mut ibv_context, offset: usize) -> Option<*const c_void> {
    // SAFETY: ctx is valid (caller).
    if unsafe { (*ctx).abi_compat } as usize != VERBS_ABI_IS_EXTENDED {
        return None;
    }
    // An extended context is the last member of the provider's verbs_context, so the tail
    // lies right before it in the same allocation (container_of, as the inline). Only the
    // bytes the provider's struct has (`sz`, counted back from its end) may be read.
    let context_at = std::mem::offset_of!(verbs_context_tail, context);
    // SAFETY: as above; `sz` sits right before `context` in every version of the struct.
    let tail = unsafe { ctx.cast::<u8>().sub(context_at) };
    // SAFETY: see above.
    let sz = unsafe {
        tail.add(std::mem::offset_of!(verbs_context_tail, sz))
            .cast::<usize>()
            .read_unaligned()
    };
    if sz < std::mem::size_of::<verbs_context_tail>() - offset {
        return None;
    }
    // SAFETY: the provider's struct reaches the member (checked just above).
    let op = unsafe { tail.add(offset).cast::<*const c_void>().read_unaligned() };
    (!op.is_null()).then_some(op)
}

/// The provider's `query_device_ex` ([`ctx_op`]).
///
/// # Safety
/// `ctx` must be an open context.
unsafe fn query_device_ex_op(ctx: *mut ibv_context) -> Option<QueryDeviceEx> {
    // SAFETY: the member is the provider's query_device_ex (ctx_op's contract).
    unsafe {
        ctx_op(
            ctx,
            std::mem::offset_of!(verbs_context_tail, query_device_ex),
        )
        .map(|op| std::mem::transmute::<*const c_void, QueryDeviceEx>(op))
    }
}

/// A protection domain.
pub struct Pd<'c> {
    ctx: &'c Context,
    pd: NonNull<ibv_pd>,
}

/// Access rights of a probe region: the RNIC writes into it locally and the (self-)peer
/// reads and writes it remotely.
const PROBE_ACCESS: c_int =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

/// Access rights of an on-demand-paging region (ISPASS'21's micro-benchmarks): the RNIC
/// writes READ responses into it locally and the peer reads it remotely, and its pages are
/// faulted in by the RNIC when first used rather than pinned at registration.
const ODP_ACCESS: c_int = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND;

impl<'c> Pd<'c> {
    /// `ibv_reg_mr` of `len` bytes at `addr`, pinned.
    ///
    /// # Safety
    /// `addr..addr+len` must stay mapped until the returned [`Mr`] is dropped.
    pub unsafe fn reg_mr(&self, addr: *mut u8, len: usize) -> Result<Mr<'_>, VerbsError> {
        // SAFETY: the caller's promise is passed on.
        unsafe { self.reg(addr, len, PROBE_ACCESS, "") }
    }

    /// `ibv_reg_mr` of `len` bytes at `addr` with `IBV_ACCESS_ON_DEMAND` (plus local write
    /// and remote read): nothing is pinned, the RNIC takes a page fault on first use.
    ///
    /// # Safety
    /// `addr..addr+len` must stay mapped until the returned [`Mr`] is dropped.
    pub unsafe fn reg_odp_mr(&self, addr: *mut u8, len: usize) -> Result<Mr<'_>, VerbsError> {
        // SAFETY: the caller's promise is passed on.
        unsafe { self.reg(addr, len, ODP_ACCESS, ", ON_DEMAND") }
    }

    /// # Safety
    /// As [`Pd::reg_mr`].
    unsafe fn reg(
        &self,
        addr: *mut u8,
        len: usize,
        access: c_int,
        what: &str,
    ) -> Result<Mr<'_>, VerbsError> {
        // SAFETY: pd is valid; the caller keeps the range mapped while the MR lives.
        let mr = unsafe { (self.ctx.verbs.sym.reg_mr)(self.pd.as_ptr(), addr.cast(), len, access) };
        NonNull::new(mr)
            .map(|mr| Mr { pd: self, mr })
            .ok_or_else(|| VerbsError::last(format!("ibv_reg_mr({len} B{what})")))
    }

    /// `ibv_reg_dmabuf_mr` of `len` bytes of the dma-buf `fd` at `offset`, addressed by the
    /// peer as `iova`.
    pub fn reg_dmabuf_mr(
        &self,
        fd: c_int,
        offset: u64,
        len: usize,
        iova: u64,
    ) -> Result<Mr<'_>, VerbsError> {
        let Some(reg) = self.ctx.verbs.sym.reg_dmabuf_mr else {
            return Err(VerbsError::call(
                "ibv_reg_dmabuf_mr",
                std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "this libibverbs predates dma-buf (rdma-core 34)",
                ),
            ));
        };
        // SAFETY: pd is valid; the MR takes its own reference on the dma-buf.
        let mr = unsafe { reg(self.pd.as_ptr(), offset, len, iova, fd, PROBE_ACCESS) };
        NonNull::new(mr)
            .map(|mr| Mr { pd: self, mr })
            .ok_or_else(|| VerbsError::last(format!("ibv_reg_dmabuf_mr({len} B)")))
    }

    /// Creates an RC QP on `cq` (send and receive) for `max_send_wr` outstanding requests.
    pub fn create_rc_qp<'q>(
        &'q self,
        cq: &'q Cq<'c>,
        max_send_wr: u32,
    ) -> Result<Qp<'q>, VerbsError> {
        self.create_rc_qp_inline(cq, max_send_wr, 0)
    }

    /// As [`Pd::create_rc_qp`], taking payloads of up to `max_inline_data` bytes inline
    /// ([`Post::inline`]).
    pub fn create_rc_qp_inline<'q>(
        &'q self,
        cq: &'q Cq<'c>,
        max_send_wr: u32,
        max_inline_data: u32,
    ) -> Result<Qp<'q>, VerbsError> {
        let mut init = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq.cq.as_ptr(),
            recv_cq: cq.cq.as_ptr(),
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap {
                max_send_wr,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data,
            },
            qp_type: IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: pd and cq are valid and outlive the QP ('q).
        let qp = unsafe { (self.ctx.verbs.sym.create_qp)(self.pd.as_ptr(), &mut init) };
        NonNull::new(qp)
            .map(|qp| Qp {
                ctx: self.ctx,
                qp,
                _cq: std::marker::PhantomData,
            })
            .ok_or_else(|| VerbsError::last(format!("ibv_create_qp(RC, {max_send_wr} WRs)")))
    }
}

impl Drop for Pd<'_> {
    fn drop(&mut self) {
        // SAFETY: MRs and QPs borrow this PD, so none is left.
        unsafe { (self.ctx.verbs.sym.dealloc_pd)(self.pd.as_ptr()) };
    }
}

/// A registered memory region.
pub struct Mr<'p> {
    pd: &'p Pd<'p>,
    mr: NonNull<ibv_mr>,
}

impl Mr<'_> {
    /// Local key.
    pub fn lkey(&self) -> u32 {
        // SAFETY: mr is valid while self lives.
        unsafe { self.mr.as_ref().lkey }
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { self.mr.as_ref().rkey }
    }
}

impl Drop for Mr<'_> {
    fn drop(&mut self) {
        // SAFETY: no posted work request refers to the MR any more: QPs are dropped first
        // (they borrow the same PD and are declared after MRs by every user).
        unsafe { (self.pd.ctx.verbs.sym.dereg_mr)(self.mr.as_ptr()) };
    }
}

/// A completion queue, polled.
pub struct Cq<'c> {
    ctx: &'c Context,
    cq: NonNull<ibv_cq>,
    /// Made by `ibv_create_cq_ex` with completion timestamps ([`Context::create_stamped_cq`]):
    /// the `ibv_cq` is the prefix of an `ibv_cq_ex`, which [`Cq::poll_stamped`] polls.
    stamped: bool,
}

impl Cq<'_> {
    /// Polls up to `wc.len()` completions; returns how many were written.
    pub fn poll(&self, wc: &mut [ibv_wc]) -> Result<usize, VerbsError> {
        // SAFETY: ctx is open, so its ops table is the provider's.
        let poll = poll_cq_op(unsafe { &(*self.ctx.raw()).ops }, &self.ctx.name)?;
        let room = c_int::try_from(wc.len()).unwrap_or(c_int::MAX);
        // SAFETY: cq is valid; wc has room for `room` entries.
        let n = unsafe { poll(self.cq.as_ptr(), room, wc.as_mut_ptr()) };
        completions(n, room, &self.ctx.name)
    }
}

/// What `ibv_poll_cq` returned, as a count of completions in the `room` entries it was
/// given: negative is a failure (the inline verb's contract), and a count beyond `room`
/// (a broken provider) is one too, rather than a slice past the end of the array.
fn completions(n: c_int, room: c_int, device: &str) -> Result<usize, VerbsError> {
    if n < 0 {
        return Err(VerbsError::code("ibv_poll_cq", libc::EIO));
    }
    if n > room {
        return Err(VerbsError::call(
            format!("ibv_poll_cq({device})"),
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the provider reported {n} completions for {room} entries"),
            ),
        ));
    }
    Ok(n as usize)
}

/// Why [`Cq::wait`] returned without completions.
#[derive(Debug, thiserror::Error)]
pub enum CqWaitError {
    /// No completion arrived before the deadline.
    #[error("no completion before the deadline")]
    Timeout,
    /// A completion arrived in error.
    #[error("{text} (status {status}, vendor error 0x{vendor_err:x})")]
    Failed {
        /// `ibv_wc_status_str` of the status.
        text: String,
        /// `ibv_wc.status`.
        status: c_uint,
        /// `ibv_wc.vendor_err`.
        vendor_err: u32,
        /// `ibv_wc.wr_id` of the failed request.
        wr_id: u64,
    },
    /// Polling itself failed.
    #[error(transparent)]
    Poll(VerbsError),
}

impl Cq<'_> {
    /// Busy-polls until at least one completion arrives (returning how many were written to
    /// `wc`), one arrives in error, or `timeout` passes.
    ///
    /// Busy polling, as perftest does: a completion is microseconds away and a sleep would
    /// be measured. The clock (a system call where the kernel has no stable TSC clocksource,
    /// as in a QEMU TCG guest) is read every 4096 polls only, and not at all before the
    /// first 4096: a caller timing the completion would otherwise time that read too (it
    /// made the loopback engine's 1 B READ 1.22x `ib_read_lat`'s in the guest). The timeout
    /// therefore runs from the 4096th poll, a few milliseconds late at most.
    pub fn wait(&self, wc: &mut [ibv_wc], timeout: Duration) -> Result<usize, CqWaitError> {
        let mut spins: u32 = 0;
        let mut since: Option<Instant> = None;
        loop {
            let n = self.poll_checked(wc)?;
            if n > 0 {
                return Ok(n);
            }
            spins = spins.wrapping_add(1);
            if spins & 4095 == 0 {
                let now = Instant::now();
                match since {
                    None => since = Some(now),
                    Some(first) if now.duration_since(first) > timeout => {
                        return Err(CqWaitError::Timeout)
                    }
                    Some(_) => {}
                }
            }
        }
    }

    /// Polls once, as [`Cq::poll`], and fails if a completion is in error.
    pub fn poll_checked(&self, wc: &mut [ibv_wc]) -> Result<usize, CqWaitError> {
        let n = self.poll(wc).map_err(CqWaitError::Poll)?;
        if let Some(bad) = wc[..n].iter().find(|w| w.status != IBV_WC_SUCCESS) {
            return Err(CqWaitError::Failed {
                text: self.ctx.verbs.wc_status(bad.status),
                status: bad.status,
                vendor_err: bad.vendor_err,
                wr_id: bad.wr_id,
            });
        }
        Ok(n)
    }
}

impl Drop for Cq<'_> {
    fn drop(&mut self) {
        // SAFETY: QPs using this CQ borrow it and are gone.
        unsafe { (self.ctx.verbs.sym.destroy_cq)(self.cq.as_ptr()) };
    }
}

/// An RC queue pair.
pub struct Qp<'q> {
    ctx: &'q Context,
    qp: NonNull<ibv_qp>,
    _cq: std::marker::PhantomData<&'q ()>,
}

/// Where a QP sends: its own address for a loopback, the peer's for a pair probe.
#[derive(Debug, Clone, Copy)]
pub struct Destination {
    /// Port number.
    pub port: u8,
    /// Destination QP number.
    pub qp_num: u32,
    /// Path MTU (enum ibv_mtu).
    pub mtu: u32,
    /// RoCE or routed IB: the GID and the local GID index; `None` for a LID-routed IB port.
    pub gid: Option<([u8; 16], u8)>,
    /// Destination LID (InfiniBand).
    pub lid: u16,
    /// Outstanding RDMA READs as responder and as requester.
    pub rd_atomic: (u8, u8),
    /// Local ACK timeout exponent: 4.096 us x 2^timeout per retry.
    pub ack_timeout: u8,
    /// The first PSN the peer sends with (our receive PSN).
    pub rq_psn: u32,
    /// The first PSN we send with (what the peer was told as our PSN).
    pub sq_psn: u32,
}

impl Qp<'_> {
    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: qp is valid while self lives.
        unsafe { self.qp.as_ref().qp_num }
    }

    fn modify(&self, attr: &mut ibv_qp_attr, mask: c_int, what: &str) -> Result<(), VerbsError> {
        // SAFETY: qp is valid; attr is fully initialised.
        let rc = unsafe { (self.ctx.verbs.sym.modify_qp)(self.qp.as_ptr(), attr, mask) };
        if rc != 0 {
            return Err(VerbsError::code(
                format!("ibv_modify_qp(QP {} to {what})", self.qp_num()),
                rc,
            ));
        }
        Ok(())
    }

    /// RESET -> INIT -> RTR -> RTS towards `dest`.
    pub fn connect(&self, dest: &Destination) -> Result<(), VerbsError> {
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_INIT,
            pkey_index: 0,
            port_num: dest.port,
            qp_access_flags: PROBE_ACCESS as c_uint,
            ..Default::default()
        };
        self.modify(
            &mut a,
            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
            "INIT",
        )?;
        let mut ah = ibv_ah_attr {
            dlid: dest.lid,
            port_num: dest.port,
            ..Default::default()
        };
        if let Some((gid, index)) = dest.gid {
            ah.is_global = 1;
            ah.grh = ibv_global_route {
                dgid: ibv_gid { raw: gid },
                sgid_index: index,
                // RoCE v2 packets are IP: a hop limit of 1 would be dropped by a router;
                // 64 is what perftest and the kernel's rdma_cm use.
                hop_limit: 64,
                ..Default::default()
            };
        }
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTR,
            path_mtu: dest.mtu,
            dest_qp_num: dest.qp_num,
            rq_psn: dest.rq_psn,
            max_dest_rd_atomic: dest.rd_atomic.0,
            min_rnr_timer: 12,
            ah_attr: ah,
            ..Default::default()
        };
        self.modify(
            &mut a,
            IBV_QP_STATE
                | IBV_QP_AV
                | IBV_QP_PATH_MTU
                | IBV_QP_DEST_QPN
                | IBV_QP_RQ_PSN
                | IBV_QP_MAX_DEST_RD_ATOMIC
                | IBV_QP_MIN_RNR_TIMER,
            "RTR",
        )?;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTS,
            timeout: dest.ack_timeout,
            retry_cnt: 7,
            rnr_retry: 7,
            sq_psn: dest.sq_psn,
            max_rd_atomic: dest.rd_atomic.1,
            ..Default::default()
        };
        self.modify(
            &mut a,
            IBV_QP_STATE
                | IBV_QP_TIMEOUT
                | IBV_QP_RETRY_CNT
                | IBV_QP_RNR_RETRY
                | IBV_QP_SQ_PSN
                | IBV_QP_MAX_QP_RD_ATOMIC,
            "RTS",
        )
    }

    /// Posts `count` RDMA WRITEs or READs of `len` bytes between `local` and `remote` (`op`
    /// is `IBV_WR_RDMA_WRITE` or `IBV_WR_RDMA_READ`) in one call, only the last one
    /// signalled: its completion means all of them are done (RC completes in order), and
    /// the RNIC is rung once (one doorbell, one system call on rxe) for the whole chain.
    pub fn post_rdma(
        &self,
        wr_id: u64,
        op: c_uint,
        local: (u64, u32),
        remote: (u64, u32),
        len: u32,
        count: u32,
    ) -> Result<(), VerbsError> {
        self.post_rdma_with(wr_id, op, local, remote, len, count, Post::default())
    }

    /// As [`Qp::post_rdma`], with the choices of [`Post`].
    #[allow(clippy::too_many_arguments)] // the verb's own fields, one each
    pub fn post_rdma_with(
        &self,
        wr_id: u64,
        op: c_uint,
        local: (u64, u32),
        remote: (u64, u32),
        len: u32,
        count: u32,
        how: Post,
    ) -> Result<(), VerbsError> {
        let count = count.max(1) as usize;
        // One request, the latency test's case, stays on the stack: no allocation between
        // the two clock reads.
        let mut one_sge = [ibv_sge {
            addr: local.0,
            length: len,
            lkey: local.1,
        }];
        let mut one_wr = [ibv_send_wr::default()];
        let (mut sge_vec, mut wr_vec);
        let (sge, wrs): (&mut [ibv_sge], &mut [ibv_send_wr]) = if count == 1 {
            (&mut one_sge, &mut one_wr)
        } else {
            sge_vec = vec![one_sge[0]; count];
            wr_vec = vec![ibv_send_wr::default(); count];
            (&mut sge_vec, &mut wr_vec)
        };
        for i in 0..count {
            let w = &mut wrs[i];
            w.wr_id = wr_id;
            w.sg_list = &mut sge[i];
            w.num_sge = 1;
            w.opcode = op;
            w.rdma.remote_addr = remote.0;
            w.rdma.rkey = remote.1;
        }
        let inline = if how.inline { IBV_SEND_INLINE } else { 0 };
        for w in wrs.iter_mut() {
            w.send_flags = inline;
        }
        if !how.unsignaled {
            wrs[count - 1].send_flags |= IBV_SEND_SIGNALED;
        }
        for i in 1..count {
            let next: *mut ibv_send_wr = &mut wrs[i];
            wrs[i - 1].next = next;
        }
        let mut bad = std::ptr::null_mut();
        // SAFETY: ctx is open so its ops table is the provider's.
        let post = post_send_op(unsafe { &(*self.ctx.raw()).ops }, &self.ctx.name)?;
        // SAFETY: qp is valid; the chain and its SGEs live across the call (the provider
        // copies them into the send queue before returning).
        let rc = unsafe { post(self.qp.as_ptr(), wrs.as_mut_ptr(), &mut bad) };
        if rc != 0 {
            return Err(VerbsError::code(
                format!("ibv_post_send({count} x {len} B)"),
                rc,
            ));
        }
        Ok(())
    }
}

/// How [`Qp::post_rdma_with`] posts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Post {
    /// No request of the chain is signalled (perftest's CQ moderation: only every n-th
    /// WRITE makes a completion).
    pub unsignaled: bool,
    /// The payload goes inside the work request (a QP made with enough
    /// `max_inline_data`): what perftest does for small latency messages.
    pub inline: bool,
}

/// The transport attributes a QP is in force with, as `ibv_query_qp` reads them back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpTransport {
    /// Local ACK timeout exponent: 4.096 us x 2^timeout (0: wait forever).
    pub timeout: u8,
    /// Retries after a timeout or a sequence-error NAK.
    pub retry_cnt: u8,
    /// Outstanding RDMA READs this QP may issue.
    pub max_rd_atomic: u8,
}

impl Qp<'_> {
    /// `ibv_query_qp` of the timeout, retry count and READ depth.
    pub fn transport(&self) -> Result<QpTransport, VerbsError> {
        let mut attr = ibv_qp_attr::default();
        let mut init = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: std::ptr::null_mut(),
            recv_cq: std::ptr::null_mut(),
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap::default(),
            qp_type: 0,
            sq_sig_all: 0,
        };
        // SAFETY: qp is valid; attr and init are out-parameters of their full size.
        let rc = unsafe {
            (self.ctx.verbs.sym.query_qp)(
                self.qp.as_ptr(),
                &mut attr,
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_MAX_QP_RD_ATOMIC,
                &mut init,
            )
        };
        if rc != 0 {
            return Err(VerbsError::code(
                format!("ibv_query_qp(QP {})", self.qp_num()),
                rc,
            ));
        }
        Ok(QpTransport {
            timeout: attr.timeout,
            retry_cnt: attr.retry_cnt,
            max_rd_atomic: attr.max_rd_atomic,
        })
    }
}

impl Drop for Qp<'_> {
    fn drop(&mut self) {
        // SAFETY: qp is valid; destroying a QP with outstanding work requests is allowed
        // (they are flushed), which is how a timed-out probe is torn down.
        unsafe { (self.ctx.verbs.sym.destroy_qp)(self.qp.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An op table as a provider that implements nothing leaves it.
    fn empty_ops() -> ibv_context_ops {
        // SAFETY: the table holds only pointers and optional function pointers, for which
        // all zeroes is NULL / None.
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn a_provider_without_poll_cq_or_post_send_is_an_error_naming_device_and_verb() {
        let ops = empty_ops();
        let err = poll_cq_op(&ops, "mlx5_0").expect_err("NULL poll_cq");
        assert!(matches!(
            &err,
            VerbsError::NotImplemented { device, op: "ibv_poll_cq" } if device == "mlx5_0"
        ));
        assert_eq!(
            err.to_string(),
            "mlx5_0: the provider does not implement ibv_poll_cq"
        );
        let err = post_send_op(&ops, "rxe0").expect_err("NULL post_send");
        assert_eq!(
            err.to_string(),
            "rxe0: the provider does not implement ibv_post_send"
        );
    }

    unsafe extern "C" fn poll_nothing(_: *mut ibv_cq, _: c_int, _: *mut ibv_wc) -> c_int {
        0
    }

    #[test]
    fn a_provider_with_the_op_gives_it() {
        let mut ops = empty_ops();
        ops.poll_cq = Some(poll_nothing);
        let poll = poll_cq_op(&ops, "mlx5_0").expect("set");
        // SAFETY: poll_nothing touches none of its arguments.
        assert_eq!(
            unsafe { poll(std::ptr::null_mut(), 0, std::ptr::null_mut()) },
            0
        );
    }

    #[test]
    fn a_poll_count_beyond_the_entries_given_is_an_error_not_a_slice_past_them() {
        assert_eq!(completions(3, 32, "mlx5_0").unwrap(), 3);
        assert_eq!(completions(0, 32, "mlx5_0").unwrap(), 0);
        let err = completions(33, 32, "mlx5_0").unwrap_err();
        assert_eq!(
            err.to_string(),
            "ibv_poll_cq(mlx5_0): the provider reported 33 completions for 32 entries"
        );
        let err = completions(-1, 32, "mlx5_0").unwrap_err();
        assert!(err.to_string().starts_with("ibv_poll_cq: "), "{err}");
    }
}
