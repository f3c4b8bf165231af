//! Helpers shared by the integration tests: build a virtual host from fault strings and
//! probe it through `probe::run`, as the binary does.

#![allow(dead_code)]

use model::{builtin, ComponentId, HostTopology, LinkKind, Mode, Path, ProbeRun, Turnaround};
use probe::{LatencySpec, Plan, RunSpec};
use vhost::{Fault, VhostConfig, VirtualHost};

pub fn host(name: &str) -> HostTopology {
    builtin::load(name).expect("built-in").expect("parses")
}

pub fn vhost(host: &HostTopology, faults: &[&str], config: VhostConfig) -> VirtualHost {
    let faults = faults
        .iter()
        .map(|f| Fault::parse(f, host).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    VirtualHost::new(host.clone(), faults, config)
}

/// The latency test of Hostping 4.1.1 with `iterations` timed messages per size.
pub fn spec(iterations: u32) -> RunSpec {
    RunSpec {
        latency: LatencySpec {
            iterations,
            ..Default::default()
        },
        stream: None,
    }
}

pub fn run(vh: &mut VirtualHost, plan: Plan, spec: &RunSpec) -> ProbeRun {
    let host = vh.topology().clone();
    let paths = probe::plan(&host, plan);
    probe::run(vh, &host, Mode::Idle, &paths, spec, &mut |_, _| {})
}

/// A full-mesh run of `name` with `faults`, default noise, seed 1.
pub fn mesh(name: &str, faults: &[&str], iterations: u32) -> ProbeRun {
    let h = host(name);
    let mut vh = vhost(
        &h,
        faults,
        VhostConfig {
            seed: 1,
            ..Default::default()
        },
    );
    run(&mut vh, Plan::FullMesh, &spec(iterations))
}

pub fn bw(run: &ProbeRun, rnic: &str, endpoint: &str) -> f64 {
    measured(run, rnic, endpoint).bandwidth_gbps
}

/// Small-message median, us.
pub fn small_us(run: &ProbeRun, rnic: &str, endpoint: &str) -> f64 {
    measured(run, rnic, endpoint).small.p50_us
}

pub fn measured<'a>(run: &'a ProbeRun, rnic: &str, endpoint: &str) -> &'a model::PathMeasurement {
    let probe = run
        .probe(&ComponentId::from(rnic), &ComponentId::from(endpoint))
        .expect("path in the plan");
    probe
        .measurement()
        .unwrap_or_else(|| panic!("{rnic} -> {endpoint} failed: {:?}", probe.outcome))
}

pub fn within(value: f64, want: f64, rel: f64) -> bool {
    (value - want).abs() <= rel * want.abs()
}

/// GDR distance of Hostping 3.2.2 (Fig. 2): 1 one switch, 2 several switches, 3 through
/// the root complex, 4 across the socket link; `None` for a memory node.
pub fn gdr_distance(host: &HostTopology, path: &Path) -> Option<u8> {
    if !path.endpoint.as_str().starts_with("gpu") {
        return None;
    }
    let crosses_sockets = path
        .links
        .iter()
        .any(|l| host.link(l).map(|l| l.kind) == Some(LinkKind::InterSocket));
    Some(match &path.turnaround {
        Turnaround::Switch(_) if path.links.len() == 2 => 1,
        Turnaround::Switch(_) => 2,
        Turnaround::RootComplex(_) if crosses_sockets => 4,
        Turnaround::RootComplex(_) => 3,
    })
}

/// The paths whose bandwidth differs from `base` by more than `rel`, as `rnic->endpoint`.
pub fn moved(base: &ProbeRun, other: &ProbeRun, rel: f64) -> Vec<String> {
    let mut out = Vec::new();
    for p in &base.paths {
        let (r, e) = (p.rnic.as_str(), p.endpoint.as_str());
        if !within(bw(other, r, e), bw(base, r, e), rel) {
            out.push(format!("{r}->{e}"));
        }
    }
    out.sort();
    out
}

pub fn names(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}
