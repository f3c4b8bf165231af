//! A discrete-event model of RDMA READs over a Reliable Connection whose memory is on-demand
//! paged (ODP), for ISPASS'21's micro-benchmarks (`shared/papers/001_50e040594ebebbef.txt`).
//!
//! Requester and responder are two ends of RC QPs on one virtual RNIC. Packets (READ
//! requests, READ responses, sequence-error NAKs) travel with a fixed one-way delay; a READ
//! response is written to memory over the RNIC's DMA path. Each side keeps, per ODP region,
//! the driver's page table (`mapped`) and the RNIC's page status *per QP*, and has at most
//! one fault in flight per page. The rules, and where they come from:
//!
//! 1. A packet whose page the QP's status does not show present raises a page fault: the
//!    packet is held, the QP's side is suspended, and after `page_fault_us` the page is
//!    mapped and the packet resumes (mlx5 resumes the faulting QP; ISPASS'21: "ODP utilizes
//!    retransmission of RC").
//! 2. A packet that arrives on a suspended QP side, or that needs a page whose fault another
//!    QP has in flight (a *concurrent page fault*), is dropped and nothing records it: only
//!    the RC requester's own mechanisms recover it, a later packet revealing the gap
//!    (sequence-error NAK, or an out-of-order READ response) or the transport timeout. This
//!    is our reading of ISPASS'21's "packet loss and the subsequent super-long timeout" and
//!    "both pitfalls are related to concurrent page faults"; the slides do not give the
//!    firmware's rule.
//! 3. A resolved fault marks the page present for the faulting QP only ("failure of updating
//!    page statuses among QPs", ISPASS'21): every other QP faults on the page again.
//! 4. RC as the InfiniBand specification has it: the requester keeps at most
//!    `max_outstanding_reads` READs outstanding per QP, retransmits go-back-N from the
//!    first incomplete READ on a timeout, a NAK or a response gap, and fails a READ after
//!    `retry_count` timeouts without progress; the responder re-executes duplicate READs
//!    and NAKs the first out-of-sequence request (one NAK until the expected PSN arrives,
//!    which paces NAK-driven retransmission to a round trip; we do not count those against
//!    the retry count, our reading of how RNICs keep a NAK storm from failing a QP). The timeout is the firmware's floor
//!    (500 ms, ISPASS'21), drawn late by up to `timeout_spread` of itself.
//!
//! Damming and flooding are not written here: they follow from these rules (see
//! `odp_micro` for the two workloads).

use model::OdpModel;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// Events a run may process before it gives up (a bound on the model, not a result).
pub const EVENT_CAP: u64 = 20_000_000;

/// One RDMA READ of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// When the application posts it, ns from the start.
    pub post_ns: u64,
    /// The QP it is posted on.
    pub qp: u32,
    /// The page of the requester's buffer the response is written to.
    pub local_page: u64,
    /// The page of the responder's buffer it reads.
    pub remote_page: u64,
}

/// READs over `qps` QPs, with ODP memory on either side or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// QPs the READs use (`Read::qp < qps`).
    pub qps: u32,
    /// The READs, each QP's in posting order.
    pub reads: Vec<Read>,
    /// The requester's buffer is an ODP region (client-side ODP).
    pub local_odp: bool,
    /// The responder's buffer is an ODP region (server-side ODP).
    pub remote_odp: bool,
}

/// Delays the host model gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delays {
    /// One-way delay between the RNIC and the memory its buffers are in, ns (the sum of the
    /// host model's link latencies on that path).
    pub dma_ns: u64,
}

