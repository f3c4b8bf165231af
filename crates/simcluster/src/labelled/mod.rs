//! `hostping bench job` (issue 28 section 5): labelled jobs on simulated clusters, seeded and
//! reproducible, each with the verdict and culprit its faults call for, and the scores of the
//! verdicts `job` gives them: precision and recall of "the infrastructure is at fault", verdict
//! accuracy, top-1 and top-3 culprit accuracy per class, and time to verdict.
//!
//! The labels come from the faults' meaning, never from the verdict's rules:
//! - a host fault on a link of the job's GPU paths (RNIC, GPU or switch uplink PCIe), a PCIe
//!   or RNIC setting, an RNIC stall -> `host`, culprit that host with the fault's cause;
//! - a host fault on a link the job's GPU traffic does not cross (a memory channel, a root
//!   port, IOTLB misses at a root port), or on a host outside the job -> `neither`: a
//!   fault, but not the job's;
//! - a fabric fault on a cable of the job's routes -> `network`, culprit that cable;
//!   other jobs' traffic -> `network`, `background_traffic`; a fault on a cable off the
//!   job's routes -> `neither`, also on an uplink of a job placed one leaf per rail, whose
//!   rail-local collectives never leave the leaf though coverage pairs across rails do;
//! - a host fault and a fabric fault at once -> `both`;
//! - a healthy cluster with measurement noise -> `neither` with no culprit;
//! - a healthy cluster, the job's ranks in a random order (a dynamic rendezvous) ->
//!   `neither`, culprit `mapping`; a binomial-tree all-reduce -> `neither`, `pattern`.
//!
//! Every case runs as `hostping job --probe --what-if` does: the follow-up probes, then the
//! what-if of its traffic. [`tables`] lays out the scores and the jobs it got wrong as text.
//! [`passive`] holds the jobs whose only symptom is their own collectives (`--passive`).

pub mod passive;
pub mod tables;

use std::collections::BTreeSet;
use std::time::Instant;

use fabric::topology::{Peer, SwitchId};

use model::job::{JobReport, Layer, Verdict};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::fault::ClusterFaults;
use crate::job::JobOptions;
use crate::mesh::MeshSettings;
use crate::report::Endpoint;
use crate::ClusterError;
use verdict::spec::{Cluster, RnicPort};
use verdict::whatif::JobTraffic;

/// What a case's verdict should name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExpectedCulprit {
    /// `host` (a host's path, RNIC or settings) or `fabric`.
    pub layer: &'static str,
    /// The host, for a host's fault.
    pub host: Option<String>,
    /// The element: a host's link or RNIC, a cable; `None` for background traffic.
    pub component: Option<String>,
    /// The cause the fault calls for (`link_flapping`, `background_traffic`, ...).
    pub cause: Option<&'static str>,
}

/// One labelled job.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// The class it belongs to (`host_link`, `fabric_errors`, ...).
    pub class: &'static str,
    /// The cluster, built-in name.
    pub cluster: String,
    /// The job's hosts in rank order.
    pub nodes: Vec<String>,
    /// The faults, as `--inject` takes them.
    pub inject: Vec<String>,
    /// The job's traffic for the what-if: `ring` or `tree` all-reduce.
    pub traffic: &'static str,
    /// Seed of the simulation.
    pub seed: u64,
    /// Relative noise of the hosts' measurements.
    pub noise: f64,
    /// The verdict it calls for.
    pub verdict: Verdict,
    /// The culprits it calls for (none for `neither` without a pattern or mapping).
    pub culprits: Vec<ExpectedCulprit>,
}

/// Bytes each rank reduces in a case's what-if: NCCL's default all-reduce test size range
/// tops out in the tens of MiB; 64 MiB keeps the replay under a second on pod-32.
pub const WHAT_IF_BYTES: u64 = 64 << 20;

/// How many cases of each class.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Suite {
    /// Two of each class: what `./test.sh` runs.
    Fast,
    /// Twenty-five of each class: the benchmark.
    Full,
}

