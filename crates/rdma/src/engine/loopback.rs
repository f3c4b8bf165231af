//! One loopback test on one path (Hostping 4.1.1, Fig. 7): an RC QP connected to itself,
//! a read region and a write region on the endpoint, and RDMA WRITEs (or READs) from one
//! to the other, timed from post to polled completion.
//!
//! Every object lives inside one function call and is dropped in the order verbs needs
//! (QP, CQ, MRs, PD; then the memory), on success and on every error, so a path never
//! leaks pinned memory into the next one. Every wait for a completion has a deadline.

use super::clock::Ticks;
use super::fault::FaultKind;
use crate::memory::cuda::GpuUnavailable;
use crate::memory::EndpointMemory;
use crate::verbs::ffi::{ibv_wc, IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE};
use crate::verbs::{
    Context, Cq, CqWaitError, Destination, DeviceCaps, Mr, Pd, PortInfo, Qp, VerbsError,
};
use model::{Op, StreamResult};
use probe::{LatencySamples, LatencySpec, ProbeError, StreamSpec};
use std::time::{Duration, Instant};

/// An opened RNIC port and what a self-connection needs of it.
pub(crate) struct RnicPort {
    pub ctx: Context,
    pub port: u8,
    pub caps: DeviceCaps,
    pub info: PortInfo,
    /// RoCE (or routed IB): own GID and its index.
    pub gid: Option<([u8; 16], u8)>,
}

/// ACK timeout exponent of a probe QP: 4.096 us x 2^14 = 67 ms per retry, far above any
/// healthy loopback, so a slow host is measured rather than failed.
const ACK_TIMEOUT: u8 = 14;
/// For the `hang` fault: 4.096 us x 2^20 = 4.3 s per retry, so the engine's own wait,
/// not the transport's retry limit, is what ends the probe.
const ACK_TIMEOUT_HANG: u8 = 20;
/// Outstanding RDMA READs asked for (capped by the device).
const RD_ATOMIC: u8 = 16;

impl RnicPort {
    /// This port as the destination of a QP connected to itself (QP number `qp_num`),
    /// with the local ACK timeout exponent `ack_timeout`.
    pub(crate) fn destination(&self, qp_num: u32, ack_timeout: u8) -> Destination {
        Destination {
            port: self.port,
            qp_num,
            mtu: self.info.active_mtu,
            gid: self.gid,
            lid: self.info.lid,
            rd_atomic: (
                RD_ATOMIC.min(self.caps.max_qp_rd_atom).max(1),
                RD_ATOMIC.min(self.caps.max_qp_init_rd_atom).max(1),
            ),
            ack_timeout,
            // A QP talking to itself expects what it sends.
            rq_psn: 0,
            sq_psn: 0,
        }
    }
}

/// How one test runs.
pub(crate) struct Settings {
    /// Longest wait for any completion.
    pub timeout: Duration,
    /// A fault to provoke on this path.
    pub fault: Option<FaultKind>,
    /// The endpoint, for error messages.
    pub endpoint: String,
}

pub(super) fn verbs_error(e: VerbsError) -> ProbeError {
    ProbeError::Verbs {
        detail: e.to_string(),
    }
}

/// The byte at `i` of the read region: a sequence that does not repeat every 256 bytes and
/// changes with `seed`, so neither a stale buffer nor a shifted copy passes the check.
pub(crate) fn pattern_byte(seed: u8, i: usize) -> u8 {
    ((i * 131 + seed as usize) % 251) as u8
}

/// Registers the read and write regions (`len` bytes each, at 0 and `len`).
fn register_regions<'p>(
    pd: &'p Pd<'_>,
    mem: &EndpointMemory,
    len: usize,
    s: &Settings,
) -> Result<(Mr<'p>, Mr<'p>), ProbeError> {
    let reg_error = |e: VerbsError| ProbeError::Registration {
        endpoint: s.endpoint.clone(),
        reason: e.to_string(),
    };
    let src = if s.fault == Some(FaultKind::RegMr) {
        return Err(reg_error(register_inaccessible(pd, len)));
    } else {
        mem.register(pd, 0, len).map_err(reg_error)?
    };
    let dst = mem.register(pd, len, len).map_err(reg_error)?;
    Ok((src, dst))
}

