//! Building a baseline from healthy probe runs (Hostping 4.3: "obtained via loopback tests
//! on a batch of idle hosts with the same devices and configurations"): per path, the median
//! over runs, which one bad run cannot move.

use model::{
    Baseline, BaselinePath, ComponentClass, ComponentId, HostTopology, LinkKind, Path, ProbeRun,
};
use probe::{median, plan, LatencySpec, Plan, RunSpec};
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
            // A plan may leave paths out (busy mode), and an engine may be unable to probe
            // a path by design (a GPU without a driver): such paths get no baseline and
            // are judged "no baseline". Any other failure in every run is an error.
            let probes = runs
                .iter()
                .filter_map(|r| r.probe(&path.rnic, &path.endpoint));
            if probes.clone().all(|p| match &p.outcome {
                model::PathOutcome::Failed { error } => crate::pipeline::is_unavailable(error),
                model::PathOutcome::Measured(_) => false,
            }) {
                continue;
            }
            return Err(MissingPath {
                rnic: path.rnic.to_string(),
                endpoint: path.endpoint.to_string(),
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
pub fn record<E: probe::ProbeEngine>(
    engine: &mut E,
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

/// Paths whose healthy figures should be alike: same affinity, same endpoint kind, same
/// turn (switch or root complex), same number of socket crossings, and for a software RNIC
/// (rxe, siw: bound by the CPU, not a line rate) the same RNIC.
fn peer_class(host: &HostTopology, path: &Path, software: bool) -> impl PartialEq {
    let crossings = path
        .links
        .iter()
        .filter(|l| {
            host.link(l)
                .is_some_and(|l| l.kind == LinkKind::InterSocket)
        })
        .count();
    let endpoint = host.component(&path.endpoint).map(|c| c.class());
    (
        path.affinitive,
        endpoint == Some(ComponentClass::Gpu),
        path.p2p_through_cpu,
        crossings,
        software.then(|| path.rnic.clone()),
    )
}

/// What a hardware RNIC should reach on an affinitive path: its line rate, or less where a
/// link of the path is narrower (Hostping 3.2: affinitive paths run at line rate).
fn rate_bound(host: &HostTopology, path: &Path) -> Option<f64> {
    let line = host.component(&path.rnic)?.rnic()?.line_rate_gbps;
    let narrowest = path
        .links
        .iter()
        .filter_map(|l| host.link(l))
        .map(|l| l.capacity_gbps / l.kind.loopback_load())
        .fold(f64::INFINITY, f64::min);
    Some(line.min(narrowest))
}

/// The reference of a real host probed without a baseline file (issue: "paths judged
/// relative to each other and to the RNIC's rate"): per measured path, the bandwidth is the
/// RNIC's line rate on an affinitive path of a hardware RNIC, else the best bandwidth among
/// its peers in this run; the latency is the smallest among its peers. So a path more than
/// Abnormal_th below line rate, or below or slower than paths that should match it, stands
/// out, while a latency-bound GPU path is compared only with its like.
pub fn relative(host: &HostTopology, run: &ProbeRun, software: &[ComponentId]) -> Baseline {
    let measured: Vec<(&Path, &model::PathMeasurement)> = run
        .paths
        .iter()
        .filter_map(|p| Some((host.path(&p.rnic, &p.endpoint)?, p.measurement()?)))
        .collect();
    let class = |p: &Path| peer_class(host, p, software.contains(&p.rnic));
    let paths = measured
        .iter()
        .map(|(path, _)| {
            let peers = || {
                measured
                    .iter()
                    .filter(|(q, _)| class(q) == class(path))
                    .map(|(_, m)| *m)
            };
            let best = peers().map(|m| m.bandwidth_gbps).fold(0.0, f64::max);
            let fastest = peers()
                .map(|m| m.small.p50_us)
                .fold(f64::INFINITY, f64::min);
            let hardware_line_rate = (!software.contains(&path.rnic) && path.affinitive)
                .then(|| rate_bound(host, path))
                .flatten();
            BaselinePath {
                rnic: path.rnic.clone(),
                endpoint: path.endpoint.clone(),
                latency_us: fastest,
                bandwidth_gbps: hardware_line_rate.unwrap_or(best),
            }
        })
        .collect();
    Baseline {
        host: host.name.clone(),
        provenance: run.provenance,
        runs: 1,
        paths,
    }
}

/// Checks that a baseline fits a host: same model name, and no path the host lacks. A host
/// path missing from the baseline (one that could not be probed when it was recorded) is
/// allowed: it is judged "no baseline".
pub fn check_fits(baseline: &Baseline, host: &HostTopology, source: &str) -> Result<(), String> {
    if baseline.host != host.name {
        return Err(format!(
            "{source}: host: baseline was recorded on `{}`, not `{}`",
            baseline.host, host.name
        ));
    }
    let unknown: Vec<String> = baseline
        .paths
        .iter()
        .filter(|p| host.path(&p.rnic, &p.endpoint).is_none())
        .map(|p| format!("{}->{}", p.rnic, p.endpoint))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "{source}: paths: {} has no path {}",
            host.name,
            unknown.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of dgx-a100 where every path has the given bandwidth and latency.
    fn run_with(host: &HostTopology, f: impl Fn(&Path) -> (f64, f64)) -> ProbeRun {
        let stats = |us: f64| model::LatencyStats {
            samples: 10,
            min_us: us,
            p50_us: us,
            p90_us: us,
            p99_us: us,
            max_us: us,
        };
        ProbeRun {
            host: host.name.clone(),
            provenance: model::Provenance::Measured,
            mode: model::Mode::Idle,
            started_ns: 0,
            finished_ns: 1,
            paths: host
                .paths()
                .iter()
                .map(|p| {
                    let (bw, lat) = f(p);
                    model::PathProbe {
                        rnic: p.rnic.clone(),
                        endpoint: p.endpoint.clone(),
                        started_ns: 0,
                        outcome: model::PathOutcome::Measured(model::PathMeasurement {
                            op: model::Op::Write,
                            small_bytes: 1,
                            large_bytes: 131072,
                            small: stats(lat),
                            large: stats(lat + 1048.576 / bw),
                            bandwidth_gbps: bw,
                            verified_bytes: Some(131072),
                        }),
                        stream: None,
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn relative_reference_is_line_rate_for_affinitive_paths_and_peers_otherwise() {
        let host = model::builtin::load("dgx-a100").unwrap().unwrap();
        let run = run_with(&host, |p| match (p.affinitive, p.rnic.as_str()) {
            (true, _) => (190.0, 2.0),
            (false, "rnic3") => (100.0, 4.0),
            (false, _) => (120.0, 3.0),
        });
        let b = relative(&host, &run, &[]);
        assert_eq!(b.paths.len(), 40);
        assert_eq!(b.provenance, model::Provenance::Measured);
        let near = b.path(&"rnic0".into(), &"gpu0".into()).unwrap();
        assert_eq!(
            (near.bandwidth_gbps, near.latency_us),
            (200.0, 2.0),
            "line rate"
        );
        // rnic3->gpu0 crosses the socket link: its peers are the other cross-socket GDR
        // paths, the best of which (rnic0/rnic1 -> gpu4..7) reach 120.
        let far = b.path(&"rnic3".into(), &"gpu0".into()).unwrap();
        assert_eq!((far.bandwidth_gbps, far.latency_us), (120.0, 3.0));
    }

    #[test]
    fn a_software_rnic_is_judged_against_its_own_best_path_not_its_rate() {
        let host = model::builtin::load("single-socket").unwrap().unwrap();
        let run = run_with(&host, |p| {
            if p.endpoint.as_str() == "mem0" {
                (0.35, 40.0)
            } else {
                (0.30, 45.0)
            }
        });
        let soft: Vec<ComponentId> = vec!["rnic0".into(), "rnic1".into()];
        let b = relative(&host, &run, &soft);
        let mem = b.path(&"rnic0".into(), &"mem0".into()).unwrap();
        assert_eq!(mem.bandwidth_gbps, 0.35, "not the 200 Gb/s line rate");
        let hard = relative(&host, &run, &[]);
        assert_eq!(
            hard.path(&"rnic0".into(), &"mem0".into())
                .unwrap()
                .bandwidth_gbps,
            200.0
        );
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