/// What the mlx5 counters and the port would show over a run, and the model's own counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Transport timeouts waited out (`local_ack_timeout_err`).
    pub local_ack_timeout_err: u64,
    /// Sequence-error NAKs the requester received (`packet_seq_err`).
    pub packet_seq_err: u64,
    /// Out-of-sequence packets received, requests at the responder and READ responses at
    /// the requester (`out_of_sequence`).
    pub out_of_sequence: u64,
    /// Duplicate READ requests the responder received and re-executed (`duplicate_request`).
    pub duplicate_request: u64,
    /// Packets put on the wire, both directions (requests, responses, NAKs).
    pub packets: u64,
    /// Page faults the RNIC raised, both sides.
    pub page_faults: u64,
    /// Of those, faults on a page the driver had already mapped: a QP whose page status was
    /// not updated when another QP's fault mapped it (rule 3).
    pub stale_page_faults: u64,
    /// Packets dropped on a suspended QP or a concurrent page fault.
    pub dropped: u64,
}

/// The outcome of a run: every READ completed, when, and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct TransportRun {
    /// Completion time of each READ of the workload, ns from the start, in workload order.
    pub completed_ns: Vec<u64>,
    /// The counters.
    pub stats: TransportStats,
    /// Events processed.
    pub events: u64,
}

/// Why a run did not complete every READ.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransportError {
    /// A READ waited out more timeouts without progress than the QP's retry count allows
    /// (it would complete with `IBV_WC_RETRY_EXC_ERR`).
    #[error(
        "READ {read} on QP {qp} exceeded the transport retry count ({retries} timeouts \
         without progress) at {at_ms:.3} ms"
    )]
    RetryExceeded {
        /// The QP.
        qp: u32,
        /// The READ (workload index).
        read: usize,
        /// Retries taken.
        retries: u32,
        /// Simulated time, ms.
        at_ms: f64,
    },
    /// The run needed more events than its cap ([`EVENT_CAP`]).
    #[error(
        "the transport model stopped after {cap} events at {at_ms:.3} ms with {done} of \
         {reads} READs complete"
    )]
    EventCap {
        /// The cap.
        cap: u64,
        /// Simulated time, ms.
        at_ms: f64,
        /// READs complete.
        done: usize,
        /// READs in the workload.
        reads: usize,
    },
    /// A READ names a QP the workload does not have.
    #[error("READ {read} is on QP {qp}, but the workload has {qps} QPs")]
    NoSuchQp {
        /// The READ.
        read: usize,
        /// Its QP.
        qp: u32,
        /// QPs in the workload.
        qps: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Side {
    Requester,
    Responder,
}

/// Why the requester goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The transport timer fired.
    Timeout,
    /// A sequence-error NAK or an out-of-order READ response.
    Sequence,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Post { qp: u32 },
    Request { qp: u32, psn: usize },
    Response { qp: u32, psn: usize },
    Nak { qp: u32, psn: usize },
    FaultDone { side: Side, qp: u32, psn: usize },
    Timer { qp: u32, generation: u64 },
}

/// An ODP region's page table on one side.
#[derive(Debug, Default)]
struct Pages {
    /// Pages the driver has mapped for the RNIC.
    mapped: HashSet<u64>,
    /// `(qp, page)` the RNIC's status for that QP shows present.
    present: HashSet<(u32, u64)>,
    /// Pages with a fault in flight, and the QP that raised it.
    in_flight: HashMap<u64, u32>,
}

/// What the page table says about a packet of `qp` needing `page`.
enum Access {
    Present,
    Fault,
    Concurrent,
}

impl Pages {
    fn access(&self, qp: u32, page: u64) -> Access {
        if self.present.contains(&(qp, page)) {
            Access::Present
        } else if self.in_flight.contains_key(&page) {
            Access::Concurrent
        } else {
            Access::Fault
        }
    }

    /// The fault of `qp` on `page` is resolved: the page is mapped and, for `qp` alone,
    /// present (rule 3).
    fn resolve(&mut self, qp: u32, page: u64) {
        self.mapped.insert(page);
        self.present.insert((qp, page));
        self.in_flight.remove(&page);
    }
}

