//! `hostping mesh`: RNIC-to-RNIC probes between hosts, each pair's time split into its two
//! hosts' own paths and the network (DESIGN 4.6). On a simulated cluster the work is in the
//! `simcluster` crate; on real hosts (`--collector`) the collector's (`POST /api/mesh`, which
//! asks the agents), and this module only asks and prints ([`real`]).

mod real;

use std::fmt::Write as _;

use anyhow::{bail, Result};
use simcluster::mesh::{self, MeshSettings};
use simcluster::report::{MeshReport, PairReport, PartStatus};
use simcluster::spec::CabledFabric;
use simcluster::{Cluster, ClusterFaults, Endpoint};

use crate::cli::{MeshArgs, MeshEndpoint};
use crate::fabric_cmd::topology_input;
use crate::output::{print_to, Outcome};
use crate::progress;
use views::Style;

/// Runs `hostping mesh`.
pub fn run(args: MeshArgs) -> Result<Outcome> {
    let Some(sim_cluster) = &args.sim_cluster else {
        return real::run(&args);
    };
    let cluster = Cluster::resolve(sim_cluster, &|path, routes| Ok(read_fabric(path, routes)?))?;
    let faults = ClusterFaults::parse(&args.inject, &cluster)?;
    let settings = MeshSettings {
        nodes: args.nodes.map(|n| n.0),
        endpoint: match args.endpoint {
            MeshEndpoint::Gpu => Endpoint::Gpu,
            MeshEndpoint::Memory => Endpoint::Memory,
        },
        duration_s: args.duration,
        rate_same_leaf: args.rate_same_leaf,
        rate_cross_leaf: args.rate_cross_leaf,
        seed: args.seed,
        noise: args.noise,
        ..MeshSettings::default()
    };
    let bar = progress::counted(0, "mesh", "pairs simulated");
    let report = mesh::run(&cluster, &faults, &settings, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    print_to(args.output.as_deref(), args.format, &report, table)?;
    Ok(match report.exit_code() {
        0 => Outcome::Healthy,
        3 => Outcome::Inconclusive,
        _ => Outcome::Findings,
    })
}

/// A cluster file's `[fabric] topology`: an ibnetdiscover file read as `fabric sim
/// --topology FILE [--routes DUMP]` reads it, each link at the rate the file gives.
pub(crate) fn read_fabric(
    path: &std::path::Path,
    routes: Option<&std::path::Path>,
) -> Result<CabledFabric> {
    let arg = path.to_string_lossy();
    let input = topology_input(&arg, None, routes)?;
    for note in &input.notes {
        eprintln!("hostping: {note}");
    }
    let Some(origin) = input.fabric.clone() else {
        bail!("{arg} is a tree's parameters, not a fabric's ibnetdiscover file");
    };
    let (topology, link_gbps, _) = input.with_rates(None)?;
    Ok(CabledFabric {
        topology,
        link_gbps,
        switch_names: origin.switches,
        port_numbers: origin.ports,
        node_cas: origin.hosts,
    })
}

/// The mesh for people: a summary, the pairs that are not normal with why, then every pair.
fn table(report: &MeshReport, style: Style) -> String {
    let mut out = String::new();
    let count = |s: PartStatus| report.pairs.iter().filter(|p| p.parts.status == s).count();
    let (abnormal, failed, uncertain) = (
        count(PartStatus::Abnormal),
        count(PartStatus::Failed),
        count(PartStatus::Uncertain),
    );
    let _ = writeln!(
        out,
        "{} {} hosts, {} pairs over {} cables (SIMULATED){}",
        style.bold(&format!("mesh of {}:", report.cluster)),
        report.hosts.len(),
        report.pairs.len(),
        report.coverage.cables,
        if report.faults.is_empty() {
            String::new()
        } else {
            format!(", injected: {}", report.faults.join(" "))
        }
    );
    let verdict = if abnormal + failed > 0 {
        style.red(&format!("{abnormal} abnormal, {failed} failed"))
    } else if uncertain > 0 {
        style.yellow(&format!("{uncertain} not judged"))
    } else {
        style.green("every pair normal")
    };
    let _ = writeln!(out, "{verdict}");
    let by_part = |part: fn(&PairReport) -> PartStatus| {
        report
            .pairs
            .iter()
            .filter(|p| part(p) == PartStatus::Abnormal)
            .count()
    };
    if abnormal > 0 {
        let _ = writeln!(
            out,
            "abnormal parts: network in {} pairs, a host's own path in {} pairs",
            by_part(|p| p.parts.network_status),
            report
                .pairs
                .iter()
                .filter(|p| p.parts.host_a_status == PartStatus::Abnormal
                    || p.parts.host_b_status == PartStatus::Abnormal)
                .count()
        );
    }
    for host in report.hosts.iter().filter(|h| !h.healthy) {
        let causes = if host.causes.is_empty() {
            "not judged".to_string()
        } else {
            host.causes.join(", ")
        };
        let _ = writeln!(out, "  host {}: {}", host.host, causes);
    }
    for port in &report.ports {
        let c = &port.counters;
        if c.symbol_errors + c.rcv_errors + c.link_downed > 0 {
            let _ = writeln!(
                out,
                "  switch port {}: {} symbol errors, {} receive errors, link downed {} times",
                port.port, c.symbol_errors, c.rcv_errors, c.link_downed
            );
        }
    }
    for group in &report.coverage.not_identifiable {
        let _ = writeln!(
            out,
            "  {} cables crossed by the same pairs, a bad one not identifiable: {}",
            group.len(),
            group.join(" ")
        );
    }
    let _ = writeln!(
        out,
        "budget: {} latency probes and {:.1} MB over {} s ({}/s same-leaf, {}/s cross-leaf per target)",
        report.budget.latency_probes,
        report.budget.bytes as f64 / 1e6,
        report.budget.duration_s,
        report.budget.rate_same_leaf,
        report.budget.rate_cross_leaf,
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:<20} {:>8} {:>7} {:>8} {:>7} {:>7}  {:<9} why",
        "A", "B", "lat us", "host A", "network", "host B", "Gb/s", "status"
    );
    let mut pairs: Vec<&PairReport> = report.pairs.iter().collect();
    // Pairs that are not normal first, then in host order.
    pairs.sort_by_key(|p| p.parts.status == PartStatus::Normal);
    for p in pairs {
        let cell = |v: Option<f64>, part: PartStatus, digits: usize| {
            let text = v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
            match part {
                PartStatus::Abnormal => style.red(&format!("{text:>7}")),
                _ => format!("{text:>7}"),
            }
        };
        let status = match p.parts.status {
            PartStatus::Normal => style.green("normal   "),
            PartStatus::Abnormal => style.red("abnormal "),
            PartStatus::Uncertain => style.yellow("uncertain"),
            PartStatus::Failed => style.red("failed   "),
        };
        let (a, b) = (
            format!("{}/{}", p.parts.a.host, p.parts.a.rnic),
            format!("{}/{}", p.parts.b.host, p.parts.b.rnic),
        );
        let _ = writeln!(
            out,
            "{a:<20} {b:<20} {:>8} {}  {} {} {:>7}  {} {}",
            p.parts
                .latency_us
                .map_or("-".to_string(), |v| format!("{v:.2}")),
            cell(p.parts.host_a_us, p.parts.host_a_status, 2),
            cell(p.parts.network_us, p.parts.network_status, 2),
            cell(p.parts.host_b_us, p.parts.host_b_status, 2),
            p.parts
                .bandwidth_gbps
                .map_or("-".to_string(), |v| format!("{v:.1}")),
            status,
            style.gray(p.reason.as_deref().unwrap_or("")),
        );
    }
    out
}
