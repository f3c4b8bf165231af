//! ISPASS'21's two ODP micro-benchmarks as workloads of the transport model
//! ([`crate::odp_transport`]), on one RNIC of a host model, giving the points `hostping
//! odp-bench --sim` prints (labelled simulated by the caller).
//!
//! - Damming ("Microbench for packet damming"): two 100 B READs on one QP, the second
//!   posted `interval_us` after the first, ODP memory on both sides.
//! - Flood ("Microbench for packet flood"): 8192 100 B READs posted back to back, spread
//!   round-robin over `qps` QPs, ODP memory on the client (requester) side only.
//!
//! Both read one 100 B buffer into one 100 B buffer, so every READ of a run needs the same
//! page on each side: our assumption, as the slides do not say where the READs land; it is
//! the case in which page faults can be concurrent at all.

use crate::odp_transport::{self, Delays, Read, TransportError, TransportRun, Workload};
use model::odp_bench::{OdpBenchPoint, TransportDelta};
use model::{ComponentClass, ComponentId, HostTopology, OdpModel};

/// READs of the damming micro-benchmark.
pub const DAMMING_READS: u32 = 2;
/// READs of the flood micro-benchmark (ISPASS'21: "8192 READs").
pub const FLOOD_READS: u32 = 8192;
/// Bytes per READ (ISPASS'21: "the message size is 100 bytes").
pub const READ_BYTES: u32 = 100;

/// Why a micro-benchmark could not run on the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OdpSimError {
    /// The host model has no such RNIC.
    #[error("host model `{host}` has no RNIC `{rnic}` (RNICs: {known})")]
    NoRnic {
        /// The host model.
        host: String,
        /// The RNIC asked for.
        rnic: String,
        /// Its RNICs.
        known: String,
    },
    /// The RNIC reaches no memory node (no DMA path to take a delay from).
    #[error("RNIC `{rnic}` of `{host}` has no path to a memory node")]
    NoMemory {
        /// The host model.
        host: String,
        /// The RNIC.
        rnic: String,
    },
    /// The transport model did not complete every READ.
    #[error("{kind} on {rnic}: {source}")]
    Transport {
        /// `damming at 500 us`, `flood with 4 QPs`.
        kind: String,
        /// The RNIC.
        rnic: String,
        /// What happened.
        source: TransportError,
    },
}

/// One RNIC of a host model, ready to run the micro-benchmarks.
#[derive(Debug, Clone)]
pub struct OdpRnic {
    rnic: ComponentId,
    model: OdpModel,
    delays: Delays,
}

