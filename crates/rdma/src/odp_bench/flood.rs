//! Flood (ISPASS'21, "Microbench for packet flood"): "8192 READs with a message size of 100
//! bytes. No intervals between communication operations. Change the number of QPs", with
//! client-side ODP ("Issue READs using multiple QPs with client-side ODP").
//!
//! READ `i` goes on QP `i mod q` (round robin) and lands at byte `100 i` of one ODP MR on a
//! fresh mapping (the client side: every page is first written by the RNIC, from several
//! QPs at once), from byte `100 i` of a pinned region (the server side, not ODP). Each QP
//! keeps at most its `max_rd_atomic` READs outstanding, the most RC lets a requester have
//! in flight; when the next QP in turn is full the loop waits for completions.
//!
//! After the point every READ's bytes are checked at their local address. A READ that
//! completed without error but whose bytes are elsewhere is counted, not fatal: it is a
//! finding about the driver's ODP, and the time and packets were still measured. (rxe of
//! Linux 7.3, in the guest of `scripts/guest/run.sh --kernel odp`, writes a READ response
//! into a requester-side ODP MR at the start of the page rather than at the READ's offset in
//! it: of the 41 READs into a page only the last one's bytes are found, at the page's start;
//! with a pinned local MR every READ lands where it should. Damming's READs are page-aligned
//! and not affected.)

use super::counters::{self, read_port};
use super::reads::{arrived, fill, Label, Reads};
use super::{BenchError, Measured, OdpBench, ACK_TIMEOUT_MIN, FLOOD_READS, READ_BYTES};
use crate::verbs::ffi::{ibv_wc, IBV_WR_RDMA_READ};
use model::odp_bench::OdpBenchPoint;
use std::time::Instant;

impl OdpBench {
    /// 8192 100 B READs over `qps` QPs, back to back.
    pub fn flood(&mut self, qps: u32) -> Result<Measured, BenchError> {
        let label = Label {
            point: format!("flood over {qps} QPs"),
            device: self.device().to_string(),
        };
        let qps = qps.max(1);
        let bytes = (FLOOD_READS * READ_BYTES) as usize;
        let local = label.map(bytes)?;
        let remote = label.map(bytes)?;
        fill(&remote, 0, bytes);
        let ctx = &self.rnic.ctx;
        let v = |e| label.verbs(e);
        let pd = ctx.alloc_pd().map_err(v)?;
        // SAFETY: both mappings outlive the MRs (declared before them, dropped after).
        let local_mr = unsafe { pd.reg_odp_mr(local.as_ptr(), local.len()) }.map_err(v)?;
        // SAFETY: as above.
        let remote_mr = unsafe { pd.reg_mr(remote.as_ptr(), remote.len()) }.map_err(v)?;
        let resident = local.resident_pages().ok().map(|n| (n, local.pages()));
        let probe = self.rnic.destination(0, ACK_TIMEOUT_MIN);
        let depth = u32::from(probe.rd_atomic.1.max(1));
        let cqe = (qps * depth).min(self.rnic.caps.max_cqe.max(1));
        let depth = (cqe / qps).max(1);
        let cq = ctx.create_cq(cqe).map_err(v)?;
        let queues = (0..qps)
            .map(|_| {
                let qp = pd.create_rc_qp(&cq, depth)?;
                qp.connect(&self.rnic.destination(qp.qp_num(), ACK_TIMEOUT_MIN))?;
                Ok(qp)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(v)?;

        let before = read_port(&self.root, self.device(), self.rnic.port);
        let mut reads = Reads::new(FLOOD_READS);
        let mut wc = [ibv_wc::default(); 64];
        let mut outstanding = vec![0u32; qps as usize];
        // Records completions and frees their QPs' slots.
        let mut collect = |reads: &mut Reads, outstanding: &mut [u32]| {
            let n = reads.wait(&cq, &mut wc, self.timeout, &label)?;
            for w in &wc[..n] {
                // A completion the provider repeats must not wrap the count below zero.
                let slot = &mut outstanding[(w.wr_id % u64::from(qps)) as usize];
                *slot = slot.saturating_sub(1);
            }
            Ok::<(), BenchError>(())
        };
        for i in 0..FLOOD_READS {
            let q = (i % qps) as usize;
            while outstanding[q] >= depth {
                collect(&mut reads, &mut outstanding)?;
            }
            let at = (i * READ_BYTES) as usize;
            queues[q]
                .post_rdma(
                    u64::from(i),
                    IBV_WR_RDMA_READ,
                    (local.addr(at), local_mr.lkey()),
                    (remote.addr(at), remote_mr.rkey()),
                    READ_BYTES,
                    1,
                )
                .map_err(v)?;
            reads.posted(i, Instant::now());
            outstanding[q] += 1;
        }
        while reads.pending() > 0 {
            collect(&mut reads, &mut outstanding)?;
        }
        let after = read_port(&self.root, self.device(), self.rnic.port);
        let ours = [(local_mr.lkey(), local.len() as u64)];
        let mrs = super::mrs_seen(&mut self.watch, &mut self.netlink_gap, &ours);
        drop(queues);
        let misplaced = (0..FLOOD_READS)
            .filter(|&i| {
                let at = (i * READ_BYTES) as usize;
                !arrived(&local, at, at, READ_BYTES as usize)
            })
            .count() as u32;
        let (elapsed_us, slowest_read_us) = reads.times_us();
        Ok(Measured {
            point: OdpBenchPoint {
                interval_us: None,
                qps,
                reads: FLOOD_READS,
                read_bytes: READ_BYTES,
                elapsed_us,
                slowest_read_us,
                packets: counters::packets(&before, &after),
                transport: counters::transport(&before, &after),
                page_faults: mrs.and_then(|m| m.page_faults),
            },
            mrs,
            mrs_registered: ours.len(),
            read_us: Vec::new(),
            misplaced_reads: misplaced,
            resident_after_registration: resident,
        })
    }
}
