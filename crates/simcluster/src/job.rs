//! `hostping job --sim-cluster` (DESIGN 4.7): a job's verdict on a simulated cluster, by the
//! one pipeline a real job's verdict runs (`verdict::pipeline`), over what the simulated
//! cluster can measure ([`Simulated`]). How a job maps onto a cluster (its paths, cables and
//! pairs' cables) is `verdict::job`'s.
//!
//! The evidence is what the mesh measures over the job's hosts (`mesh::run`): each host's own
//! check, the pairs' parts, the switch ports' counters over the probes' window (the probes'
//! and other jobs' traffic, a corrupting cable's errors, a down cable's LinkDowned). Every
//! number is simulated and the report says so.

use std::collections::BTreeSet;

use model::job::{
    CollectiveEvidence, JobEvidence, JobHost, JobPair, JobPort, ProbePhase, ProbeRound,
};
use model::switch_port::SwitchPortCounters;
use verdict::job::{job_cables, job_paths, pair_cables};
use verdict::pipeline::{self, Gathered, Measure, Options, PairsMeasured, Replay, Step};
use verdict::recheck;
use verdict::whatif::{JobTraffic, LinkStates, Observed, WhatIfSettings};

use crate::fault::ClusterFaults;
use crate::mesh::{self, MeshSettings};
use crate::report::{Endpoint, MeshReport, PairReport};
use crate::ClusterError;
use verdict::spec::{Cable, Cluster, RnicPort};

pub use verdict::pipeline::JobRun;

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
    let (nodes, hosts) = job_nodes(cluster, settings);
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
        collectives: None,
    })
}

/// The job's hosts (`settings.nodes`, every host of the cluster by default) in rank order:
/// their names, and the indices of those the cluster has.
fn job_nodes(cluster: &Cluster, settings: &MeshSettings) -> (Vec<String>, Vec<usize>) {
    let nodes: Vec<String> = match &settings.nodes {
        Some(nodes) => nodes.clone(),
        None => cluster.hosts.iter().map(|h| h.name.clone()).collect(),
    };
    let hosts = nodes.iter().filter_map(|n| cluster.host_index(n)).collect();
    (nodes, hosts)
}

/// Added to the seed of a host checked again, so that the recheck is another run than the
/// one that raised the suspicion.
const RECHECK_SEED: u64 = 0x5ec0_c4ec;

/// Rounds of the mesh a job's evidence takes: two, the second half a flap period after the
/// first, so that a flapping cable shows in one of them.
pub const ROUNDS: u32 = 2;

/// What a simulated job's verdict runs beside the evidence.
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    /// Follow-up probes that split what the evidence could not (`verdict::follow_up`).
    pub probe: bool,
    /// Replay this traffic on the fabric and say what explains the job's time
    /// (`verdict::whatif`).
    pub what_if: Option<JobTraffic>,
    /// The job's own collectives, as read from its NCCL Inspector records (DESIGN 4.8):
    /// judged beside the simulated evidence.
    pub collectives: Option<CollectiveEvidence>,
}

/// Gathers the evidence and judges it; then runs the follow-ups and the what-if that
/// `options` ask for, and judges again with what they found (`verdict::pipeline::run`).
pub fn run(
    cluster: &Cluster,
    faults: &ClusterFaults,
    settings: &MeshSettings,
    options: &JobOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<JobRun, ClusterError> {
    let collectives = options.collectives.clone();
    let options = Options {
        probe: options.probe,
        what_if: options
            .what_if
            .as_ref()
            .map(|traffic| pipeline::WhatIfAsked {
                traffic: traffic.clone(),
                // The job really ran under the injected faults: that replay is what was observed.
                observed: Observed::Replay(LinkStates::from_faults(&faults.fabric)),
                settings: WhatIfSettings {
                    seed: settings.seed,
                },
            }),
    };
    let mut simulated = Simulated {
        cluster,
        faults,
        settings,
        progress,
        collectives,
    };
    pipeline::block_on(pipeline::run(&mut simulated, options))
}

/// What a simulated cluster measures for a job's verdict: the mesh over the job's hosts
/// (its hosts' checks, the pairs' parts, the switch ports' counters over the window), the
/// follow-up pairs by the same mesh, and the what-if replayed under the true link states.
/// It reads no switch port now: its counters cover the whole window.
pub struct Simulated<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// What is injected into it.
    pub faults: &'a ClusterFaults,
    /// The mesh's settings; `nodes` are the job's hosts in rank order (all by default).
    pub settings: &'a MeshSettings,
    /// Called with (done, total) as the evidence's mesh runs.
    pub progress: &'a (dyn Fn(usize, usize) + Sync),
    /// The job's own collectives, added to the evidence gathered.
    pub collectives: Option<CollectiveEvidence>,
}