/// The `reg-mr` fault: registers a range mapped PROT_NONE, which the kernel cannot pin.
fn register_inaccessible(pd: &Pd<'_>, len: usize) -> VerbsError {
    // SAFETY: an anonymous inaccessible mapping, unmapped below after any MR on it is gone.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return VerbsError::call(
            format!("mmap({len} B, PROT_NONE)"),
            std::io::Error::last_os_error(),
        );
    }
    // SAFETY: the range stays mapped until after the (unexpected) MR is dropped.
    let err = match unsafe { pd.reg_mr(ptr.cast(), len) } {
        Err(e) => e,
        Ok(mr) => {
            drop(mr);
            VerbsError::call(
                format!("ibv_reg_mr({len} B, PROT_NONE)"),
                std::io::Error::other(
                    "the provider registered an inaccessible range: the reg-mr fault cannot be provoked on this device",
                ),
            )
        }
    };
    // SAFETY: our mapping; no MR refers to it any more.
    unsafe { libc::munmap(ptr, len) };
    err
}

/// Creates an RC QP on `cq` and connects it to itself (or, for the `hang` fault, to a QP
/// number that was just freed, so nothing ever answers).
fn self_connected<'q>(
    rnic: &RnicPort,
    pd: &'q Pd<'_>,
    cq: &'q Cq<'_>,
    max_wr: u32,
    fault: Option<FaultKind>,
) -> Result<Qp<'q>, ProbeError> {
    let qp = pd.create_rc_qp(cq, max_wr).map_err(verbs_error)?;
    let dest_qpn = if fault == Some(FaultKind::Hang) {
        let gone = pd.create_rc_qp(cq, 1).map_err(verbs_error)?;
        gone.qp_num()
    } else {
        qp.qp_num()
    };
    let ack_timeout = if fault == Some(FaultKind::Hang) {
        ACK_TIMEOUT_HANG
    } else {
        ACK_TIMEOUT
    };
    qp.connect(&rnic.destination(dest_qpn, ack_timeout))
        .map_err(verbs_error)?;
    Ok(qp)
}

/// Waits for at least one completion ([`Cq::wait`]), returning how many arrived; fails on
/// an error status or when no completion arrives within `timeout`.
pub(super) fn wait(
    cq: &Cq<'_>,
    wc: &mut [ibv_wc],
    timeout: Duration,
    what: &str,
) -> Result<usize, ProbeError> {
    cq.wait(wc, timeout).map_err(|e| match e {
        CqWaitError::Timeout => ProbeError::Timeout {
            what: what.to_string(),
            after_ms: timeout.as_millis() as u64,
        },
        CqWaitError::Failed { .. } => ProbeError::WorkCompletion {
            status: format!("{e} on {what}"),
        },
        CqWaitError::Poll(e) => verbs_error(e),
    })
}

/// `op` as a verbs opcode, with the local and remote ends: both move the read region
/// (`src`) into the write region (`dst`).
fn direction(
    op: Op,
    base: u64,
    len: usize,
    src: &Mr<'_>,
    dst: &Mr<'_>,
    fault: Option<FaultKind>,
) -> (u32, (u64, u32), (u64, u32)) {
    let key = |k: u32| {
        if fault == Some(FaultKind::BadRkey) {
            !k
        } else {
            k
        }
    };
    let src_at = base;
    let dst_at = base + len as u64;
    match op {
        Op::Write => (
            IBV_WR_RDMA_WRITE,
            (src_at, src.lkey()),
            (dst_at, key(dst.rkey())),
        ),
        Op::Read => (
            IBV_WR_RDMA_READ,
            (dst_at, dst.lkey()),
            (src_at, key(src.rkey())),
        ),
    }
}

