//! Building a baseline from healthy probe runs (Hostping 4.3: "obtained via loopback tests
//! on a batch of idle hosts with the same devices and configurations"): per path, the median
//! over runs, which one bad run cannot move.

use model::{Baseline, BaselinePath, HostTopology, ProbeRun};
use probe::{plan, LatencySpec, Plan, RunSpec};
use vhost::{VhostConfig, VirtualHost};

/// A path had no successful measurement in any run.
#[derive(Debug, thiserror::Error)]
#[error("no successful probe of {rnic} -> {endpoint} in {runs} runs: cannot baseline it")]
pub struct MissingPath {
    /// The RNIC.
    pub rnic: String,
    /// The endpoint.
    pub endpoint: String,
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
            // A plan may leave paths out (busy mode); a path probed in no run is skipped
            // only if no run probed it at all.
            if runs
                .iter()
                .all(|r| r.probe(&path.rnic, &path.endpoint).is_none())
            {
                continue;
            }
            return Err(MissingPath {
                rnic: path.rnic.to_string(),
                endpoint: path.endpoint.to_string(),
                runs: runs.len(),
            });
        }
        paths.push(BaselinePath {
            rnic: path.rnic.clone(),
            endpoint: path.endpoint.clone(),
            latency_us: median(measured.iter().map(|m| m.small.p50_us).collect()),
            bandwidth_gbps: median(measured.iter().map(|m| m.bandwidth_gbps).collect()),
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

/// The median (the mean of the two middle values for an even count).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
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
    let paths = plan(host, Plan::FullMesh);
    let spec = RunSpec {
        latency: latency.clone(),
        stream: None,
    };
    let runs: Vec<ProbeRun> = (0..runs.max(1))
        .map(|_| {
            let run = probe::run(
                &mut healthy,
                host,
                model::Mode::Idle,
                &paths,
                &spec,
                &mut |_, _| {},
            );
            healthy.advance(crate::pipeline::DEFAULT_CADENCE_NS);
            run
        })
        .collect();
    from_runs(host, &runs).expect("a healthy virtual host measures every path")
}

/// Checks that a baseline fits a host: same model name, every path present.
pub fn check_fits(baseline: &Baseline, host: &HostTopology, source: &str) -> Result<(), String> {
    if baseline.host != host.name {
        return Err(format!(
            "{source}: host: baseline was recorded on `{}`, not `{}`",
            baseline.host, host.name
        ));
    }
    let missing: Vec<String> = host
        .paths()
        .iter()
        .filter(|p| baseline.path(&p.rnic, &p.endpoint).is_none())
        .map(|p| format!("{}->{}", p.rnic, p.endpoint))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{source}: paths: no baseline for {} path(s): {}",
            missing.len(),
            missing.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

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
        check_fits(&b, &host, "b").unwrap();
        let near = b.path(&"rnic0".into(), &"gpu0".into()).unwrap();
        let far = b.path(&"rnic0".into(), &"gpu2".into()).unwrap();
        assert!((near.bandwidth_gbps - 200.0).abs() < 8.0, "{near:?}");
        assert!(
            far.bandwidth_gbps < 140.0 && far.latency_us > near.latency_us,
            "{far:?}"
        );
        let other = model::builtin::load("amd-2s").unwrap().unwrap();
        assert!(check_fits(&b, &other, "b.json")
            .unwrap_err()
            .starts_with("b.json: host:"));
    }
}
