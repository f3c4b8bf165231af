//! `hostping job --sim-cluster` (DESIGN 4.7): a job's evidence on a simulated cluster, judged
//! by `analyze::job` as a real job's is.
//!
//! The job is its hosts in rank order. Its traffic runs rail by rail, as NCCL runs a
//! rail-optimised cluster's collectives: RNIC r of each host talks to RNIC r of the others,
//! so the job's routes are the routes between its hosts' RNICs of one rail, and its cables
//! those they cross. On each host, each GPU's data goes through its nearest RNIC (the job's
//! paths; the nearest memory node on a host without GPUs).
//!
//! The evidence is what the mesh measures over the job's hosts (`mesh::run`): each host's own
//! check, the pairs' parts, the switch ports' counters over the probes' window (the probes'
//! and other jobs' traffic, a corrupting cable's errors, a down cable's LinkDowned). Every
//! number is simulated and the report says so.

use std::collections::BTreeSet;

use model::job::{
    FollowUp, JobEvidence, JobHost, JobPair, JobPairEnd, JobPath, JobPort, JobReport, NotJudgedItem,
};
use model::switch_port::SwitchPortCounters;
use model::{ComponentClass, ComponentId};

use crate::fault::ClusterFaults;
use crate::follow_up::{self, Plan};
use crate::mesh::{self, MeshSettings};
use crate::report::{Endpoint, MeshReport, PairReport};
use crate::spec::{Cable, Cluster, RnicPort};
use crate::whatif::{self, JobTraffic, LinkStates, Observed, WhatIfSettings};
use crate::ClusterError;

/// Gathers a job's evidence on a simulated cluster: the mesh over its hosts, their checks,
/// the ports' counters. `settings.nodes` are the job's hosts in rank order (all by default).
pub fn evidence(
    cluster: &Cluster,
    faults: &ClusterFaults,
    settings: &MeshSettings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<JobEvidence, ClusterError> {
    // A one-host job has no pair to probe: its evidence is its host's check.
    let one_host = settings.nodes.as_ref().is_some_and(|n| n.len() == 1);
    let job_mesh = MeshSettings {
        rounds: ROUNDS,
        pairs: if one_host { Some(Vec::new()) } else { None },
        ..settings.clone()
    };
    let report = mesh::run(cluster, faults, &job_mesh, progress)?;
    let nodes: Vec<String> = match &settings.nodes {
        Some(nodes) => nodes.clone(),
        None => cluster.hosts.iter().map(|h| h.name.clone()).collect(),
    };
    let hosts: Vec<usize> = nodes.iter().filter_map(|n| cluster.host_index(n)).collect();
    let job_cables = job_cables(cluster, &hosts);
    let job_cable_names: BTreeSet<String> =
        job_cables.iter().map(|&c| cluster.cable_label(c)).collect();
    Ok(JobEvidence {
        job: None,
        hosts: job_hosts(cluster, &hosts, &report, settings.endpoint),
        pairs: report.pairs.iter().map(|p| job_pair(cluster, p)).collect(),
        ports: job_ports(
            cluster,
            &report,
            &job_cables,
            f64::from(ROUNDS) * settings.duration_s,
        ),
        job_cables: job_cable_names.into_iter().collect(),
        nodes,
        what_if: None,
        simulated: true,
        not_judged: Vec::new(),
    })
}

/// Rounds of the mesh a job's evidence takes: two, the second half a flap period after the
/// first, so that a flapping cable shows in one of them.
pub const ROUNDS: u32 = 2;

/// What a simulated job's verdict runs beside the evidence.
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    /// Follow-up probes that split what the evidence could not (`follow_up`).
    pub probe: bool,
    /// Replay this traffic on the fabric and say what explains the job's time (`whatif`).
    pub what_if: Option<JobTraffic>,
}

/// A simulated job judged, with the evidence its verdict was drawn from.
pub struct JobRun {
    /// The verdict.
    pub report: JobReport,
    /// The evidence, follow-ups' pairs and the what-if included.
    pub evidence: JobEvidence,
}