impl Suite {
    fn per_class(self) -> usize {
        match self {
            Suite::Fast => 2,
            Suite::Full => 25,
        }
    }
}

/// The classes, in the order the table lists them.
pub const CLASSES: [&str; 17] = [
    "healthy",
    "host_link",
    "host_flap",
    "host_setting",
    "host_rnic",
    "host_off_path",
    "host_off_job",
    "fabric_degrade",
    "fabric_flap",
    "fabric_errors",
    "fabric_down",
    "fabric_off_route",
    "fabric_off_rail",
    "background",
    "both",
    "mapping",
    "pattern",
];

/// Links of a dgx-a100 job's GPU paths, by RNIC r: its own PCIe link, its GPUs', and the
/// uplink its second GPU's traffic crosses (DESIGN 4.1).
fn gpu_path_links(r: usize) -> [String; 4] {
    [
        format!("rnic{r}--lsw{}", 2 * r),
        format!("gpu{}--lsw{}", 2 * r, 2 * r),
        format!("gpu{}--lsw{}", 2 * r + 1, 2 * r + 1),
        format!("lsw{}--usw{r}", 2 * r + 1),
    ]
}

/// The classes also run on the larger three-level cluster (`full-891`): each host and
/// fabric fault kind once, off the job's routes, both, and healthy; other jobs' traffic,
/// mappings and patterns are replayed on pod-32 only (a what-if of other jobs' traffic on
/// 891 hosts takes tens of seconds).
pub const LARGE_CLASSES: [&str; 8] = [
    "healthy",
    "host_link",
    "host_setting",
    "fabric_degrade",
    "fabric_errors",
    "fabric_down",
    "fabric_off_route",
    "both",
];

/// Jobs of each class on the larger cluster, per suite: none in the fast suite.
fn large_per_class(suite: Suite) -> usize {
    match suite {
        Suite::Fast => 0,
        Suite::Full => 5,
    }
}

/// The labelled cases of `suite` from `seed`: every class on `pod` (jobs of 8 to 24
/// hosts), [`LARGE_CLASSES`] on `large` when given (jobs of 16 to 64 hosts).
pub fn cases(pod: &Cluster, large: Option<&Cluster>, suite: Suite, seed: u64) -> Vec<Case> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for class in CLASSES {
        for _ in 0..suite.per_class() {
            out.push(case(pod, class, &[8, 12, 16, 24], &mut rng));
        }
    }
    if let Some(large) = large {
        for class in LARGE_CLASSES {
            for _ in 0..large_per_class(suite) {
                out.push(case(large, class, &[16, 32, 64], &mut rng));
            }
        }
    }
    out
}

