//! `hostping mesh` on a simulated cluster (DESIGN 4.6): every chosen pair's time split into
//! host A's own path, host B's, and the network between them.
//!
//! - **Host parts.** Each host runs a check of its own (the virtual host with its faults, the
//!   analyzer against its model's simulated baseline: DESIGN 4.3). An RNIC-to-RNIC write
//!   crosses each host's path once, from the RNIC to the endpoint the data lives in; the
//!   loopback crosses it twice (Hostping 4.1.1, Fig. 7), so a host part is half the loopback
//!   latency of that RNIC and endpoint, and its bandwidth the loopback's.
//! - **Network part.** The packet simulator's probes between the two RNICs' leaf ports
//!   (`network`), judged against the same probe on the healthy fabric for pairs as many hops
//!   apart.
//! - **The pair.** Latency is the sum of the three parts, bandwidth the least of them (the
//!   slowest part bounds a stream). A part is abnormal past Abnormal_th (Hostping 5: 20 %):
//!   the network when its latency is that far above its healthy value or the pair's bandwidth
//!   that far below what its two host paths and the healthy network allow.
//! - **Budget.** R-Pingmesh's rates (10 probes a second to each same-leaf target, 1 to each
//!   cross-leaf one) over the mesh's duration say how many latency probes each pair gets;
//!   pairs are probed in turn over that time, which is what a flapping cable's phase depends
//!   on.

