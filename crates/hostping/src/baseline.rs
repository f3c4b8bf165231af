//! Building a baseline from healthy probe runs (Hostping 4.3: "obtained via loopback tests
//! on a batch of idle hosts with the same devices and configurations"): per path, the median
//! over runs, which one bad run cannot move.

use model::{Baseline, BaselinePath, ComponentId, HostTopology, ProbeRun};
use probe::{median, plan, LatencySpec, Plan, RunSpec};
use vhost::{VhostConfig, VirtualHost};

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

/// Per-path medians of latency and bandwidth over `runs`.
pub fn from_runs(host: &HostTopology, runs: &[ProbeRun]) -> Result<Baseline, MissingPath> {
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
    })
}

/// A baseline recorded on `engine` (the real host, or a virtual one): `runs` idle
/// full-mesh runs, `cadence_ns` apart; `progress(run, done, total)` after each path.
/// Returns the runs too, so a caller can say why a path is missing.
pub fn record(
    engine: &mut dyn probe::ProbeEngine,
    host: &HostTopology,
    runs: u32,
    latency: &LatencySpec,
    cadence_ns: u64,
    progress: &mut dyn FnMut(u32, usize, usize),
) -> Result<(Baseline, Vec<ProbeRun>), MissingPath> {
    let paths = plan(host, Plan::FullMesh);
    let spec = RunSpec {
        latency: latency.clone(),
        stream: None,
    };
    let runs: Vec<ProbeRun> = (0..runs.max(1))
        .map(|i| {
            if i > 0 {
                engine.idle(cadence_ns);
            }
            probe::run(
                engine,
                host,
                model::Mode::Idle,
                &paths,
                &spec,
                &mut |d, t| progress(i, d, t),
            )
        })
        .collect();
    Ok((from_runs(host, &runs)?, runs))
}

/// Healthy runs in a simulated baseline when none is given.
pub const DEFAULT_RUNS: u32 = 3;

/// Seed offset so that a simulated baseline never shares noise with the check it judges.
const BASELINE_SEED_SALT: u64 = 0xBA5E_11E0;

/// The baseline of a healthy virtual host of the same model: `runs` idle full-mesh runs.
pub fn simulated(
    host: &HostTopology,
    runs: u32,
    seed: u64,
    latency: &LatencySpec,
    noise: f64,
) -> Baseline {
    let config = VhostConfig {
        seed: seed ^ BASELINE_SEED_SALT,
        noise,
        ..VhostConfig::default()
    };
    let mut healthy = VirtualHost::new(host.clone(), Vec::new(), config);
    record(
        &mut healthy,
        host,
        runs,
        latency,
        crate::pipeline::DEFAULT_CADENCE_NS,
        &mut |_, _, _| {},
    )
    .map(|(baseline, _)| baseline)
    .expect("a healthy virtual host measures every path")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_baseline_covers_every_path_and_matches_the_model() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let spec = LatencySpec {
            iterations: 200,
            ..LatencySpec::default()
        };
        let b = simulated(&host, 3, 7, &spec, 0.02);
        assert_eq!(b.paths.len(), 40);
        assert_eq!(b.runs, 3);
        b.check_fits(&host, "b").unwrap();
        let near = b.path(&"rnic0".into(), &"gpu0".into()).unwrap();
        let far = b.path(&"rnic0".into(), &"gpu2".into()).unwrap();
        assert!((near.bandwidth_gbps - 200.0).abs() < 8.0, "{near:?}");
        assert!(
            far.bandwidth_gbps < 140.0 && far.latency_us > near.latency_us,
            "{far:?}"
        );
        let other = model::builtin::load("amd-2s").unwrap().unwrap();
        let e = b.check_fits(&other, "b.json").unwrap_err();
        assert_eq!(
            (e.source_name.as_str(), e.field.as_str()),
            ("b.json", "host")
        );
    }
}