fn case(cluster: &Cluster, class: &'static str, sizes: &[usize], rng: &mut ChaCha8Rng) -> Case {
    let names: Vec<String> = cluster.hosts.iter().map(|h| h.name.clone()).collect();
    let size = *sizes.choose(rng).expect("sizes");
    let mut shuffled = names.clone();
    shuffled.shuffle(rng);
    let mut nodes: Vec<String> = shuffled[..size.min(names.len())].to_vec();
    nodes.sort();
    let outside: Vec<String> = names
        .iter()
        .filter(|n| !nodes.contains(n))
        .cloned()
        .collect();
    let job_hosts: Vec<usize> = nodes.iter().filter_map(|n| cluster.host_index(n)).collect();
    let job_cables: Vec<String> = verdict::job::job_cables(cluster, &job_hosts)
        .into_iter()
        .map(|c| cluster.cable_label(c))
        .collect();
    let topology = &cluster.fabric.topology;
    let off_route: Vec<String> = (0..topology.num_ports() as u32)
        .map(|i| cluster.cable_label(cluster.cable_at(topology.port_ref(i))))
        .filter(|c| !job_cables.contains(c))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let host = nodes.choose(rng).expect("a job has hosts").clone();
    let rnic = rng.gen_range(0..4usize);
    let link = gpu_path_links(rnic).choose(rng).expect("links").clone();
    let cable = job_cables
        .choose(rng)
        .expect("a job crosses cables")
        .clone();
    let fraction = |rng: &mut ChaCha8Rng| (rng.gen_range(25..=60) as f64) / 100.0;
    let host_culprit = |host: &str, cause: &'static str| ExpectedCulprit {
        layer: "host",
        host: Some(host.to_string()),
        component: None,
        cause: Some(cause),
    };
    let cable_culprit = |cable: &str, cause: &'static str| ExpectedCulprit {
        layer: "fabric",
        host: None,
        component: Some(cable.to_string()),
        cause: Some(cause),
    };
    let job_culprit = |cause: &'static str| ExpectedCulprit {
        layer: "job",
        host: None,
        component: None,
        cause: Some(cause),
    };
    let mut traffic = "ring";
    let (inject, verdict, culprits): (Vec<String>, Verdict, Vec<ExpectedCulprit>) = match class {
        "healthy" => (vec![], Verdict::Neither, vec![]),
        "host_link" => (
            vec![format!("{host}:degrade:{link}:{}", fraction(rng))],
            Verdict::Host,
            vec![host_culprit(&host, "link_failure")],
        ),
        "host_flap" => (
            vec![format!("{host}:flap:{link}:{}", fraction(rng))],
            Verdict::Host,
            vec![host_culprit(&host, "link_flapping")],
        ),
        "host_setting" => {
            let (setting, cause) = match rng.gen_range(0..4) {
                // ACS redirects what turns at that switch: RNIC r's traffic to GPU 2r turns
                // at lsw(2r), to GPU 2r+1 at usw(r) (lsw(2r+1) turns nothing).
                0 => (
                    [format!("acs:lsw{}", 2 * rnic), format!("acs:usw{rnic}")]
                        .choose(rng)
                        .expect("switches")
                        .clone(),
                    "pcie_misconfiguration",
                ),
                1 => (format!("ats-off:rnic{rnic}"), "pcie_misconfiguration"),
                2 => (format!("slow-start:rnic{rnic}"), "rnic_misconfiguration"),
                _ => (
                    format!("tx-window:rnic{rnic}:4096"),
                    "rnic_misconfiguration",
                ),
            };
            (
                vec![format!("{host}:{setting}")],
                Verdict::Host,
                vec![host_culprit(&host, cause)],
            )
        }
        "host_rnic" => {
            let stall = match rng.gen_range(0..2) {
                0 => format!("odp:rnic{rnic}:damming"),
                _ => format!("odp:rnic{rnic}:flood"),
            };
            (
                vec![format!("{host}:{stall}")],
                Verdict::Host,
                vec![host_culprit(&host, "odp_stall")],
            )
        }
        "host_off_path" => {
            let socket = rng.gen_range(0..2);
            // IOTLB misses slow an RNIC's DMA into memory at its root port, not its
            // peer-to-peer writes into GPU memory (HotNets'22 3.1).
            let fault = match rng.gen_range(0..3) {
                0 => format!("membw:mem{socket}:0.9"),
                1 => format!("iommu:rnic{rnic}:4096"),
                _ => format!("degrade:usw{}--cpu{socket}:{}", 2 * socket, fraction(rng)),
            };
            (vec![format!("{host}:{fault}")], Verdict::Neither, vec![])
        }
        "host_off_job" => {
            let other = outside.choose(rng).expect("a host outside the job");
            (
                vec![format!("{other}:degrade:{link}:{}", fraction(rng))],
                Verdict::Neither,
                vec![],
            )
        }
        "fabric_degrade" => (
            vec![format!("fabric:degrade:{cable}:{}", fraction(rng))],
            Verdict::Network,
            vec![cable_culprit(&cable, "link_degraded")],
        ),
        "fabric_flap" => (
            vec![format!("fabric:flap:{cable}:{}", fraction(rng))],
            Verdict::Network,
            vec![cable_culprit(&cable, "link_flapping")],
        ),
        "fabric_errors" => (
            vec![format!(
                "fabric:errors:{cable}:{}",
                [1e3, 1e4, 1e5].choose(rng).expect("rates")
            )],
            Verdict::Network,
            vec![cable_culprit(&cable, "link_errors")],
        ),
        "fabric_down" => (
            vec![format!("fabric:down:{cable}")],
            Verdict::Network,
            vec![cable_culprit(&cable, "link_down")],
        ),
        "fabric_off_route" => {
            let off = off_route.choose(rng).expect("a cable off the job's routes");
            let fault = match rng.gen_range(0..3) {
                0 => format!("fabric:degrade:{off}:{}", fraction(rng)),
                1 => format!("fabric:errors:{off}:1e4"),
                _ => format!("fabric:down:{off}"),
            };
            (vec![fault], Verdict::Neither, vec![])
        }
        "fabric_off_rail" => {
            // The job on hosts of one leaf group, one leaf per rail; the fault on an uplink
            // of one of its leaves.
            nodes = one_leaf_per_rail(cluster, rng);
            let uplink = leaf_uplinks(cluster, &nodes)
                .choose(rng)
                .expect("a leaf with uplinks")
                .clone();
            let fault = match rng.gen_range(0..3) {
                0 => format!("fabric:degrade:{uplink}:{}", fraction(rng)),
                1 => format!("fabric:errors:{uplink}:1e4"),
                _ => format!("fabric:flap:{uplink}:{}", fraction(rng)),
            };
            (vec![fault], Verdict::Neither, vec![])
        }
        "background" => (
            vec![format!(
                "fabric:background:{}",
                (rng.gen_range(2..=6) as f64) / 10.0
            )],
            Verdict::Network,
            vec![ExpectedCulprit {
                layer: "fabric",
                host: None,
                component: None,
                cause: Some("background_traffic"),
            }],
        ),
        "both" => (
            vec![
                format!("{host}:degrade:{link}:{}", fraction(rng)),
                format!("fabric:errors:{cable}:1e4"),
            ],
            Verdict::Both,
            vec![
                host_culprit(&host, "link_failure"),
                cable_culprit(&cable, "link_errors"),
            ],
        ),
        "mapping" => {
            // Ranks in the order a dynamic rendezvous hands them out: every ring step
            // leaves its leaf, and the static routes collide on the uplinks.
            nodes = names.clone();
            nodes.shuffle(rng);
            (vec![], Verdict::Neither, vec![job_culprit("mapping")])
        }
        "pattern" => {
            // A binomial-tree all-reduce funnels log2(n) buffers through its root's link
            // (thesis Theorem 4.1): slow on any placement.
            traffic = "tree";
            (vec![], Verdict::Neither, vec![job_culprit("pattern")])
        }
        other => unreachable!("class {other}"),
    };
    Case {
        class,
        cluster: cluster.name.clone(),
        nodes,
        inject,
        traffic,
        seed: rng.gen(),
        noise: if class == "healthy" {
            [0.02, 0.04].choose(rng).copied().expect("noises")
        } else {
            0.02
        },
        verdict,
        culprits,
    }
}