use model::pair::{HostPart, NetworkPart};
use model::switch_port::SwitchPortCounters;
use model::{BaselineKind, ComponentId, PathStatus, Report, Thresholds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vhost::{VhostConfig, VirtualHost};

use crate::fault::ClusterFaults;
use crate::network::{FaultedFabric, NetworkMeasurement, Unreachable};
use crate::report::{
    Budget, Coverage, Endpoint, HostSummary, MeshReport, PairEnd, PairParts, PairReport,
    PartStatus, PortReport,
};
use crate::ClusterError;
use verdict::job::nearest_endpoint;
use verdict::pairs;
use verdict::spec::{Cluster, RnicPort};

/// How a mesh runs.
#[derive(Clone, Debug)]
pub struct MeshSettings {
    /// Hosts to probe, by name; all of them when `None`.
    pub nodes: Option<Vec<String>>,
    /// Where the data lives.
    pub endpoint: Endpoint,
    /// Time the probes are spread over, seconds.
    pub duration_s: f64,
    /// Latency probes a second to each same-leaf target (R-Pingmesh: 10).
    pub rate_same_leaf: f64,
    /// Latency probes a second to each cross-leaf target (R-Pingmesh: 1).
    pub rate_cross_leaf: f64,
    /// When the first pair is probed, seconds into the run: a later round of the same pairs
    /// meets a flapping cable in another phase.
    pub start_s: f64,
    /// Rounds of the same pairs, each [`FABRIC_FLAP_HALF_PERIOD_S`] after the one before
    /// ends, as a continuous mesh meets a flapping cable in both its phases. The hosts are
    /// checked once; the ports count over every round.
    pub rounds: u32,
    /// Pairs to probe in place of the cover's choice (a job verdict's follow-up probes);
    /// their hosts must be among `nodes`. With pairs given, one host is a mesh too (a
    /// one-host job: its check and no pair).
    pub pairs: Option<Vec<(RnicPort, RnicPort)>>,
    /// Seed of every random choice (host noise, background, losses, flap phase).
    pub seed: u64,
    /// Relative noise of the virtual hosts' measurements.
    pub noise: f64,
    /// Worker threads for the network simulations.
    pub threads: usize,
}

impl Default for MeshSettings {
    fn default() -> Self {
        MeshSettings {
            nodes: None,
            endpoint: Endpoint::Gpu,
            duration_s: 10.0,
            rate_same_leaf: 10.0,
            rate_cross_leaf: 1.0,
            start_s: 0.0,
            rounds: 1,
            pairs: None,
            seed: 1,
            noise: VhostConfig::default().noise,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Half-period of a flapping cable's square wave: a port that bounces every second.
pub const FABRIC_FLAP_HALF_PERIOD_S: f64 = 1.0;

/// Runs the mesh on a simulated cluster. `progress(done, total)` is called as pairs finish.
pub fn run(
    cluster: &Cluster,
    faults: &ClusterFaults,
    settings: &MeshSettings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<MeshReport, ClusterError> {
    let hosts = chosen_hosts(cluster, settings.nodes.as_deref())?;
    if hosts.len() < 2 && settings.pairs.is_none() {
        return Err(ClusterError::TooFewHosts(hosts.len()));
    }
    // One simulated baseline per host model, as `hostping check --sim MODEL` records it.
    let check_settings = check::pipeline::CheckSettings::default();
    let mut baselines: Vec<(String, model::Baseline)> = Vec::new();
    for &h in &hosts {
        let model = cluster.hosts[h].model();
        if !baselines.iter().any(|(name, _)| *name == model.name) {
            let runs = check::record::DEFAULT_RUNS;
            let recorded = check::record::simulated(
                model,
                runs,
                settings.seed,
                &check_settings.latency,
                settings.noise,
            );
            baselines.push((model.name.clone(), recorded));
        }
    }
    // Each host's check has a seed of its own: on several workers, the same reports.
    let checks: Vec<Report> = in_parallel(&hosts, settings.threads, &|_, _| {}, |&h| {
        let model = cluster.hosts[h].model();
        let baseline = &baselines
            .iter()
            .find(|(name, _)| *name == model.name)
            .expect("recorded above")
            .1;
        check_host(cluster, faults, h, baseline, &check_settings, settings)
    });
    let selection = match &settings.pairs {
        Some(chosen) => pairs::Selection {
            pairs: chosen.clone(),
            cables: 0,
            not_identifiable: Vec::new(),
        },
        None => pairs::select(cluster, &hosts),
    };
    // Other jobs run off the job's hosts; a mesh of the whole fleet is no job, and they run
    // on every host but the pair probed.
    let job: &[usize] = if settings.nodes.is_some() {
        &hosts
    } else {
        &[]
    };
    let fabric = FaultedFabric::new(cluster, &faults.fabric, job)?;
    let healthy = FaultedFabric::healthy(cluster);
    let flap_offset_s = ChaCha8Rng::seed_from_u64(settings.seed ^ 0xf1a9).gen_range(0.0..2.0)
        * FABRIC_FLAP_HALF_PERIOD_S;

    let per_round = selection.pairs.len();
    let spacing_s = settings.duration_s / per_round.max(1) as f64;
    let round_s = settings.duration_s + FABRIC_FLAP_HALF_PERIOD_S;
    let jobs: Vec<PairJob> = (0..settings.rounds.max(1))
        .flat_map(|round| selection.pairs.iter().map(move |&pair| (round, pair)))
        .enumerate()
        .map(|(i, (round, (a, b)))| {
            let same_leaf = cluster.same_leaf(a, b);
            let rate = if same_leaf {
                settings.rate_same_leaf
            } else {
                settings.rate_cross_leaf
            };
            let at_s =
                settings.start_s + f64::from(round) * round_s + (i % per_round) as f64 * spacing_s;
            PairJob {
                a,
                b,
                route: cluster.route_labels(fabric.topology(), a, b),
                route_back: cluster.route_labels(fabric.topology(), b, a),
                probes: (rate * settings.duration_s).round().max(1.0) as u32,
                at_s,
                round,
                flapped: ((at_s + flap_offset_s) / FABRIC_FLAP_HALF_PERIOD_S) as u64 % 2 == 1,
                seed: settings
                    .seed
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .wrapping_add(i as u64),
            }
        })
        .collect();
    let measured = measure_all(cluster, &fabric, &jobs, settings.threads, progress);
    let ports = port_counters(
        cluster,
        &faults.fabric,
        &measured,
        f64::from(settings.rounds.max(1)) * settings.duration_s,
    );
    let mut network_baselines: Vec<(usize, NetworkMeasurement)> = Vec::new();
    let thresholds = Thresholds::default();
    let index_of = |host: usize| {
        hosts
            .iter()
            .position(|&h| h == host)
            .expect("a probed host")
    };
    let pairs = jobs
        .iter()
        .zip(measured)
        .map(|(job, network)| {
            let hops = cluster.route_labels(healthy.topology(), job.a, job.b).len();
            let baseline = match network_baselines.iter().find(|(h, _)| *h == hops) {
                Some((_, m)) => m.clone(),
                None => {
                    let (src, dst) = (cluster.node_of(job.a), cluster.node_of(job.b));
                    let m = healthy
                        .measure(cluster, src, dst, 4, false, settings.seed)
                        .expect("the healthy fabric reaches every node");
                    network_baselines.push((hops, m.clone()));
                    m
                }
            };
            let end_a = HostEnd::of(
                cluster,
                job.a,
                &checks[index_of(job.a.host)],
                settings.endpoint,
            );
            let end_b = HostEnd::of(
                cluster,
                job.b,
                &checks[index_of(job.b.host)],
                settings.endpoint,
            );
            judge_pair(
                cluster,
                job,
                end_a,
                end_b,
                network,
                &baseline,
                thresholds.abnormal_th,
            )
        })
        .collect::<Vec<_>>();

    let latency_probes: u64 = jobs.iter().map(|j| u64::from(j.probes)).sum();
    let stream_bytes =
        crate::network::STREAM_MESSAGE_BYTES * u64::from(crate::network::STREAM_MESSAGES);
    Ok(MeshReport {
        simulated: true,
        cluster: cluster.name.clone(),
        faults: faults.given.clone(),
        endpoint: settings.endpoint,
        hosts: hosts
            .iter()
            .zip(checks)
            .map(|(&h, report)| HostSummary {
                host: cluster.hosts[h].name.clone(),
                healthy: report.healthy,
                causes: report
                    .diagnoses
                    .iter()
                    .map(|d| d.cause.as_str().to_string())
                    .collect(),
                report,
            })
            .collect(),
        coverage: Coverage {
            cables: selection.cables,
            not_identifiable: selection
                .not_identifiable
                .iter()
                .map(|g| g.iter().map(|&c| cluster.cable_label(c)).collect())
                .collect(),
        },
        budget: Budget {
            duration_s: settings.duration_s,
            rate_same_leaf: settings.rate_same_leaf,
            rate_cross_leaf: settings.rate_cross_leaf,
            latency_probes,
            bytes: latency_probes * 2 * crate::network::PING_BYTES
                + jobs.len() as u64 * 2 * stream_bytes,
        },
        pairs,
        ports,
    })
}

/// The switch ports' counters over the mesh: what the probes' runs counted, plus what the
/// simulator does not model: a corrupting cable's symbol errors (its rate over the mesh) and
/// the packets it lost (receive errors), and a down cable's LinkDowned.
fn port_counters(
    cluster: &Cluster,
    faults: &[crate::FabricFault],
    measured: &[Result<NetworkMeasurement, Unreachable>],
    duration_s: f64,
) -> Vec<PortReport> {
    let topology = &cluster.fabric.topology;
    let mut ports = vec![SwitchPortCounters::default(); topology.num_ports()];
    for m in measured.iter().flatten() {
        for &(i, ref c) in &m.ports {
            let sum = &mut ports[i as usize];
            for (total, value) in [
                (&mut sum.xmit_data_bytes, c.xmit_data_bytes),
                (&mut sum.rcv_data_bytes, c.rcv_data_bytes),
                (&mut sum.xmit_pkts, c.xmit_pkts),
                (&mut sum.rcv_pkts, c.rcv_pkts),
                (&mut sum.xmit_wait, c.xmit_wait),
            ] {
                *total += value;
            }
        }
        for &(cable, lost) in &m.lost_on {
            for port in cluster.cable_ports(cable) {
                ports[port as usize].rcv_errors += lost;
            }
        }
    }
    for fault in faults {
        match *fault {
            crate::FabricFault::Errors { cable, per_second } => {
                for port in cluster.cable_ports(cable) {
                    ports[port as usize].symbol_errors += (per_second * duration_s).round() as u64;
                }
            }
            crate::FabricFault::Down { cable } => {
                for port in cluster.cable_ports(cable) {
                    ports[port as usize].link_downed += 1;
                }
            }
            _ => {}
        }
    }
    ports
        .into_iter()
        .enumerate()
        .filter(|(_, c)| c.values().iter().any(|&v| v > 0))
        .map(|(i, counters)| PortReport {
            port: cluster.port_label(topology.port_ref(i as u32)),
            counters,
        })
        .collect()
}

/// The hosts to probe, by index, in cluster order.
fn chosen_hosts(cluster: &Cluster, nodes: Option<&[String]>) -> Result<Vec<usize>, ClusterError> {
    let Some(nodes) = nodes else {
        return Ok((0..cluster.hosts.len()).collect());
    };
    let unknown: Vec<&str> = nodes
        .iter()
        .filter(|n| cluster.host_index(n).is_none())
        .map(|n| n.as_str())
        .collect();
    if !unknown.is_empty() {
        return Err(ClusterError::UnknownHosts {
            cluster: cluster.name.clone(),
            hosts: unknown.join(", "),
        });
    }
    let mut hosts: Vec<usize> = nodes.iter().filter_map(|n| cluster.host_index(n)).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Ok(hosts)
}

/// Runs in a host's series when its first run names a failure: a flap that stayed degraded
/// through one run looks like a failure, and only the history tells them apart (Hostping 4.3:
/// "links marked as gray in three consecutive loopback tests will be identified as flapping
/// links").
const FAILURE_CONFIRM_RUNS: u32 = 3;

/// One host's own check: its virtual host with its faults, judged against its model's
/// simulated baseline (what `hostping check --sim MODEL` does). A run that names a link
/// failure is confirmed by a short series, whose last report (judged with the runs before
/// it) is the host's.
fn check_host(
    cluster: &Cluster,
    faults: &ClusterFaults,
    host: usize,
    baseline: &model::Baseline,
    check_settings: &check::pipeline::CheckSettings,
    settings: &MeshSettings,
) -> Report {
    // The last report of a series of `runs` on a fresh virtual host: the same seed, so a
    // longer series starts with the same runs. At the host-status cadence, as `hostping
    // check --runs` and the agent run them.
    let series = |runs: u32| {
        let model = cluster.hosts[host].model();
        let config = VhostConfig {
            seed: settings.seed.wrapping_add(host as u64 + 1),
            noise: settings.noise,
            ..VhostConfig::default()
        };
        let host_faults = faults.hosts.get(&host).cloned().unwrap_or_default();
        let mut vhost = VirtualHost::new(model.clone(), host_faults, config);
        let source = check::pipeline::BaselineSource::Given(baseline, BaselineKind::Simulated);
        let series_settings = check::pipeline::CheckSettings {
            runs,
            ..check_settings.clone()
        };
        let mut reports = check::pipeline::check(
            &mut vhost,
            model,
            source,
            &series_settings,
            &mut |_| {},
            &mut |_, _, _| {},
        );
        let mut report = reports.pop().expect("a series has at least one run");
        report.host = cluster.hosts[host].name.clone();
        report
    };
    let first = series(check_settings.runs);
    let failure = first
        .diagnoses
        .iter()
        .any(|d| d.cause == model::Cause::LinkFailure);
    if failure && check_settings.runs < FAILURE_CONFIRM_RUNS {
        series(FAILURE_CONFIRM_RUNS)
    } else {
        first
    }
}

/// One pair to probe.
struct PairJob {
    a: RnicPort,
    b: RnicPort,
    /// The route from `a` to `b` on the faulted fabric.
    route: Vec<String>,
    /// The route back.
    route_back: Vec<String>,
    probes: u32,
    at_s: f64,
    /// The mesh's round, from 0.
    round: u32,
    flapped: bool,
    seed: u64,
}

/// Simulates every pair's network part, on `threads` workers.
fn measure_all(
    cluster: &Cluster,
    fabric: &FaultedFabric,
    jobs: &[PairJob],
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Result<NetworkMeasurement, Unreachable>> {
    in_parallel(jobs, threads, progress, |job| {
        let (src, dst) = (cluster.node_of(job.a), cluster.node_of(job.b));
        fabric.measure(cluster, src, dst, job.probes, job.flapped, job.seed)
    })
}

/// `f` of every item, in the items' order, worked out on `threads` workers that take the
/// next item as they come free; `progress` hears (done, all) after each.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    let slots: Vec<std::sync::Mutex<&mut Option<R>>> =
        results.iter_mut().map(std::sync::Mutex::new).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = f(item);
                **slots[i].lock().expect("no worker panics holding a slot") = Some(result);
                let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress(finished, items.len());
            });
        }
    });
    drop(slots);
    results
        .into_iter()
        .map(|r| r.expect("every item was worked out"))
        .collect()
}