/// The requester end of one QP.
struct RequesterQp {
    /// Workload indices of its READs in PSN order.
    reads: Vec<usize>,
    /// Next PSN to send.
    next: usize,
    /// One past the highest PSN sent.
    sent: usize,
    /// First PSN not complete.
    acked: usize,
    /// Timeouts since the last progress.
    retries: u32,
    /// The go-back-N already started from this PSN (later gaps of the old transmission
    /// are ignored until progress).
    recovering_from: Option<usize>,
    /// The armed timer's generation (a timer event of another generation is stale).
    timer: u64,
    /// The response held by a page fault, if the requester side is suspended.
    held: Option<usize>,
    /// Seeded timer jitter, one stream per QP so that QP k draws the same whatever the
    /// number of QPs.
    rng: ChaCha8Rng,
}

/// The responder end of one QP.
#[derive(Default)]
struct ResponderQp {
    /// Expected PSN.
    expected: usize,
    /// A NAK for `expected` was sent (one until it arrives).
    nak_sent: bool,
    /// The request held by a page fault, if the responder side is suspended.
    held: Option<usize>,
}

struct Sim<'a> {
    model: &'a OdpModel,
    delays: Delays,
    workload: &'a Workload,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    requesters: Vec<RequesterQp>,
    responders: Vec<ResponderQp>,
    local: Pages,
    remote: Pages,
    responder_free_at: u64,
    completed: Vec<Option<u64>>,
    done: usize,
    stats: TransportStats,
}

/// Runs `workload` to completion on an RNIC with `model`'s transport, `delays` from the host
/// model; `seed` draws the transport timers' lateness. Deterministic for a seed.
pub fn run(
    model: &OdpModel,
    delays: Delays,
    workload: &Workload,
    seed: u64,
) -> Result<TransportRun, TransportError> {
    run_capped(model, delays, workload, seed, EVENT_CAP)
}

/// [`run`], stopping after `cap` events.
fn run_capped(
    model: &OdpModel,
    delays: Delays,
    workload: &Workload,
    seed: u64,
    cap: u64,
) -> Result<TransportRun, TransportError> {
    let mut requesters: Vec<RequesterQp> = (0..workload.qps)
        .map(|qp| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(u64::from(qp));
            RequesterQp {
                reads: Vec::new(),
                next: 0,
                sent: 0,
                acked: 0,
                retries: 0,
                recovering_from: None,
                timer: 0,
                held: None,
                rng,
            }
        })
        .collect();
    for (i, r) in workload.reads.iter().enumerate() {
        let qp = requesters
            .get_mut(r.qp as usize)
            .ok_or(TransportError::NoSuchQp {
                read: i,
                qp: r.qp,
                qps: workload.qps,
            })?;
        qp.reads.push(i);
    }
    let mut sim = Sim {
        model,
        delays,
        workload,
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        requesters,
        responders: (0..workload.qps).map(|_| ResponderQp::default()).collect(),
        local: Pages::default(),
        remote: Pages::default(),
        responder_free_at: 0,
        completed: vec![None; workload.reads.len()],
        done: 0,
        stats: TransportStats::default(),
    };
    for r in &workload.reads {
        sim.at(r.post_ns, Event::Post { qp: r.qp });
    }
    let mut events = 0u64;
    while sim.done < workload.reads.len() {
        let Some(Reverse((time, _, event))) = sim.queue.pop() else {
            unreachable!("a QP with an incomplete READ always has a timer armed");
        };
        events += 1;
        if events > cap {
            return Err(TransportError::EventCap {
                cap,
                at_ms: time as f64 / 1e6,
                done: sim.done,
                reads: workload.reads.len(),
            });
        }
        sim.now = time;
        sim.handle(event)?;
    }
    Ok(TransportRun {
        completed_ns: sim.completed.into_iter().flatten().collect(),
        stats: sim.stats,
        events,
    })
}

fn ns(value: f64) -> u64 {
    value.round().max(0.0) as u64
}

