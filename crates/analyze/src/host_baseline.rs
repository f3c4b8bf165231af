//! A host's own baseline from its healthy probe runs (Hostping 4.3: "obtained via loopback
//! tests on a batch of idle hosts with the same devices and configurations"): per path, the
//! median over runs, which one bad run cannot move. The fleet's baseline, over many hosts of
//! a kind, is [`crate::fleet::baseline`].

use crate::robust::median;
use model::baseline::MeasuredWith;
use model::{Baseline, BaselinePath, ComponentId, HostTopology, ProbeRun};

/// A path had no successful measurement in any run.
#[derive(Debug, thiserror::Error)]
#[error("no successful probe of {rnic} -> {endpoint} in {runs} runs: cannot baseline it")]
pub struct MissingPath {
    /// The RNIC.
    pub rnic: ComponentId,
    /// The endpoint.
    pub endpoint: ComponentId,
    /// How many runs were tried.
    pub runs: usize,
}

/// Per-path medians of latency and bandwidth over `runs`, which were measured with
/// `measured_with` (the baseline records it, so a check measured another way is refused).
pub fn from_runs(
    host: &HostTopology,
    runs: &[ProbeRun],
    measured_with: MeasuredWith,
) -> Result<Baseline, MissingPath> {
    let mut paths = Vec::new();
    for path in host.paths() {
        let measured: Vec<_> = runs
            .iter()
            .filter_map(|r| r.probe(&path.rnic, &path.endpoint))
            .filter_map(|p| p.measurement())
            .collect();
        if measured.is_empty() {
            // A plan may leave paths out (busy mode), and an engine may be unable to probe
            // a path by design (a GPU without a driver): such paths get no baseline and
            // are judged "no baseline". Any other failure in every run is an error.
            let probes = runs
                .iter()
                .filter_map(|r| r.probe(&path.rnic, &path.endpoint));
            if probes
                .clone()
                .all(|p| matches!(p.outcome, model::PathOutcome::Unavailable { .. }))
            {
                continue;
            }
            return Err(MissingPath {
                rnic: path.rnic.clone(),
                endpoint: path.endpoint.clone(),
                runs: runs.len(),
            });
        }
        const NOT_EMPTY: &str = "paths without a measurement were skipped above";
        paths.push(BaselinePath {
            rnic: path.rnic.clone(),
            endpoint: path.endpoint.clone(),
            latency_us: median(measured.iter().map(|m| m.small.p50_us)).expect(NOT_EMPTY),
            bandwidth_gbps: median(measured.iter().map(|m| m.bandwidth_gbps)).expect(NOT_EMPTY),
        });
    }
    let provenance = runs
        .first()
        .map(|r| r.provenance)
        .unwrap_or(model::Provenance::Simulated);
    Ok(Baseline {
        host: host.name.clone(),
        provenance,
        runs: runs.len() as u32,
        paths,
        measured_with,
    })
}