/// Two or more hosts whose RNICs hang from the same leaves, rail by rail (a job's
/// rail-local collectives then never leave a leaf), in rank order.
fn one_leaf_per_rail(cluster: &Cluster, rng: &mut ChaCha8Rng) -> Vec<String> {
    let first = rng.gen_range(0..cluster.hosts.len());
    let port = |host| RnicPort { host, rnic: 0 };
    let mut group: Vec<usize> = (0..cluster.hosts.len())
        .filter(|&h| h != first && cluster.same_leaf(port(first), port(h)))
        .collect();
    group.shuffle(rng);
    group.truncate(rng.gen_range(1..=group.len().max(1)));
    group.push(first);
    group.sort_unstable();
    group
        .iter()
        .map(|&h| cluster.hosts[h].name.clone())
        .collect()
}

/// The cables from the leaves of `nodes`' RNICs up to the next level, named by their leaf
/// ends as pairs' `cables` name them.
fn leaf_uplinks(cluster: &Cluster, nodes: &[String]) -> Vec<String> {
    let topology = &cluster.fabric.topology;
    let leaves: BTreeSet<SwitchId> = cluster
        .rnic_ports()
        .filter(|p| nodes.contains(&cluster.hosts[p.host].name))
        .map(|p| topology.leaf_of(cluster.node_of(p)))
        .collect();
    (0..topology.num_ports() as u32)
        .map(|i| topology.port_ref(i))
        .filter(|p| leaves.contains(&p.switch))
        .filter(|&p| matches!(topology.peer(p), Peer::Switch { .. }))
        .map(|p| cluster.cable_label(cluster.cable_at(p)))
        .collect()
}