/// One host's end of a pair: the endpoint its data lives in, and its part (its loopback
/// path from the RNIC to that endpoint, as its own check judged it).
struct HostEnd {
    endpoint: ComponentId,
    part: HostPart,
}

impl HostEnd {
    fn of(cluster: &Cluster, port: RnicPort, report: &Report, endpoint: Endpoint) -> HostEnd {
        let host = &cluster.hosts[port.host];
        let rnic = &host.rnics[port.rnic];
        let endpoint = nearest_endpoint(host.model(), rnic, endpoint);
        let path = report
            .paths
            .iter()
            .find(|p| &p.rnic == rnic && p.endpoint == endpoint);
        let part = match path {
            None => HostPart {
                one_way_us: None,
                gbps: None,
                status: PartStatus::Uncertain,
            },
            Some(path) => HostPart {
                one_way_us: path.latency_us.map(|l| l / 2.0),
                gbps: path.bandwidth_gbps,
                status: match path.status {
                    PathStatus::Normal if path.latency_us.is_some() => PartStatus::Normal,
                    PathStatus::Abnormal => PartStatus::Abnormal,
                    _ => PartStatus::Uncertain,
                },
            },
        };
        HostEnd { endpoint, part }
    }
}

/// The pair's parts put together and judged (`analyze::pair`).
fn judge_pair(
    cluster: &Cluster,
    job: &PairJob,
    a: HostEnd,
    b: HostEnd,
    network: Result<NetworkMeasurement, Unreachable>,
    baseline: &NetworkMeasurement,
    abnormal_th: f64,
) -> PairReport {
    let end = |p: RnicPort| PairEnd {
        host: cluster.hosts[p.host].name.clone(),
        rnic: cluster.hosts[p.host].rnics[p.rnic].to_string(),
        device: None,
    };
    let baseline_us = median_us(&baseline.latency_ns);
    let mut report = PairReport {
        parts: PairParts {
            a: end(job.a),
            b: end(job.b),
            latency_us: None,
            bandwidth_gbps: None,
            host_a_us: a.part.one_way_us,
            host_b_us: b.part.one_way_us,
            network_us: None,
            route: job.route.clone(),
            status: PartStatus::Failed,
            host_a_status: a.part.status,
            host_b_status: b.part.status,
            network_status: PartStatus::Failed,
            endpoint_a: a.endpoint.to_string(),
            endpoint_b: b.endpoint.to_string(),
        },
        host_a_gbps: a.part.gbps,
        host_b_gbps: b.part.gbps,
        network_gbps: None,
        baseline_network_us: baseline_us,
        baseline_network_gbps: baseline.bandwidth_gbps,
        route_back: job.route_back.clone(),
        same_leaf: cluster.same_leaf(job.a, job.b),
        probes: job.probes,
        simulated_round_trips: 0,
        retransmitted_packets: 0,
        probed_at_s: job.at_s,
        round: job.round + 1,
        reason: None,
    };
    let network = match network {
        Ok(network) => network,
        Err(Unreachable(why)) => {
            report.reason = Some(why);
            return report;
        }
    };
    let part = NetworkPart {
        one_way_us: median_us(&network.latency_ns),
        gbps: network.bandwidth_gbps,
        baseline_us,
        baseline_gbps: baseline.bandwidth_gbps,
        retransmitted_packets: network.retransmitted_packets,
    };
    let judged = analyze::pair::judge(&a.part, &b.part, &part, abnormal_th);
    report.simulated_round_trips = network.latency_ns.len() as u32;
    report.retransmitted_packets = network.retransmitted_packets;
    report.parts.network_us = Some(part.one_way_us);
    report.network_gbps = Some(part.gbps);
    report.parts.latency_us = judged.latency_us;
    report.parts.bandwidth_gbps = Some(judged.bandwidth_gbps);
    report.parts.network_status = judged.network;
    report.parts.status = judged.status;
    let mut why = judged.network_reasons;
    for (name, part, ep) in [
        (&report.parts.a, a.part.status, &report.parts.endpoint_a),
        (&report.parts.b, b.part.status, &report.parts.endpoint_b),
    ] {
        match part {
            PartStatus::Abnormal => why.push(format!(
                "{}'s path {}->{ep} is abnormal in its own check",
                name.host, name.rnic
            )),
            PartStatus::Uncertain => why.push(format!(
                "{}'s path {}->{ep} was not judged",
                name.host, name.rnic
            )),
            _ => {}
        }
    }
    if report.parts.status != PartStatus::Normal {
        report.reason = Some(why.join("; "));
    }
    report
}

/// The median one-way latency of a pair's round trips, us (the simulator plays at least one).
fn median_us(latency_ns: &[f64]) -> f64 {
    analyze::robust::median(latency_ns.iter().copied()).expect("at least one round trip") / 1000.0
}
