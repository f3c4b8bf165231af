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
    Ok((from_runs(host, &runs, latency.measured_with())?, runs))
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
    /// It was measured another way than this check measures (`measured_with`).
    #[error(
        "baseline `{path}` was measured another way than this check, so its numbers are not \
         comparable: {}; check with the baseline's settings or record a new baseline with \
         `hostping baseline` and the same settings",
        differences.join("; ")
    )]
    MeasuredOtherwise {
        /// The file.
        path: std::path::PathBuf,
        /// Each setting that differs, in words.
        differences: Vec<String>,
    },
}

/// A baseline file, checked against the host it is to judge (when there is a model) and
/// against the latency test the check will run: a baseline measured another way (another
/// operation, message size or iteration count) is refused, naming each difference. A file
/// without `measured_with` was measured with today's defaults ([`model::baseline::MeasuredWith`]).
pub fn load(
    path: &std::path::Path,
    host: Option<&HostTopology>,
    latency: &LatencySpec,
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
    let differences = baseline.measured_with.differences(&latency.measured_with());
    if !differences.is_empty() {
        return Err(BaselineFileError::MeasuredOtherwise {
            path: path.to_owned(),
            differences,
        });
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
        assert_eq!(b.measured_with, spec.measured_with());
        let other = model::builtin::load("amd-2s").unwrap().unwrap();
        let e = b.check_fits(&other, "b.json").unwrap_err();
        assert_eq!(
            (e.source_name.as_str(), e.field.as_str()),
            ("b.json", "host")
        );
    }

    #[test]
    fn a_baseline_measured_another_way_is_refused_naming_each_difference() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let recorded_with = LatencySpec {
            iterations: 50,
            ..LatencySpec::default()
        };
        let b = simulated(&host, 1, 7, &recorded_with, 0.0);
        let dir = std::env::temp_dir().join(format!("hostping-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("b.json");
        std::fs::write(&file, serde_json::to_string(&b).unwrap()).unwrap();
        assert!(load(&file, Some(&host), &recorded_with).is_ok());
        let check = LatencySpec {
            op: model::Op::Read,
            ..LatencySpec::default()
        };
        let e = load(&file, Some(&host), &check).unwrap_err().to_string();
        assert!(e.contains("b.json"), "{e}");
        assert!(
            e.contains("baseline measured with --op write, this check uses --op read"),
            "{e}"
        );
        assert!(
            e.contains("baseline measured with --iterations 50, this check uses --iterations 1000"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