/// One case run and scored.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The case.
    pub case: Case,
    /// The verdict given.
    pub verdict: Verdict,
    /// The culprits given, best first, as `cause component@host`.
    pub culprits: Vec<String>,
    /// The verdict is the one called for.
    pub verdict_right: bool,
    /// The first culprit is one called for (for `neither` without any: no culprit at all).
    pub top1: bool,
    /// Every culprit called for is among the first three (none given when none is).
    pub top3: bool,
    /// Seconds from nothing to the verdict: the simulated mesh, the judgement, the
    /// follow-up probes and the judgement again.
    pub seconds: f64,
    /// Follow-up probes run.
    pub follow_ups: usize,
    /// Seconds of the judgement alone, from the collected evidence.
    pub judge_seconds: f64,
    /// Pairs probed (the work done).
    pub pairs: usize,
    /// What the benchmark's action policy ([`ACTION_POLICY`], a dry run) would do with the
    /// verdict (DESIGN 4.9): `kind target state` each.
    pub actions: Vec<String>,
    /// Of those, the actions on a culprit the follow-ups cleared (never any: such a
    /// culprit never acts).
    pub actions_on_cleared: usize,
}

/// The action policy the benchmark counts in a dry run (issue 40 item 5): every layer and
/// cause, both kinds, one window, the default smallest score, no limit reached (nothing
/// is taken, so the limits say nothing here).
pub const ACTION_POLICY: &str = "mode = \"dry-run\"\nconfirm = 1\nkinds = [\"drain\", \"alert\"]\n\
    alertmanager = \"http://alertmanager.invalid:9093\"\n[limits]\nper_hour = 1000000\n\
    drained_share = 1.0\n";

/// What [`ACTION_POLICY`] proposes on `report`, and how many of those are on a culprit the
/// follow-ups cleared.
fn dry_run_actions(report: &JobReport) -> (Vec<String>, usize) {
    let policy = verdict::actions::Policy::parse(std::path::Path::new("bench"), ACTION_POLICY)
        .expect("the bench's policy is valid");
    let actions = verdict::actions::decide(&policy, report, &verdict::actions::History::default());
    let cleared = actions
        .iter()
        .filter(|a| {
            report.culprits.iter().any(|c| {
                model::action::CulpritKey::of(c) == a.key()
                    && matches!(
                        verdict::actions::confirmation(report, c),
                        verdict::actions::Confirmation::Cleared(_)
                    )
            })
        })
        .count();
    let words = actions
        .iter()
        .map(|a| {
            let target = a.host.as_deref().or(a.component.as_deref()).unwrap_or("-");
            format!("{} {target} {}", a.kind.as_str(), a.state.as_str())
        })
        .collect();
    (words, cleared)
}

