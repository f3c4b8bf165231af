//! The reference of a host probed without a baseline file: paths judged relative to each
//! other and to the RNIC's line rate, within one run. Hostping 4.3 judges a busy RNIC's paths
//! relatively; a real host with no recorded baseline is judged the same way for every path,
//! so a path below its line rate, or below paths that should match it, stands out.

use model::{
    Baseline, BaselinePath, ComponentClass, ComponentId, HostTopology, LinkKind, Path, ProbeRun,
};

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
        // A capacity the host does not report (a VM's virtual bridge) is no bound to judge by.
        .filter(|l| l.capacity_known)
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
        // Made from the very run it judges, never written to a file nor compared with a
        // check's settings (only a baseline file is, `check::record`).
        measured_with: Default::default(),
    }
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
}