impl Sim<'_> {
    fn at(&mut self, time: u64, event: Event) {
        self.seq += 1;
        self.queue.push(Reverse((time, self.seq, event)));
    }

    /// Puts a packet on the wire; it arrives `wire_ns` after `departs`.
    fn send(&mut self, departs: u64, event: Event) {
        self.stats.packets += 1;
        self.at(departs + ns(self.model.wire_ns), event);
    }

    fn read_of(&self, qp: u32, psn: usize) -> usize {
        self.requesters[qp as usize].reads[psn]
    }

    fn handle(&mut self, event: Event) -> Result<(), TransportError> {
        match event {
            Event::Post { qp } => self.pump(qp),
            Event::Request { qp, psn } => self.on_request(qp, psn),
            Event::Response { qp, psn } => return self.on_response(qp, psn),
            Event::Nak { qp, psn } => {
                self.stats.packet_seq_err += 1;
                return self.retransmit(qp, psn, Cause::Sequence);
            }
            Event::FaultDone { side, qp, psn } => return self.on_fault_done(side, qp, psn),
            Event::Timer { qp, generation } => {
                let q = &self.requesters[qp as usize];
                if generation == q.timer && q.acked < q.sent {
                    self.stats.local_ack_timeout_err += 1;
                    let acked = q.acked;
                    return self.retransmit(qp, acked, Cause::Timeout);
                }
            }
        }
        Ok(())
    }

    /// Sends what the window allows of the READs posted by now.
    fn pump(&mut self, qp: u32) {
        let window = self.model.max_outstanding_reads as usize;
        loop {
            let q = &self.requesters[qp as usize];
            if q.next >= q.reads.len()
                || q.next >= q.acked + window
                || self.workload.reads[q.reads[q.next]].post_ns > self.now
            {
                break;
            }
            let psn = q.next;
            let idle = q.acked == q.sent;
            let q = &mut self.requesters[qp as usize];
            q.next += 1;
            q.sent = q.sent.max(q.next);
            self.send(self.now, Event::Request { qp, psn });
            if idle {
                self.arm(qp);
            }
        }
    }

    /// Arms the QP's transport timer: the floor, late by a seeded fraction of itself.
    fn arm(&mut self, qp: u32) {
        let timeout_ns = self.model.timeout_floor_ms * 1e6;
        let q = &mut self.requesters[qp as usize];
        let late: f64 = q.rng.gen_range(0.0..=1.0) * self.model.timeout_spread;
        q.timer += 1;
        let generation = q.timer;
        self.at(
            self.now + ns(timeout_ns * (1.0 + late)),
            Event::Timer { qp, generation },
        );
    }

    /// Go-back-N from `psn`; a timeout counts as a retry.
    fn retransmit(&mut self, qp: u32, psn: usize, cause: Cause) -> Result<(), TransportError> {
        let q = &mut self.requesters[qp as usize];
        if psn < q.acked || psn >= q.sent {
            return Ok(()); // a NAK for what has completed since, or was never sent
        }
        q.retries += u32::from(cause == Cause::Timeout);
        if q.retries > self.model.retry_count {
            return Err(TransportError::RetryExceeded {
                qp,
                read: q.reads[q.acked],
                retries: q.retries,
                at_ms: self.now as f64 / 1e6,
            });
        }
        q.recovering_from = Some(psn);
        q.next = psn;
        self.arm(qp);
        self.pump(qp);
        Ok(())
    }

    fn on_request(&mut self, qp: u32, psn: usize) {
        let r = &mut self.responders[qp as usize];
        if r.held.is_some() {
            self.stats.dropped += 1; // suspended on its own fault (rule 2)
            return;
        }
        if psn < r.expected {
            self.stats.duplicate_request += 1;
            self.respond(qp, psn);
            return;
        }
        if psn > r.expected {
            self.stats.out_of_sequence += 1;
            if !r.nak_sent {
                r.nak_sent = true;
                let expected = r.expected;
                self.send(self.now, Event::Nak { qp, psn: expected });
            }
            return;
        }
        r.nak_sent = false;
        let page = self.workload.reads[self.read_of(qp, psn)].remote_page;
        let access = if self.workload.remote_odp {
            self.remote.access(qp, page)
        } else {
            Access::Present
        };
        match access {
            Access::Present => {
                self.responders[qp as usize].expected += 1;
                self.respond(qp, psn);
            }
            Access::Concurrent => self.stats.dropped += 1,
            Access::Fault => {
                self.stats.page_faults += 1;
                self.stats.stale_page_faults += u64::from(self.remote.mapped.contains(&page));
                self.remote.in_flight.insert(page, qp);
                self.responders[qp as usize].held = Some(psn);
                self.fault(Side::Responder, qp, psn);
            }
        }
    }

    /// The responder executes the READ: it waits its turn, reads the source over DMA and
    /// sends the response.
    fn respond(&mut self, qp: u32, psn: usize) {
        let start = self.now.max(self.responder_free_at);
        self.responder_free_at = start + ns(self.model.responder_ns);
        let departs = self.responder_free_at + 2 * self.delays.dma_ns;
        self.send(departs, Event::Response { qp, psn });
    }

    fn fault(&mut self, side: Side, qp: u32, psn: usize) {
        let done = self.now + ns(self.model.page_fault_us * 1e3);
        self.at(done, Event::FaultDone { side, qp, psn });
    }

    fn on_response(&mut self, qp: u32, psn: usize) -> Result<(), TransportError> {
        let q = &self.requesters[qp as usize];
        if q.held.is_some() {
            self.stats.dropped += 1; // suspended on its own fault (rule 2)
            return Ok(());
        }
        if psn < q.acked || psn >= q.sent {
            return Ok(()); // the answer to an earlier transmission, already complete
        }
        if psn > q.acked {
            self.stats.out_of_sequence += 1;
            let acked = q.acked;
            if q.recovering_from == Some(acked) {
                return Ok(()); // already going back for it
            }
            return self.retransmit(qp, acked, Cause::Sequence);
        }
        let page = self.workload.reads[self.read_of(qp, psn)].local_page;
        let access = if self.workload.local_odp {
            self.local.access(qp, page)
        } else {
            Access::Present
        };
        match access {
            Access::Present => self.complete(qp, psn),
            Access::Concurrent => self.stats.dropped += 1,
            Access::Fault => {
                self.stats.page_faults += 1;
                self.stats.stale_page_faults += u64::from(self.local.mapped.contains(&page));
                self.local.in_flight.insert(page, qp);
                self.requesters[qp as usize].held = Some(psn);
                self.fault(Side::Requester, qp, psn);
            }
        }
        Ok(())
    }

    fn on_fault_done(&mut self, side: Side, qp: u32, psn: usize) -> Result<(), TransportError> {
        let read = self.workload.reads[self.read_of(qp, psn)];
        match side {
            Side::Responder => {
                self.remote.resolve(qp, read.remote_page);
                let r = &mut self.responders[qp as usize];
                r.held = None;
                r.expected += 1;
                self.respond(qp, psn);
            }
            Side::Requester => {
                self.local.resolve(qp, read.local_page);
                self.requesters[qp as usize].held = None;
                self.complete(qp, psn);
            }
        }
        Ok(())
    }

    /// The READ at `psn` lands in memory: progress.
    fn complete(&mut self, qp: u32, psn: usize) {
        let read = self.read_of(qp, psn);
        debug_assert!(
            self.completed[read].is_none(),
            "READ {read} completed twice"
        );
        self.completed[read] = Some(self.now + self.delays.dma_ns);
        self.done += 1;
        let q = &mut self.requesters[qp as usize];
        q.acked = psn + 1;
        q.next = q.next.max(q.acked);
        q.retries = 0;
        q.recovering_from = None;
        if q.acked < q.sent {
            self.arm(qp);
        } else {
            q.timer += 1; // disarmed
        }
        self.pump(qp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DELAYS: Delays = Delays { dma_ns: 250 };

    fn reads(posts: &[(u64, u32)]) -> Vec<Read> {
        posts
            .iter()
            .map(|&(post_ns, qp)| Read {
                post_ns,
                qp,
                local_page: 0,
                remote_page: 0,
            })
            .collect()
    }

    fn damming(interval_ns: u64, odp: bool) -> Workload {
        Workload {
            qps: 1,
            reads: reads(&[(0, 0), (interval_ns, 0)]),
            local_odp: odp,
            remote_odp: odp,
        }
    }

    fn flood(qps: u32, n: u32) -> Workload {
        Workload {
            qps,
            reads: reads(&(0..n).map(|i| (0, i % qps)).collect::<Vec<_>>()),
            local_odp: true,
            remote_odp: false,
        }
    }

    /// One READ on pinned memory: request out, DMA read at the responder, response back,
    /// DMA write at the requester.
    fn one_read_ns(m: &OdpModel) -> u64 {
        2 * ns(m.wire_ns) + ns(m.responder_ns) + 3 * DELAYS.dma_ns
    }

    #[test]
    fn pinned_memory_takes_no_fault_and_no_timeout() {
        let m = OdpModel::default();
        let run = run(&m, DELAYS, &damming(500_000, false), 1).unwrap();
        assert_eq!(run.stats.local_ack_timeout_err, 0);
        assert_eq!(run.stats.page_faults, 0);
        assert_eq!(run.stats.packets, 4, "two requests, two responses");
        assert_eq!(
            run.completed_ns,
            vec![one_read_ns(&m), 500_000 + one_read_ns(&m)]
        );
    }

    #[test]
    fn a_second_read_during_a_fault_waits_out_the_timeout() {
        let m = OdpModel::default();
        let floor_ns = ns(m.timeout_floor_ms * 1e6);
        // Inside the window: dropped at the suspended responder (rule 2), found by the
        // timer only.
        let run = run(&m, DELAYS, &damming(1_000_000, true), 1).unwrap();
        assert_eq!(run.stats.local_ack_timeout_err, 1);
        assert!(run.completed_ns[1] >= floor_ns, "{:?}", run.completed_ns);
        assert!(run.stats.dropped >= 1);
        // The first READ pays two faults (responder, then requester) and no timeout.
        let fault_ns = ns(m.page_fault_us * 1e3);
        assert_eq!(run.completed_ns[0], 2 * fault_ns + one_read_ns(&m));
        // Past both faults the page is present on both sides: no stall.
        let late = 2 * fault_ns + one_read_ns(&m) + 1_000;
        let run = super::run(&m, DELAYS, &damming(late, true), 1).unwrap();
        assert_eq!(run.stats.local_ack_timeout_err, 0);
        assert_eq!(run.completed_ns[1], late + one_read_ns(&m));
    }

    #[test]
    fn one_qp_floods_nothing_and_more_qps_time_out() {
        let m = OdpModel::default();
        let one = run(&m, DELAYS, &flood(1, 512), 1).unwrap();
        assert_eq!(one.stats.local_ack_timeout_err, 0);
        assert_eq!(one.stats.page_faults, 1);
        assert_eq!(one.stats.stale_page_faults, 0);
        // The window dropped during the fault is fetched again once: at most W duplicates.
        assert!(one.stats.duplicate_request <= u64::from(m.max_outstanding_reads));
        let four = run(&m, DELAYS, &flood(4, 512), 1).unwrap();
        assert!(four.stats.local_ack_timeout_err >= 3, "{:?}", four.stats);
        assert_eq!(
            four.stats.page_faults, 4,
            "one per QP: statuses are not shared"
        );
        assert_eq!(four.stats.stale_page_faults, 3);
        assert!(four.stats.packets > one.stats.packets);
    }

    #[test]
    fn the_same_seed_replays_the_run() {
        let m = OdpModel::default();
        let a = run(&m, DELAYS, &flood(6, 600), 7).unwrap();
        let b = run(&m, DELAYS, &flood(6, 600), 7).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn retries_without_progress_fail_the_read() {
        // No retry allowed: the first timeout fails the second READ of a damming run.
        let m = OdpModel {
            retry_count: 0,
            ..OdpModel::default()
        };
        let e = run(&m, DELAYS, &damming(1_000_000, true), 1).unwrap_err();
        assert!(
            matches!(e, TransportError::RetryExceeded { qp: 0, read: 1, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("READ 1 on QP 0"), "{e}");
    }

    #[test]
    fn the_model_is_bounded() {
        let e = run_capped(&OdpModel::default(), DELAYS, &flood(4, 4096), 1, 1000).unwrap_err();
        let TransportError::EventCap {
            cap, done, reads, ..
        } = e.clone()
        else {
            panic!("{e}");
        };
        assert_eq!((cap, reads), (1000, 4096));
        assert!(done < reads);
        assert!(e.to_string().contains("stopped after 1000 events"), "{e}");
    }

    #[test]
    fn a_read_on_a_missing_qp_is_an_error() {
        let w = Workload {
            qps: 1,
            reads: reads(&[(0, 1)]),
            local_odp: false,
            remote_odp: false,
        };
        let e = run(&OdpModel::default(), DELAYS, &w, 1).unwrap_err();
        assert_eq!(
            e,
            TransportError::NoSuchQp {
                read: 0,
                qp: 1,
                qps: 1
            }
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Every READ completes exactly once, after it was posted, and every READ cost at
        /// least a request and a response on the wire.
        #[test]
        fn every_read_completes_once(
            qps in 1u32..6,
            n in 1u32..200,
            seed in any::<u64>(),
            local in any::<bool>(),
            remote in any::<bool>(),
            gap_us in 0u64..6000,
        ) {
            let w = Workload {
                qps,
                reads: reads(&(0..n).map(|i| (u64::from(i) * gap_us * 10, i % qps)).collect::<Vec<_>>()),
                local_odp: local,
                remote_odp: remote,
            };
            let run = run(&OdpModel::default(), DELAYS, &w, seed).unwrap();
            prop_assert_eq!(run.completed_ns.len(), n as usize);
            for (r, done) in w.reads.iter().zip(&run.completed_ns) {
                prop_assert!(*done > r.post_ns);
            }
            prop_assert!(run.stats.packets >= 2 * u64::from(n));
            prop_assert!(run.stats.page_faults <= u64::from(qps) * 2);
        }

        /// More QPs never make a flood quieter, and not faster beyond the shorter share of
        /// READs each QP then has (the QPs' timers are drawn from per-QP streams, so a run
        /// with more QPs adds QPs that wait).
        #[test]
        fn a_flood_grows_with_qps(seed in any::<u64>(), q in 1u32..10) {
            let m = OdpModel::default();
            let a = run(&m, DELAYS, &flood(q, 1024), seed).unwrap();
            let b = run(&m, DELAYS, &flood(q + 1, 1024), seed).unwrap();
            let end = |r: &TransportRun| r.completed_ns.iter().copied().max().unwrap();
            prop_assert!(end(&b) as f64 >= 0.99 * end(&a) as f64, "{} QPs: {} ns, {}: {} ns", q, end(&a), q + 1, end(&b));
            prop_assert!(b.stats.packets >= a.stats.packets);
            prop_assert!(b.stats.local_ack_timeout_err >= a.stats.local_ack_timeout_err);
            prop_assert!(b.stats.page_faults >= a.stats.page_faults);
        }
    }
}