/// Runs one case.
pub fn run(cluster: &Cluster, case: &Case) -> Result<Outcome, ClusterError> {
    let faults = ClusterFaults::parse(&case.inject, cluster)?;
    let settings = MeshSettings {
        nodes: Some(case.nodes.clone()),
        endpoint: Endpoint::Gpu,
        seed: case.seed,
        noise: case.noise,
        ..MeshSettings::default()
    };
    let options = JobOptions {
        probe: true,
        what_if: Some(match case.traffic {
            "tree" => JobTraffic::TreeAllReduce {
                bytes: WHAT_IF_BYTES,
            },
            _ => JobTraffic::RingAllReduce {
                bytes: WHAT_IF_BYTES,
            },
        }),
        collectives: None,
    };
    let start = Instant::now();
    let run = crate::job::run(cluster, &faults, &settings, &options, &|_, _| {})?;
    let seconds = start.elapsed().as_secs_f64();
    // The judgement alone, from the evidence collected (what the collector does).
    let judging = Instant::now();
    let _ = analyze::job::judge(&run.evidence);
    Ok(score(
        case,
        &run.report,
        seconds,
        judging.elapsed().as_secs_f64(),
    ))
}

pub(crate) fn matches(expected: &ExpectedCulprit, got: &model::job::Culprit) -> bool {
    match expected.layer {
        "host" => {
            matches!(got.layer, Layer::Host | Layer::Rnic)
                && got.host == expected.host
                && expected.cause.is_none_or(|c| got.cause == c)
        }
        "job" => got.layer == Layer::Job && expected.cause.is_none_or(|c| got.cause == c),
        _ => {
            got.layer == Layer::Fabric
                && expected
                    .component
                    .as_ref()
                    .is_none_or(|c| got.component.as_ref() == Some(c))
                && expected.cause.is_none_or(|c| got.cause == c)
        }
    }
}

fn score(case: &Case, report: &JobReport, seconds: f64, judge_seconds: f64) -> Outcome {
    let (actions, actions_on_cleared) = dry_run_actions(report);
    let (top1, top3) = if case.culprits.is_empty() {
        let none = report.culprits.is_empty();
        (none, none)
    } else {
        let first = report
            .culprits
            .first()
            .is_some_and(|c| case.culprits.iter().any(|e| matches(e, c)));
        let three = case
            .culprits
            .iter()
            .all(|e| report.culprits.iter().take(3).any(|c| matches(e, c)));
        (first, three)
    };
    Outcome {
        case: case.clone(),
        verdict: report.verdict,
        culprits: report
            .culprits
            .iter()
            .map(|c| {
                format!(
                    "{} {}{}",
                    c.cause,
                    c.component.as_deref().unwrap_or("-"),
                    c.host.as_ref().map_or(String::new(), |h| format!("@{h}"))
                )
            })
            .collect(),
        verdict_right: report.verdict == case.verdict,
        top1,
        top3,
        seconds,
        judge_seconds,
        follow_ups: report.follow_ups.len(),
        pairs: report.pairs.len(),
        actions,
        actions_on_cleared,
    }
}

/// One class's scores.
#[derive(Clone, Debug, Serialize)]
pub struct ClassScore {
    /// The cluster.
    pub cluster: String,
    /// The class.
    pub class: String,
    /// Cases.
    pub cases: usize,
    /// Share with the right verdict.
    pub verdict_accuracy: f64,
    /// Share whose first culprit is right.
    pub top1: f64,
    /// Share whose culprits are all in the first three.
    pub top3: f64,
    /// Actions the benchmark's policy would take in a dry run, over the class's jobs.
    pub actions: usize,
}