/// The latency test: `warmup` untimed and `iterations` timed round trips of the small and
/// the large message, then the write region checked against the read region. `mem` holds
/// two regions of `spec.large_bytes` (rounded up) at 0 and `region` bytes.
pub(crate) fn latency(
    rnic: &RnicPort,
    mem: &EndpointMemory,
    region: usize,
    spec: &LatencySpec,
    s: &Settings,
    seed: u8,
) -> Result<LatencySamples, ProbeError> {
    let src_bytes: Vec<u8> = (0..region).map(|i| pattern_byte(seed, i)).collect();
    let unusable = |e: GpuUnavailable| ProbeError::Registration {
        endpoint: s.endpoint.clone(),
        reason: e.to_string(),
    };
    mem.write(0, &src_bytes).map_err(unusable)?;
    mem.write(region, &vec![0u8; region]).map_err(unusable)?;
    let pd = rnic.ctx.alloc_pd().map_err(verbs_error)?;
    let (src, dst) = register_regions(&pd, mem, region, s)?;
    let cq = rnic.ctx.create_cq(4).map_err(verbs_error)?;
    let qp = self_connected(rnic, &pd, &cq, 4, s.fault)?;
    let (opcode, local, remote) = direction(spec.op, mem.base(), region, &src, &dst, s.fault);
    let mut wc = [ibv_wc::default(); 1];
    let mut samples = LatencySamples::default();
    let clock = Ticks::start();
    let (mut small_ticks, mut large_ticks) = (Vec::new(), Vec::new());
    for (bytes, out) in [
        (spec.small_bytes, &mut small_ticks),
        (spec.large_bytes, &mut large_ticks),
    ] {
        let op = match spec.op {
            Op::Write => "RDMA WRITE",
            Op::Read => "RDMA READ",
        };
        let what = format!("a {bytes} B {op} on {}", s.endpoint);
        out.reserve(spec.iterations as usize);
        for i in 0..spec.warmup + spec.iterations {
            let t0 = Ticks::now();
            qp.post_rdma(u64::from(i), opcode, local, remote, bytes as u32, 1)
                .map_err(verbs_error)?;
            wait(&cq, &mut wc, s.timeout, &what)?;
            if i >= spec.warmup {
                out.push(Ticks::now().wrapping_sub(t0));
            }
        }
    }
    let ns_per_tick = clock.ns_per_tick();
    let to_ns = |t: &[u64]| t.iter().map(|&t| t as f64 * ns_per_tick).collect();
    samples.small_ns = to_ns(&small_ticks);
    samples.large_ns = to_ns(&large_ticks);
    drop(qp);
    let checked = spec.large_bytes as usize;
    let mut arrived = vec![0u8; checked];
    mem.read(region, &mut arrived)
        .map_err(|e| ProbeError::DataMismatch {
            detail: e.to_string(),
        })?;
    if let Some(i) = (0..checked).find(|&i| arrived[i] != src_bytes[i]) {
        return Err(ProbeError::DataMismatch {
            detail: format!(
                "byte {i} of the write region on {} is 0x{:02x}, the read region sent 0x{:02x}",
                s.endpoint, arrived[i], src_bytes[i]
            ),
        });
    }
    samples.verified_bytes = Some(checked as u64);
    Ok(samples)
}

/// The streaming test: `spec.qps` self-connected QPs on one CQ, each keeping `spec.depth`
/// messages outstanding for `spec.duration_us`; bandwidth over the time from the first
/// post to the last completion. Each post moves on by one message through the `region`
/// bytes of each side (wrapping), so a region larger than a message is a working set the
/// RNIC's DMA walks through (`check --iotlb`, HotNets'22 3.1).
pub(crate) fn stream(
    rnic: &RnicPort,
    mem: &EndpointMemory,
    region: usize,
    spec: &StreamSpec,
    s: &Settings,
) -> Result<StreamResult, ProbeError> {
    let pd = rnic.ctx.alloc_pd().map_err(verbs_error)?;
    let (src, dst) = register_regions(&pd, mem, region, s)?;
    let depth = spec.depth.clamp(1, rnic.caps.max_qp_wr.max(1));
    let cqe = (spec.qps * depth).min(rnic.caps.max_cqe.max(1));
    let depth = (cqe / spec.qps.max(1)).max(1);
    let cq = rnic.ctx.create_cq(cqe).map_err(verbs_error)?;
    let qps = (0..spec.qps)
        .map(|_| self_connected(rnic, &pd, &cq, depth, s.fault))
        .collect::<Result<Vec<_>, _>>()?;
    let (opcode, local, remote) = direction(spec.op, mem.base(), region, &src, &dst, s.fault);
    let len = spec.message_bytes as u32;
    let what = format!("a {}-QP stream on {}", spec.qps, s.endpoint);
    // Requests go in batches of a quarter of the depth, only the last of a batch signalled
    // (as perftest's CQ moderation does): fewer completions to make and poll, and the
    // queue refilled a batch at a time while three quarters stay in flight.
    let batch = (depth / 4).max(1);
    let batches_per_qp = (depth / batch).max(1);
    let start = Instant::now();
    let end = start + Duration::from_nanos((spec.duration_us * 1000.0) as u64);
    let mut walk = Walk::new(region as u64, u64::from(len));
    // Posts a batch on QP `q` at the walk's next offset on both sides.
    let mut post = |q: u64| {
        let at = walk.next_offset();
        qp_of(&qps, q, &what)?
            .post_rdma(
                q,
                opcode,
                (local.0 + at, local.1),
                (remote.0 + at, remote.1),
                len,
                batch,
            )
            .map_err(verbs_error)
    };
    let mut outstanding = 0u64;
    for q in 0..qps.len() as u64 {
        for _ in 0..batches_per_qp {
            post(q)?;
            outstanding += 1;
        }
    }
    let mut wc = [ibv_wc::default(); 32];
    let mut completed = 0u64;
    let mut last = start;
    while outstanding > 0 {
        let n = wait(&cq, &mut wc, s.timeout, &what)?;
        last = Instant::now();
        completed += n as u64 * u64::from(batch);
        outstanding -= n as u64;
        if last < end {
            for w in &wc[..n] {
                post(w.wr_id)?;
                outstanding += 1;
            }
        }
    }
    let elapsed = last.duration_since(start);
    let bytes = completed * spec.message_bytes;
    Ok(StreamResult {
        qps: spec.qps,
        depth: batches_per_qp * batch,
        message_bytes: spec.message_bytes,
        bytes,
        duration_us: elapsed.as_secs_f64() * 1e6,
        bandwidth_gbps: bytes as f64 * 8.0 / (elapsed.as_secs_f64() * 1e9).max(f64::MIN_POSITIVE),
    })
}