impl OdpRnic {
    /// The RNIC `rnic` of `host` (`None`: the first), with the host's `[odp]` parameters
    /// and the DMA delay of its nearest memory node (the sum of its path's link latencies).
    pub fn new(host: &HostTopology, rnic: Option<&ComponentId>) -> Result<Self, OdpSimError> {
        let found = match rnic {
            Some(id) => host.rnics().find(|c| &c.id == id),
            None => host.rnics().next(),
        };
        let Some(found) = found else {
            return Err(OdpSimError::NoRnic {
                host: host.name.clone(),
                rnic: rnic.map_or("(any)".to_string(), ToString::to_string),
                known: host
                    .rnics()
                    .map(|c| c.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let rnic = found.id.clone();
        let dma_ns = host
            .paths_of(&rnic)
            .filter(|p| {
                host.component(&p.endpoint)
                    .is_some_and(|c| c.class() == ComponentClass::Memory)
            })
            .map(|p| {
                p.links
                    .iter()
                    .filter_map(|l| host.link(l))
                    .map(|l| l.latency_ns)
                    .sum::<f64>()
            })
            .min_by(f64::total_cmp)
            .ok_or_else(|| OdpSimError::NoMemory {
                host: host.name.clone(),
                rnic: rnic.to_string(),
            })?;
        Ok(OdpRnic {
            rnic,
            model: host.odp,
            delays: Delays {
                dma_ns: dma_ns.round() as u64,
            },
        })
    }

    /// The RNIC's id.
    pub fn id(&self) -> &ComponentId {
        &self.rnic
    }

    /// The transport parameters in use.
    pub fn model(&self) -> &OdpModel {
        &self.model
    }

    /// One-way DMA delay between the RNIC and its memory, ns.
    pub fn dma_ns(&self) -> u64 {
        self.delays.dma_ns
    }

    /// The damming micro-benchmark at one interval; `odp` false runs it on pinned memory.
    pub fn damming(
        &self,
        interval_us: u32,
        odp: bool,
        seed: u64,
    ) -> Result<OdpBenchPoint, OdpSimError> {
        let read = |post_ns| Read {
            post_ns,
            qp: 0,
            local_page: 0,
            remote_page: 0,
        };
        let workload = Workload {
            qps: 1,
            reads: vec![read(0), read(u64::from(interval_us) * 1000)],
            local_odp: odp,
            remote_odp: odp,
        };
        let run = self.run(&workload, seed, || format!("damming at {interval_us} us"))?;
        Ok(point(&workload, &run, Some(interval_us), 1))
    }

    /// The flood micro-benchmark over `qps` QPs; `odp` false runs it on pinned memory.
    pub fn flood(&self, qps: u32, odp: bool, seed: u64) -> Result<OdpBenchPoint, OdpSimError> {
        let qps = qps.max(1);
        let workload = Workload {
            qps,
            reads: (0..FLOOD_READS)
                .map(|i| Read {
                    post_ns: 0,
                    qp: i % qps,
                    local_page: 0,
                    remote_page: 0,
                })
                .collect(),
            local_odp: odp,
            remote_odp: false,
        };
        let run = self.run(&workload, seed, || format!("flood with {qps} QPs"))?;
        Ok(point(&workload, &run, None, qps))
    }

    fn run(
        &self,
        workload: &Workload,
        seed: u64,
        kind: impl Fn() -> String,
    ) -> Result<TransportRun, OdpSimError> {
        odp_transport::run(&self.model, self.delays, workload, seed).map_err(|source| {
            OdpSimError::Transport {
                kind: kind(),
                rnic: self.rnic.to_string(),
                source,
            }
        })
    }
}

/// The report's point for a completed run.
fn point(
    workload: &Workload,
    run: &TransportRun,
    interval_us: Option<u32>,
    qps: u32,
) -> OdpBenchPoint {
    let first_post = workload.reads.iter().map(|r| r.post_ns).min().unwrap_or(0);
    let last = run.completed_ns.iter().copied().max().unwrap_or(first_post);
    let slowest = workload
        .reads
        .iter()
        .zip(&run.completed_ns)
        .map(|(r, done)| done - r.post_ns)
        .max()
        .unwrap_or(0);
    let s = run.stats;
    OdpBenchPoint {
        interval_us,
        qps,
        reads: workload.reads.len() as u32,
        read_bytes: READ_BYTES,
        elapsed_us: (last - first_post) as f64 / 1e3,
        slowest_read_us: slowest as f64 / 1e3,
        packets: Some(s.packets),
        transport: TransportDelta {
            local_ack_timeout_err: Some(s.local_ack_timeout_err),
            packet_seq_err: Some(s.packet_seq_err),
            out_of_sequence: Some(s.out_of_sequence),
            duplicate_request: Some(s.duplicate_request),
        },
        page_faults: Some(s.page_faults),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgx() -> HostTopology {
        model::builtin::load("dgx-a100").unwrap().unwrap()
    }

    #[test]
    fn an_unknown_rnic_is_named_with_the_known_ones() {
        let e = OdpRnic::new(&dgx(), Some(&"rnic99".into())).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("no RNIC `rnic99`"), "{text}");
        assert!(text.contains("rnic0"), "{text}");
    }

    #[test]
    fn the_dma_delay_comes_from_the_host_model() {
        let host = dgx();
        let r = OdpRnic::new(&host, None).unwrap();
        assert_eq!(r.id(), &ComponentId::from("rnic0"));
        let nearest = host
            .paths_of(r.id())
            .filter(|p| host.component(&p.endpoint).unwrap().class() == ComponentClass::Memory)
            .map(|p| {
                p.links
                    .iter()
                    .map(|l| host.link(l).unwrap().latency_ns)
                    .sum::<f64>()
            })
            .fold(f64::INFINITY, f64::min);
        assert_eq!(r.dma_ns(), nearest.round() as u64);
        assert!(r.dma_ns() > 0);
    }

    #[test]
    fn damming_stalls_for_the_timeout_and_pinned_memory_does_not() {
        let r = OdpRnic::new(&dgx(), None).unwrap();
        let floor_us = r.model().timeout_floor_ms * 1e3;
        for interval in [500, 2500, 4500] {
            let p = r.damming(interval, true, 1).unwrap();
            assert!(p.elapsed_us >= floor_us, "{interval} us: {p:?}");
            assert_eq!(p.transport.local_ack_timeout_err, Some(1));
            assert_eq!((p.reads, p.read_bytes, p.qps), (2, 100, 1));
            let pinned = r.damming(interval, false, 1).unwrap();
            assert!(pinned.elapsed_us < f64::from(interval) + 10.0, "{pinned:?}");
            assert_eq!(pinned.transport.local_ack_timeout_err, Some(0));
        }
    }

    #[test]
    fn a_flood_reports_every_read() {
        let r = OdpRnic::new(&dgx(), None).unwrap();
        let p = r.flood(4, true, 1).unwrap();
        assert_eq!((p.reads, p.qps, p.interval_us), (FLOOD_READS, 4, None));
        assert!(p.packets.unwrap() >= 2 * u64::from(FLOOD_READS));
        assert_eq!(p.page_faults, Some(4));
    }
}