/// Gathers the evidence and judges it; then runs the follow-ups and the what-if that
/// `options` ask for, and judges again with what they found.
pub fn run(
    cluster: &Cluster,
    faults: &ClusterFaults,
    settings: &MeshSettings,
    options: &JobOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<JobRun, ClusterError> {
    let mut evidence = evidence(cluster, faults, settings, progress)?;
    let mut report = analyze::job::judge(&evidence);
    if options.probe {
        report = run_follow_ups(cluster, faults, settings, &mut evidence, report)?;
    }
    let Some(traffic) = &options.what_if else {
        return Ok(JobRun { report, evidence });
    };
    // The job really ran under the injected faults: that replay is what was observed.
    let observed = Observed::Replay(LinkStates::from_faults(&faults.fabric));
    let report = judge_with_what_if(
        cluster,
        traffic,
        observed,
        &mut evidence,
        report,
        &WhatIfSettings {
            seed: settings.seed,
        },
    );
    Ok(JobRun { report, evidence })
}

/// Probes what separates the candidates of `report`'s culprits ([`follow_up::plan`]), adds
/// the pairs to `evidence`, and judges again. Returns the new report, with what was run and why.
fn run_follow_ups(
    cluster: &Cluster,
    faults: &ClusterFaults,
    settings: &MeshSettings,
    evidence: &mut JobEvidence,
    report: JobReport,
) -> Result<JobReport, ClusterError> {
    let Plan {
        pairs: planned,
        not_planned: mut follow_ups,
    } = follow_up::plan(cluster, &report, &evidence.nodes);
    if planned.is_empty() {
        let mut report = report;
        report.follow_ups = follow_ups;
        return Ok(report);
    }
    let hosts: BTreeSet<usize> = planned
        .iter()
        .flat_map(|(a, b, _)| [a.host, b.host])
        .collect();
    let probe = MeshSettings {
        nodes: Some(
            hosts
                .iter()
                .map(|&h| cluster.hosts[h].name.clone())
                .collect(),
        ),
        pairs: Some(planned.iter().map(|(a, b, _)| (*a, *b)).collect()),
        rounds: ROUNDS,
        ..settings.clone()
    };
    // Both phases, as the job's own rounds: a flapping member shows in one of them.
    let measured = mesh::run(cluster, faults, &probe, &|_, _| {})?.pairs;
    for (k, pair) in measured.iter().enumerate() {
        let (_, _, why) = &planned[k % planned.len()];
        follow_ups.push(FollowUp {
            kind: "pair".to_string(),
            target: format!(
                "{}/{}<->{}/{}",
                pair.a.host, pair.a.rnic, pair.b.host, pair.b.rnic
            ),
            why: why.clone(),
            outcome: follow_up::outcome(pair.network_status, pair.reason.as_deref()),
        });
    }
    evidence
        .pairs
        .extend(measured.iter().map(|p| job_pair(cluster, p)));
    let mut again = analyze::job::judge(evidence);
    again.follow_ups = follow_ups;
    Ok(again)
}

/// Replays `traffic` over the job's hosts (`evidence.nodes` in rank order, hosts of
/// `cluster`) under the link states `report`'s culprits name, compares with what was
/// `observed`, and judges `evidence` again with the what-if in it; the follow-ups `report`
/// ran stay in it. A what-if that cannot run is listed in `not_judged` and the verdict
/// stands. The simulated job ([`run`]) and the collector's verdict on real hosts both end
/// so.
pub fn judge_with_what_if(
    cluster: &Cluster,
    traffic: &JobTraffic,
    observed: Observed,
    evidence: &mut JobEvidence,
    mut report: JobReport,
    settings: &WhatIfSettings,
) -> JobReport {
    let what_if = placement(cluster, &evidence.nodes).and_then(|placement| {
        let measured = LinkStates::from_culprits(cluster, &report.culprits, evidence)?;
        whatif::what_if(cluster, &placement, traffic, observed, &measured, settings)
    });
    let follow_ups = std::mem::take(&mut report.follow_ups);
    match what_if {
        Ok(w) => {
            evidence.what_if = Some(w);
            report = analyze::job::judge(evidence);
        }
        Err(e) => report.not_judged.push(NotJudgedItem {
            what: "what-if".to_string(),
            why: e.to_string(),
        }),
    }
    report.follow_ups = follow_ups;
    report
}

/// The job's hosts as indices of `cluster`, in rank order; a host the cluster does not hold
/// is an error rather than a rank left out of the replay.
fn placement(cluster: &Cluster, nodes: &[String]) -> Result<Vec<usize>, ClusterError> {
    nodes
        .iter()
        .map(|n| {
            cluster.host_index(n).ok_or_else(|| {
                ClusterError::Fabric(format!(
                    "what-if on cluster `{}`: the job's host `{n}` is not on it",
                    cluster.name
                ))
            })
        })
        .collect()
}

/// The cables the job's routes cross on the healthy fabric: between every two of its hosts'
/// RNICs of one rail, both ways, with the RNICs' own cables.
pub fn job_cables(cluster: &Cluster, hosts: &[usize]) -> BTreeSet<Cable> {
    let cabled: std::collections::HashSet<RnicPort> = cluster.rnic_ports().collect();
    let mut cables = BTreeSet::new();
    for (i, &a) in hosts.iter().enumerate() {
        for &b in &hosts[i + 1..] {
            let rails = cluster.hosts[a]
                .rnics
                .len()
                .min(cluster.hosts[b].rnics.len());
            for rnic in 0..rails {
                let (pa, pb) = (RnicPort { host: a, rnic }, RnicPort { host: b, rnic });
                if cabled.contains(&pa) && cabled.contains(&pb) {
                    cables.extend(cluster.cables_between(pa, pb));
                    cables.extend(cluster.cables_between(pb, pa));
                }
            }
        }
    }
    cables
}

/// Each job host's check and the paths the job's data crosses on it.
fn job_hosts(
    cluster: &Cluster,
    hosts: &[usize],
    report: &MeshReport,
    endpoint: Endpoint,
) -> Vec<JobHost> {
    hosts
        .iter()
        .map(|&h| {
            let host = &cluster.hosts[h];
            JobHost {
                host: host.name.clone(),
                report: report
                    .hosts
                    .iter()
                    .find(|s| s.host == host.name)
                    .map(|s| s.report.clone()),
                job_paths: job_paths(host.model(), &host.rnics, endpoint),
                fleet_abnormal: Vec::new(),
            }
        })
        .collect()
}

/// On a host with GPUs, each GPU's data goes through the RNIC with the shortest path to it
/// (as NCCL picks a GPU's NIC by PCIe distance); otherwise each RNIC's data lives in its
/// nearest memory node.
pub fn job_paths(
    model: &model::HostTopology,
    rnics: &[ComponentId],
    endpoint: Endpoint,
) -> Vec<JobPath> {
    let gpus: Vec<&ComponentId> = model
        .components()
        .iter()
        .filter(|c| c.class() == ComponentClass::Gpu)
        .map(|c| &c.id)
        .collect();
    let path = |rnic: &ComponentId, to: &ComponentId| {
        model
            .paths_of(rnic)
            .find(|p| &p.endpoint == to)
            .map(|p| JobPath {
                rnic: rnic.to_string(),
                endpoint: to.to_string(),
                links: p.links.clone(),
            })
    };
    if endpoint == Endpoint::Gpu && !gpus.is_empty() {
        let mut out: Vec<JobPath> = gpus
            .iter()
            .filter_map(|&gpu| {
                rnics
                    .iter()
                    .filter_map(|r| path(r, gpu))
                    .min_by_key(|p| p.links.len())
            })
            .collect();
        out.sort_by(|a, b| (&a.rnic, &a.endpoint).cmp(&(&b.rnic, &b.endpoint)));
        return out;
    }
    rnics
        .iter()
        .filter_map(|r| path(r, &mesh::nearest_endpoint(model, r, Endpoint::Memory)))
        .collect()
}

/// A mesh pair as the verdict reads it: with the cables it crossed both ways.
pub(crate) fn job_pair(cluster: &Cluster, p: &PairReport) -> JobPair {
    let port_of = |host: &str, rnic: &str| {
        let h = cluster.host_index(host)?;
        let r = cluster.hosts[h]
            .rnics
            .iter()
            .position(|x| x.as_str() == rnic)?;
        Some(RnicPort { host: h, rnic: r })
    };
    let mut cables: BTreeSet<String> = BTreeSet::new();
    if let (Some(a), Some(b)) = (port_of(&p.a.host, &p.a.rnic), port_of(&p.b.host, &p.b.rnic)) {
        for (x, y) in [(a, b), (b, a)] {
            cables.extend(
                cluster
                    .cables_between(x, y)
                    .into_iter()
                    .map(|c| cluster.cable_label(c)),
            );
        }
    }
    JobPair {
        a: JobPairEnd {
            host: p.a.host.clone(),
            rnic: p.a.rnic.clone(),
        },
        b: JobPairEnd {
            host: p.b.host.clone(),
            rnic: p.b.rnic.clone(),
        },
        latency_us: p.latency_us,
        bandwidth_gbps: p.bandwidth_gbps,
        host_a_us: p.host_a_us,
        host_b_us: p.host_b_us,
        network_us: p.network_us,
        route: p.route.clone(),
        status: p.status,
        host_a_status: p.host_a_status,
        host_b_status: p.host_b_status,
        network_status: p.network_status,
        endpoint_a: p.endpoint_a.clone(),
        endpoint_b: p.endpoint_b.clone(),
        cables: cables.into_iter().collect(),
        retransmitted_packets: p.retransmitted_packets,
        reason: p.reason.clone(),
        counters_a: None,
    }
}

/// Every port of the job's cables, and every other port that counted something, with its
/// counters over the mesh's window. A simulated run has no earlier window: `before` is
/// `None`, and the ports off the job's routes are the only reference.
fn job_ports(
    cluster: &Cluster,
    report: &MeshReport,
    job_cables: &BTreeSet<Cable>,
    duration_s: f64,
) -> Vec<JobPort> {
    let topology = &cluster.fabric.topology;
    let mut counters = vec![None; topology.num_ports()];
    for port in &report.ports {
        if let Ok(p) = cluster.parse_port(&port.port) {
            counters[topology.port_index(p) as usize] = Some(port.counters);
        }
    }
    let on_route: BTreeSet<u32> = job_cables
        .iter()
        .flat_map(|&c| cluster.cable_ports(c))
        .collect();
    (0..topology.num_ports() as u32)
        .filter(|i| on_route.contains(i) || counters[*i as usize].is_some())
        .map(|i| {
            let port = topology.port_ref(i);
            JobPort {
                port: cluster.port_label(port),
                cable: cluster.cable_label(cluster.cable_at(port)),
                on_job_route: on_route.contains(&i),
                during: counters[i as usize].unwrap_or(SwitchPortCounters::default()),
                during_s: duration_s,
                before: None,
                before_s: 0.0,
                read_now_s: 0.0,
            }
        })
        .collect()
}
