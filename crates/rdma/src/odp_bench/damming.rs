//! Damming (ISPASS'21, "Microbench for packet damming"): "One machine issues two READs to
//! the other machine ... Change the interval between two communications ... The message
//! size is 100 bytes, use a single QP, and apply ODP to both sides".
//!
//! Each READ reads a page of its own on the remote side into a page of its own on the
//! local side, both in ODP MRs registered on fresh mappings ([`super::memory`]), so each
//! READ meets pages the RNIC has never mapped at both ends. The CPU writes the remote pages
//! (the data the READ fetches; the RNIC still has not seen them) and never touches the local
//! ones before the READs land.

use super::counters::{self, read_port};
use super::reads::{arrived, fill, Label, Reads};
use super::{BenchError, Measured, OdpBench, ACK_TIMEOUT_MIN, READ_BYTES};
use crate::verbs::ffi::{ibv_wc, IBV_WR_RDMA_READ};
use crate::verbs::CqWaitError;
use model::odp_bench::OdpBenchPoint;
use std::time::{Duration, Instant};

/// How long before the interval ends the wait stops sleeping and spins on the clock: a
/// sleep overshoots by tens of microseconds (timer slack, scheduling), a spin does not.
const SPIN: Duration = Duration::from_micros(50);

/// The two READs.
const READS: u32 = 2;

impl OdpBench {
    /// Two 100 B READs on one QP, the second posted `interval_us` after the first; both
    /// must complete.
    pub fn damming(&mut self, interval_us: u32) -> Result<Measured, BenchError> {
        let label = Label {
            point: format!("damming interval {interval_us} us"),
            device: self.device().to_string(),
        };
        let page = crate::memory::host::page_size();
        let bytes = READS as usize * page;
        let local = label.map(bytes)?;
        let remote = label.map(bytes)?;
        for r in 0..READS as usize {
            fill(&remote, r * page, READ_BYTES as usize);
        }
        let ctx = &self.rnic.ctx;
        let v = |e| label.verbs(e);
        let pd = ctx.alloc_pd().map_err(v)?;
        // SAFETY: both mappings outlive the MRs (declared before them, dropped after).
        let local_mr = unsafe { pd.reg_odp_mr(local.as_ptr(), bytes) }.map_err(v)?;
        // SAFETY: as above.
        let remote_mr = unsafe { pd.reg_odp_mr(remote.as_ptr(), bytes) }.map_err(v)?;
        let resident = local.resident_pages().ok().map(|n| (n, local.pages()));
        let cq = ctx.create_cq(READS).map_err(v)?;
        let qp = pd.create_rc_qp(&cq, READS).map_err(v)?;
        qp.connect(&self.rnic.destination(qp.qp_num(), ACK_TIMEOUT_MIN))
            .map_err(v)?;
        let post = |r: u32| {
            let at = r as usize * page;
            qp.post_rdma(
                u64::from(r),
                IBV_WR_RDMA_READ,
                (local.addr(at), local_mr.lkey()),
                (remote.addr(at), remote_mr.rkey()),
                READ_BYTES,
                1,
            )
            .map_err(v)
        };

        let before = read_port(&self.root, self.device(), self.rnic.port);
        let mut reads = Reads::new(READS);
        let mut wc = [ibv_wc::default(); READS as usize];
        let first = Instant::now();
        post(0)?;
        reads.posted(0, first);
        let second = first + Duration::from_micros(u64::from(interval_us));
        self.pace(&mut reads, &cq, &mut wc, first, second, &label)?;
        post(1)?;
        reads.posted(1, Instant::now());
        while reads.pending() > 0 {
            reads.wait(&cq, &mut wc, self.timeout, &label)?;
        }
        let after = read_port(&self.root, self.device(), self.rnic.port);
        let ours = [
            (local_mr.lkey(), bytes as u64),
            (remote_mr.lkey(), bytes as u64),
        ];
        let mrs = super::mrs_seen(&mut self.watch, &mut self.netlink_gap, &ours);
        drop(qp);
        let misplaced = (0..READS)
            .filter(|&r| {
                let at = r as usize * page;
                !arrived(&local, at, at, READ_BYTES as usize)
            })
            .count() as u32;
        let (elapsed_us, slowest_read_us) = reads.times_us();
        Ok(Measured {
            point: OdpBenchPoint {
                interval_us: Some(interval_us),
                qps: 1,
                reads: READS,
                read_bytes: READ_BYTES,
                elapsed_us,
                slowest_read_us,
                packets: counters::packets(&before, &after),
                transport: counters::transport(&before, &after),
                page_faults: mrs.and_then(|m| m.page_faults),
            },
            mrs,
            mrs_registered: ours.len(),
            read_us: (0..READS).filter_map(|r| reads.read_us(r)).collect(),
            misplaced_reads: misplaced,
            resident_after_registration: resident,
        })
    }

    /// Waits until `until` (the second READ's post), on the monotonic clock. While the first
    /// READ is outstanding the CQ is polled without pause, so its completion time is exact
    /// (and a first READ that misses its deadline, `posted + timeout`, is an error); after
    /// that the wait sleeps until [`SPIN`] before `until`, then spins.
    fn pace(
        &self,
        reads: &mut Reads,
        cq: &crate::verbs::Cq<'_>,
        wc: &mut [ibv_wc],
        posted: Instant,
        until: Instant,
        label: &Label,
    ) -> Result<(), BenchError> {
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            if reads.pending() > 0 {
                if now > posted + self.timeout {
                    // The same error a blocking wait gives.
                    return Err(reads.wait_error(CqWaitError::Timeout, label, self.timeout));
                }
                reads.poll(cq, wc, label)?;
            } else if until - now > SPIN {
                std::thread::sleep(until - now - SPIN);
            }
        }
    }
}