impl Measure for Simulated<'_> {
    type Error = ClusterError;

    fn gather(&mut self) -> Step<'_, Result<Gathered, ClusterError>> {
        // What the job's hosts allow its communicators (DESIGN 4.8's `expected`), from their
        // models, where the records' reader did not say.
        let (_, hosts) = job_nodes(self.cluster, self.settings);
        let models: Vec<&model::HostTopology> = hosts
            .iter()
            .map(|&h| self.cluster.hosts[h].model())
            .collect();
        let allowed = verdict::job::expected_busbw(&models);
        let collectives = self.collectives.clone().map(|mut c| {
            let given = &mut c.expected_busbw_gbs;
            given.across_hosts = given.across_hosts.or(allowed.across_hosts);
            given.within_host = given.within_host.or(allowed.within_host);
            c
        });
        let gathered =
            evidence(self.cluster, self.faults, self.settings, self.progress).map(|evidence| {
                Gathered {
                    evidence: JobEvidence {
                        collectives,
                        ..evidence
                    },
                    follow_ups: Vec::new(),
                }
            });
        Box::pin(std::future::ready(gathered))
    }

    fn placed(&self) -> Result<&Cluster, String> {
        Ok(self.cluster)
    }

    fn measure_pairs(
        &mut self,
        pairs: Vec<(RnicPort, RnicPort)>,
    ) -> Step<'_, Result<PairsMeasured, ClusterError>> {
        Box::pin(std::future::ready(self.probe(pairs)))
    }

    fn recheck<'a>(&'a mut self, hosts: &'a [String]) -> Step<'a, Vec<String>> {
        let outcomes = hosts.iter().map(|h| self.check_again(h)).collect();
        Box::pin(std::future::ready(outcomes))
    }

    fn replay(
        &mut self,
        replay: Replay,
    ) -> Step<'_, Result<(model::job::JobReport, JobEvidence), String>> {
        Box::pin(std::future::ready(Ok(replay.run(self.cluster))))
    }
}

impl Simulated<'_> {
    /// `host` checked again now: a fresh run of its virtual host (its own seed, as a later
    /// check meets other noise), in `verdict::recheck::checked`'s words.
    fn check_again(&self, host: &str) -> String {
        let again = MeshSettings {
            nodes: Some(vec![host.to_string()]),
            pairs: Some(Vec::new()),
            rounds: 1,
            seed: self.settings.seed.wrapping_add(RECHECK_SEED),
            ..self.settings.clone()
        };
        match mesh::run(self.cluster, self.faults, &again, &|_, _| {}) {
            Ok(report) => {
                let check = report.hosts.iter().find(|s| s.host == host);
                recheck::checked("simulated", check.map(|s| &s.report))
            }
            Err(e) => format!("not run: {e}"),
        }
    }

    /// The mesh over `pairs`' hosts, only those pairs, in both phases as the job's own
    /// rounds: a flapping member shows in one of them.
    fn probe(&self, pairs: Vec<(RnicPort, RnicPort)>) -> Result<PairsMeasured, ClusterError> {
        let cluster = self.cluster;
        let hosts: BTreeSet<usize> = pairs.iter().flat_map(|(a, b)| [a.host, b.host]).collect();
        let probe = MeshSettings {
            nodes: Some(
                hosts
                    .iter()
                    .map(|&h| cluster.hosts[h].name.clone())
                    .collect(),
            ),
            pairs: Some(pairs),
            rounds: ROUNDS,
            ..self.settings.clone()
        };
        let measured = mesh::run(cluster, self.faults, &probe, &|_, _| {})?.pairs;
        Ok(PairsMeasured::Measured(
            measured.iter().map(|p| job_pair(cluster, p)).collect(),
        ))
    }
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

/// A mesh pair as the verdict reads it: with the cables it crossed both ways, and its
/// round of the mesh ([`ROUNDS`]). Follow-up pairs are labelled again as such by the
/// pipeline (`verdict::pipeline`), which numbers their rounds for every kind of cluster.
pub(crate) fn job_pair(cluster: &Cluster, p: &PairReport) -> JobPair {
    JobPair {
        parts: p.parts.clone(),
        cables: pair_cables(
            cluster,
            (&p.parts.a.host, &p.parts.a.rnic),
            (&p.parts.b.host, &p.parts.b.rnic),
        ),
        retransmitted_packets: p.retransmitted_packets,
        reason: p.reason.clone(),
        counters_a: None,
        round: Some(ProbeRound {
            phase: ProbePhase::Mesh,
            round: p.round,
            rounds: ROUNDS,
        }),
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
