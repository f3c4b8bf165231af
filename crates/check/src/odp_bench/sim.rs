//! `hostping odp-bench --sim MODEL`: the micro-benchmarks on the virtual host's RNIC
//! transport model ([`vhost::odp_micro`]), labelled simulated. `--device` names the model's
//! RNIC (default: the first).

use super::OdpSweep;
use crate::sim::SimError;
use model::odp_bench::{OdpBenchKind, OdpBenchReport};
use model::{ComponentId, Provenance};
use vhost::odp_micro::OdpSimError;
use vhost::odp_micro::{OdpRnic, FLOOD_READS, READ_BYTES};

/// Seed of the transport timers. Damming point `i` uses `SEED + i`, so the intervals do
/// not share one draw; every flood point uses `SEED`, so QP k's timers are the same draws
/// whatever the number of QPs, and the sweep compares QP counts, not draws. A run replays
/// exactly.
const SEED: u64 = 1;

/// Why a simulated `odp-bench` did not run.
#[derive(Debug, thiserror::Error)]
pub enum SimOdpBenchError {
    /// The host model (`--sim`).
    #[error(transparent)]
    Host(#[from] SimError),
    /// The model's RNIC or a point of the sweep.
    #[error(transparent)]
    Model(#[from] OdpSimError),
}

/// Runs the micro-benchmark of `args` on the virtual host `model`.
pub fn run(args: &OdpSweep, model: &str) -> Result<OdpBenchReport, SimOdpBenchError> {
    let kind = args.kind;
    let host = crate::sim::load_host(model)?;
    let wanted = args.device.as_deref().map(ComponentId::from);
    let rnic = OdpRnic::new(&host, wanted.as_ref())?;
    let points = match kind {
        OdpBenchKind::Damming => args
            .intervals
            .iter()
            .zip(SEED..)
            .map(|(&interval, seed)| rnic.damming(interval, true, seed))
            .collect::<Result<Vec<_>, _>>()?,
        OdpBenchKind::Flood => (1..=args.qps)
            .map(|qps| rnic.flood(qps, true, SEED))
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(OdpBenchReport {
        kind,
        device: rnic.id().to_string(),
        rnic: Some(rnic.id().clone()),
        provenance: Provenance::Simulated,
        points,
        notes: notes(kind, &host.name, &rnic),
    })
}

/// What a reader must know: whose numbers these are, the workload, the parameters.
fn notes(kind: OdpBenchKind, host: &str, rnic: &OdpRnic) -> Vec<String> {
    let m = rnic.model();
    let workload = match kind {
        OdpBenchKind::Damming => {
            format!("two {READ_BYTES} B READs on one QP per interval, ODP memory on both sides")
        }
        OdpBenchKind::Flood => format!(
            "{FLOOD_READS} {READ_BYTES} B READs posted back to back, round-robin over 1..N \
             QPs, ODP memory on the requester side only"
        ),
    };
    vec![
        format!(
            "simulated: these are the numbers of the virtual host's RC transport model over ODP \
             memory on {host}/{}, not measurements and not ISPASS'21's figures",
            rnic.id()
        ),
        format!("workload (ISPASS'21's micro-benchmark): {workload}"),
        format!(
            "model parameters ([odp] table of the host model): page fault {} us, transport \
             timeout at the firmware floor of {} ms, firing between 1x and {}x of it, retry \
             count {}, {} outstanding READs per QP, wire {} ns one way, responder {} ns per \
             READ, DMA {} ns one way (host model's links)",
            m.page_fault_us,
            m.timeout_floor_ms,
            1.0 + m.timeout_spread,
            m.retry_count,
            m.max_outstanding_reads,
            m.wire_ns,
            m.responder_ns,
            rnic.dma_ns()
        ),
        "packets counts requests, READ responses and NAKs on the wire, both directions; \
         faults counts the RNIC's page faults on both sides"
            .to_string(),
    ]
}
