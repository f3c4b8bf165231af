//! Recording a host's baseline: healthy idle full-mesh runs probed on the host (real, or a
//! healthy virtual host of the same model), summarised by
//! [`analyze::host_baseline::from_runs`]; and a baseline file read back for a check.

use analyze::host_baseline::{from_runs, MissingPath};
use model::{Baseline, HostTopology, ProbeRun};
use probe::{plan, LatencySpec, Plan, RunSpec};
use vhost::{VhostConfig, VirtualHost};

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

/// A baseline file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineFileError {
    /// The file cannot be read.
    #[error("cannot read baseline `{path}`: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a baseline, or not one of this host.
    #[error(transparent)]
    Invalid(#[from] model::ModelError),
}

/// A baseline file, checked against the host it is to judge (when there is a model).
pub fn load(
    path: &std::path::Path,
    host: Option<&HostTopology>,
) -> Result<Baseline, BaselineFileError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| BaselineFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let baseline = Baseline::from_json(&name, &text)?;
    if let Some(host) = host {
        baseline.check_fits(host, &name)?;
    }
    Ok(baseline)
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