/// The QP a completion's work request id names (each batch is posted with its QP's index
/// as id, and refilled on that QP when it completes). The id comes back from the provider:
/// one that names no QP of the stream is an error, not an index past the end.
fn qp_of<'a, T>(qps: &'a [T], wr_id: u64, what: &str) -> Result<&'a T, ProbeError> {
    usize::try_from(wr_id)
        .ok()
        .and_then(|q| qps.get(q))
        .ok_or_else(|| ProbeError::WorkCompletion {
            status: format!(
                "a completion for work request {wr_id}, which none of the {} QPs posted, on {what}",
                qps.len()
            ),
        })
}

/// Offsets of successive posts within a region: one message further each time, back to 0
/// where the next message would not fit.
#[derive(Debug, Clone)]
struct Walk {
    region: u64,
    message: u64,
    next: u64,
}

impl Walk {
    fn new(region: u64, message: u64) -> Walk {
        Walk {
            region,
            message: message.max(1),
            next: 0,
        }
    }

    fn next_offset(&mut self) -> u64 {
        if self.next + self.message > self.region {
            self.next = 0;
        }
        let at = self.next;
        self.next += self.message;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::{pattern_byte, qp_of, Walk};
    use probe::ProbeError;

    #[test]
    fn a_completion_naming_no_qp_of_the_stream_is_an_error() {
        let qps = ["qp0", "qp1"];
        assert_eq!(qp_of(&qps, 1, "a 2-QP stream on mem0").unwrap(), &"qp1");
        let err = qp_of(&qps, 7, "a 2-QP stream on mem0").unwrap_err();
        assert!(matches!(err, ProbeError::WorkCompletion { .. }));
        assert_eq!(
            err.to_string(),
            "work completion error: a completion for work request 7, which none of the 2 QPs \
             posted, on a 2-QP stream on mem0"
        );
        assert!(matches!(
            qp_of(&qps, u64::MAX, "s"),
            Err(ProbeError::WorkCompletion { .. })
        ));
    }

    #[test]
    fn a_walk_covers_the_region_and_wraps() {
        let mut w = Walk::new(4 * 4096, 4096);
        let offsets: Vec<u64> = (0..6).map(|_| w.next_offset()).collect();
        assert_eq!(offsets, [0, 4096, 8192, 12288, 0, 4096]);
        // A region of one message (the ordinary stream) stays at 0.
        let mut one = Walk::new(65536, 65536);
        assert!((0..4).all(|_| one.next_offset() == 0));
    }

    #[test]
    fn the_pattern_does_not_repeat_with_the_byte_period_and_depends_on_the_seed() {
        let a: Vec<u8> = (0..512).map(|i| pattern_byte(7, i)).collect();
        assert_ne!(a[..256], a[256..]);
        assert_ne!(pattern_byte(7, 0), pattern_byte(8, 0));
        // Period 251: a one-byte shift never matches.
        assert!((0..511).all(|i| a[i] != a[i + 1]));
    }
}