/// The whole benchmark's scores.
#[derive(Clone, Debug, Serialize)]
pub struct Scores {
    /// Cases run.
    pub cases: usize,
    /// Of the verdicts "host, network or both", the share that is right about the
    /// infrastructure being at fault.
    pub precision: f64,
    /// Of the cases whose infrastructure is at fault, the share called so.
    pub recall: f64,
    /// Share with exactly the right verdict.
    pub verdict_accuracy: f64,
    /// Share whose first culprit is right.
    pub top1: f64,
    /// Share whose culprits are all in the first three.
    pub top3: f64,
    /// Healthy or not-the-job's cases given a culprit.
    pub false_culprits_on_healthy: usize,
    /// Verdicts `inconclusive`.
    pub inconclusive: usize,
    /// Median seconds to a verdict, simulation included.
    pub seconds_median: f64,
    /// 95th percentile of the same.
    pub seconds_p95: f64,
    /// Median seconds of the judgement from collected evidence.
    pub judge_seconds_median: f64,
    /// 95th percentile of the same.
    pub judge_seconds_p95: f64,
    /// Pairs probed over all cases (the work done).
    pub pairs: usize,
    /// Actions the policy would take on jobs with no host or cable at fault (healthy
    /// ones, faults off the job's paths, routes or rails, the job's own pattern).
    pub actions_on_healthy: usize,
    /// Actions on culprits the follow-ups cleared.
    pub actions_on_cleared: usize,
    /// Per class.
    pub classes: Vec<ClassScore>,
}

/// Scores the outcomes.
pub fn scores(outcomes: &[Outcome]) -> Scores {
    let share = |hits: usize, of: usize| {
        if of == 0 {
            1.0
        } else {
            hits as f64 / of as f64
        }
    };
    let count = |f: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let predicted = count(&|o| o.verdict.infrastructure_at_fault());
    let actual = count(&|o| o.case.verdict.infrastructure_at_fault());
    let true_positive =
        count(&|o| o.verdict.infrastructure_at_fault() && o.case.verdict.infrastructure_at_fault());
    let quantile = |mut v: Vec<f64>, q: f64| {
        v.sort_by(f64::total_cmp);
        v.get(((v.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let secs: Vec<f64> = outcomes.iter().map(|o| o.seconds).collect();
    let judge: Vec<f64> = outcomes.iter().map(|o| o.judge_seconds).collect();
    Scores {
        cases: outcomes.len(),
        precision: share(true_positive, predicted),
        recall: share(true_positive, actual),
        verdict_accuracy: share(count(&|o| o.verdict_right), outcomes.len()),
        top1: share(count(&|o| o.top1), outcomes.len()),
        top3: share(count(&|o| o.top3), outcomes.len()),
        false_culprits_on_healthy: count(&|o| o.case.culprits.is_empty() && !o.top1),
        inconclusive: count(&|o| o.verdict == Verdict::Inconclusive),
        seconds_median: quantile(secs.clone(), 0.5),
        seconds_p95: quantile(secs, 0.95),
        judge_seconds_median: quantile(judge.clone(), 0.5),
        judge_seconds_p95: quantile(judge, 0.95),
        pairs: outcomes.iter().map(|o| o.pairs).sum(),
        actions_on_healthy: outcomes
            .iter()
            .filter(|o| o.case.culprits.iter().all(|c| c.layer == "job"))
            .map(|o| o.actions.len())
            .sum(),
        actions_on_cleared: outcomes.iter().map(|o| o.actions_on_cleared).sum(),
        classes: outcomes
            .iter()
            .map(|o| (o.case.cluster.as_str(), o.case.class))
            .fold(Vec::new(), |mut seen, key| {
                if !seen.contains(&key) {
                    seen.push(key);
                }
                seen
            })
            .into_iter()
            .filter_map(|(cluster, class)| {
                let of: Vec<&Outcome> = outcomes
                    .iter()
                    .filter(|o| o.case.class == class && o.case.cluster == cluster)
                    .collect();
                (!of.is_empty()).then(|| ClassScore {
                    cluster: cluster.to_string(),
                    class: class.to_string(),
                    cases: of.len(),
                    verdict_accuracy: share(
                        of.iter().filter(|o| o.verdict_right).count(),
                        of.len(),
                    ),
                    top1: share(of.iter().filter(|o| o.top1).count(), of.len()),
                    top3: share(of.iter().filter(|o| o.top3).count(), of.len()),
                    actions: of.iter().map(|o| o.actions.len()).sum(),
                })
            })
            .collect(),
    }
}
