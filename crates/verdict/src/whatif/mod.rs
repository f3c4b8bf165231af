//! The what-if (issue 28, section 3): replay a job's traffic on the cluster's fabric with the
//! job's placement and given link states, and say what explains the time observed.
//!
//! Scenarios, each a run of the packet simulator (`fabric::sim`, deterministic routes as a
//! subnet manager programs them): `observed` (the true link states, on a simulated cluster;
//! a real job's measured time otherwise), `healthy` (no faults, no other jobs, the job's
//! placement), `background_only` and `elements_only` (the measured states split),
//! `suggested_mapping` (healthy fabric, the hosts in the order the thesis's mapping methods
//! suggest), and `element <cable>` (one measured cable alone, when several could be it).
//!
//! Then: observed within [`HEALTHY_TOLERANCE`] of healthy means the infrastructure explains
//! nothing, and the job's own placement (`mapping`, when the suggested mapping is
//! [`MAPPING_GAIN`] faster) or pattern (`pattern`, when even the best healthy replay needs
//! [`PATTERN_FACTOR`] x the line-rate bound) is what is left, or `none`; observed above that
//! is explained by whichever measured part, other jobs' traffic (`background_traffic`) or
//! the cables (`element`), reproduces at least [`EXPLAINS_SHARE`] of the excess, the larger
//! first; `unexplained` when neither does (something the fabric's states do not hold: a
//! host, or a state not measured). Every time is simulated but a real job's observed one.
//! docs/cluster.md ("What-if") gives the model.

mod mapping;
mod replay;
mod states;
mod traffic;

use std::collections::HashSet;

use model::job::{WhatIf, WhatIfScenario};

use crate::spec::{Cable, Cluster, RnicPort};
use crate::PlanError;
use replay::{Outcome, Replay};

pub use states::LinkStates;
pub use traffic::{JobTraffic, TREE_SLICE_BYTES};

/// Observed within this share above the healthy replay counts as healthy: twice the
/// replay's own seed-to-seed spread (under 3 % with other jobs' traffic on pod-32,
/// `tests/whatif.rs`; none without, the routes being deterministic), and below the 25 %
/// a cable at 80 % of its rate costs a ring that crosses it.
pub const HEALTHY_TOLERANCE: f64 = 0.10;
/// A suggested mapping explains a slow job when the healthy fabric runs it at least this
/// much faster than the job's own placement: well beyond the replay's spread, and enough
/// to be worth a change of the job script.
pub const MAPPING_GAIN: f64 = 0.15;
/// A pattern is slow in itself when the best healthy replay (its placement or the
/// suggested one) takes this many times its line-rate bound (every RNIC sending all the
/// time): a ring all-reduce replays within 1.1 x on pod-32; a binomial tree's root link
/// carries log2(n) x the buffer, the endpoint congestion of thesis Theorem 4.1 that no
/// mapping removes.
pub const PATTERN_FACTOR: f64 = 1.5;
/// A measured part (other jobs' traffic, or the cables) explains a slow job when replaying
/// it alone reproduces at least this share of the excess over healthy: most of it.
pub const EXPLAINS_SHARE: f64 = 0.5;
/// At most this many cables are tried one by one to name the one that explains the time;
/// with more, the element is left unnamed and the evidence lists them.
pub const MAX_ELEMENT_TRIALS: usize = 4;

/// What the job was seen to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Observed {
    /// A simulated cluster: the job ran under these true link states; replay them.
    Replay(LinkStates),
    /// A real job's measured time, us.
    Time(f64),
}

/// How to run the what-if.
#[derive(Clone, Debug, PartialEq)]
pub struct WhatIfSettings {
    /// Seeds the simulator (routing ties, other jobs' traffic) and METIS: the same seed
    /// gives the same answer.
    pub seed: u64,
}

impl Default for WhatIfSettings {
    fn default() -> Self {
        WhatIfSettings { seed: 1 }
    }
}

/// Replays `traffic` over the hosts of `placement` (host indices of `cluster`, in rank
/// order) and compares with what was `observed`; `measured` holds the link states the
/// verdict found. Fails, naming the input, on fewer than two hosts, a host repeated or
/// unknown, hosts without a common rail on the fabric, a workload file for another number
/// of ranks, an observed time that is not a positive number, or states the fabric cannot
/// route around.
pub fn what_if(
    cluster: &Cluster,
    placement: &[usize],
    traffic: &JobTraffic,
    observed: Observed,
    measured: &LinkStates,
    settings: &WhatIfSettings,
) -> Result<WhatIf, PlanError> {
    let rails = check_job(cluster, placement, traffic, &observed)?;
    let replay = Replay {
        cluster,
        traffic,
        rails,
        seed: settings.seed,
    };
    let config = replay.config();
    let ranks = placement.len() as u32;
    let matrix = traffic.matrix(ranks, config.packet_bytes);
    let rail_count = replay.rails.len() as u64;
    let message_packets = replay.message_packets(ranks);
    let total_bytes: u64 = matrix.flows().iter().map(|f| f.bytes).sum();
    // Every RNIC of every rank sending at line rate all the time: bytes x 8 / Gb/s is ns.
    let ideal_us =
        total_bytes as f64 * 8.0 / (f64::from(ranks) * rail_count as f64 * config.link_gbps) / 1e3;

    let healthy = ran(replay.run(placement, &LinkStates::default(), message_packets, 0)?);
    let healthy_ps = (healthy.0 * 1e6) as u64;
    let suggested = mapping::suggest(&replay, placement, &matrix)?;

    let mut runs: Vec<(&str, Vec<usize>, LinkStates)> =
        vec![("healthy", placement.to_vec(), LinkStates::default())];
    if let Observed::Replay(states) = &observed {
        runs.push(("observed", placement.to_vec(), states.clone()));
    }
    if measured.background.is_some() {
        runs.push((
            "background_only",
            placement.to_vec(),
            measured.background_only(),
        ));
    }
    if measured.has_elements() {
        runs.push((
            "elements_only",
            placement.to_vec(),
            measured.elements_only(),
        ));
    }
    if let Some(s) = &suggested {
        runs.push(("suggested_mapping", s.order.clone(), LinkStates::default()));
    }
    let (outcomes, same_as) = run_once_each(
        &replay,
        &runs,
        Outcome::Ran {
            time_us: healthy.0,
            packets: healthy.1,
        },
        message_packets,
        healthy_ps,
    )?;
    let index = |name: &str| runs.iter().position(|(n, _, _)| *n == name);
    let outcome = |name: &str| index(name).map(|i| outcomes[i]);
    // `, the same run as observed` where a scenario is an earlier one.
    let same = |name: &str| {
        index(name)
            .and_then(|i| same_as[i])
            .map_or(String::new(), |j| {
                format!(" (the same run as `{}`)", runs[j].0)
            })
    };

    let mut scenarios = Vec::new();
    let mut cannot_run: Option<Cable> = None;
    let mut push = |name: &str, setting: String, outcome: Option<Outcome>| match outcome {
        Some(Outcome::Ran { time_us, packets }) => scenarios.push(WhatIfScenario {
            name: name.to_string(),
            setting,
            time_us,
            packets,
        }),
        Some(Outcome::CannotRun(cable)) => {
            cannot_run.get_or_insert(cable);
        }
        None => {}
    };
    let observed_us = match &observed {
        Observed::Replay(states) => {
            let setting = format!(
                "the job's placement under the true link states: {}",
                describe(cluster, states)
            );
            push("observed", setting + &same("observed"), outcome("observed"));
            outcome("observed").and_then(time)
        }
        Observed::Time(us) => {
            push(
                "observed",
                "measured: the job's own time, not simulated".to_string(),
                Some(Outcome::Ran {
                    time_us: *us,
                    packets: 0,
                }),
            );
            Some(*us)
        }
    };
    push(
        "healthy",
        "no faults, no other jobs' traffic, the job's placement".to_string(),
        outcome("healthy"),
    );
    push(
        "background_only",
        format!(
            "only other jobs' traffic: {}{}",
            describe(cluster, &measured.background_only()),
            same("background_only")
        ),
        outcome("background_only"),
    );
    push(
        "elements_only",
        format!(
            "only the cables' states: {}{}",
            describe(cluster, &measured.elements_only()),
            same("elements_only")
        ),
        outcome("elements_only"),
    );
    if let Some(s) = &suggested {
        push(
            "suggested_mapping",
            format!(
                "no faults, hosts in the {} order: {}",
                s.method,
                host_list(cluster, &s.order)
            ),
            outcome("suggested_mapping"),
        );
    }

    let judge = Judge {
        cluster,
        replay: &replay,
        placement,
        measured,
        message_packets,
        healthy_ps,
        healthy_us: healthy.0,
        ideal_us,
    };
    let mut answer = match cannot_run {
        Some(cable) => Answer {
            explains: "element",
            element: Some(cluster.cable_label(cable)),
            evidence: format!(
                "the cable of the job's RNIC at {} is down: the job cannot run as placed",
                cluster.cable_label(cable)
            ),
            trials: Vec::new(),
        },
        None => judge.explain(
            observed_us.expect("an observed replay that ran has a time"),
            outcome("background_only").and_then(time),
            outcome("elements_only").and_then(time),
            suggested
                .as_ref()
                .and_then(|_| outcome("suggested_mapping").and_then(time)),
            &matrix,
        )?,
    };
    scenarios.append(&mut answer.trials);
    let suggested_mapping = match (answer.explains, &suggested) {
        ("mapping", Some(s)) => s
            .order
            .iter()
            .map(|&h| cluster.hosts[h].name.clone())
            .collect(),
        _ => Vec::new(),
    };
    Ok(WhatIf {
        traffic: format!(
            "{}, {} rail{} per host",
            traffic.describe(placement.len()),
            rail_count,
            if rail_count == 1 { "" } else { "s" }
        ),
        scenarios,
        explains: answer.explains.to_string(),
        element: answer.element,
        suggested_mapping,
        evidence: answer.evidence,
        simulated: true,
    })
}

/// One replay of a job's traffic under given link states: what a simulated job's
/// collective takes in that state (`simcluster::collectives`, issue 39 item 5).
#[derive(Clone, Debug, PartialEq)]
pub enum Replayed {
    /// The collective's time (its slowest rail's), us, and the packets the simulator moved.
    Ran {
        /// The time, us.
        time_us: f64,
        /// Packets delivered, the job's and other jobs' traffic.
        packets: u64,
    },
    /// A cable of one of the job's RNICs is down (its label): the job cannot run as placed.
    CannotRun(String),
}

/// Replays `traffic` over `placement` (host indices in rank order) once per entry of
/// `states`, on the packet simulator, as the what-if's scenarios are replayed (one ring
/// per rail, deterministic routes). The healthy fabric is replayed first, once, since
/// other jobs' traffic is sized from it; a state equal to the healthy one reuses it. Fails
/// as [`what_if`] does on a job it cannot place.
pub fn replay_states(
    cluster: &Cluster,
    placement: &[usize],
    traffic: &JobTraffic,
    states: &[LinkStates],
    settings: &WhatIfSettings,
) -> Result<Vec<Replayed>, PlanError> {
    let rails = check_job(cluster, placement, traffic, &Observed::Time(1.0))?;
    let replay = Replay {
        cluster,
        traffic,
        rails,
        seed: settings.seed,
    };
    let message_packets = replay.message_packets(placement.len() as u32);
    let healthy = ran(replay.run(placement, &LinkStates::default(), message_packets, 0)?);
    let healthy_ps = (healthy.0 * 1e6) as u64;
    states
        .iter()
        .map(|state| {
            if *state == LinkStates::default() {
                return Ok(Replayed::Ran {
                    time_us: healthy.0,
                    packets: healthy.1,
                });
            }
            Ok(
                match replay.run(placement, state, message_packets, healthy_ps)? {
                    Outcome::Ran { time_us, packets } => Replayed::Ran { time_us, packets },
                    Outcome::CannotRun(cable) => Replayed::CannotRun(cluster.cable_label(cable)),
                },
            )
        })
        .collect()
}

/// The rails every host of the job has on the fabric, after checking the job's inputs.
fn check_job(
    cluster: &Cluster,
    placement: &[usize],
    traffic: &JobTraffic,
    observed: &Observed,
) -> Result<Vec<usize>, PlanError> {
    let bad = |reason: String| {
        PlanError::Fabric(format!("what-if on cluster `{}`: {reason}", cluster.name))
    };
    if placement.len() < 2 {
        return Err(PlanError::TooFewHosts(placement.len()));
    }
    let mut seen = HashSet::new();
    for &host in placement {
        let name = cluster.hosts.get(host).map(|h| h.name.clone());
        let name = name.ok_or_else(|| {
            bad(format!(
                "no host of index {host} ({} hosts)",
                cluster.hosts.len()
            ))
        })?;
        if !seen.insert(host) {
            return Err(bad(format!("host `{name}` is placed twice")));
        }
    }
    if let Some(ranks) = traffic.ranks() {
        if ranks != placement.len() {
            return Err(bad(format!(
                "the workload file has {ranks} ranks but the job has {} hosts",
                placement.len()
            )));
        }
    }
    if let Observed::Time(us) = observed {
        if !(us.is_finite() && *us > 0.0) {
            return Err(bad(format!(
                "the observed time {us} us is not a positive number"
            )));
        }
    }
    let cabled: HashSet<RnicPort> = cluster.rnic_ports().collect();
    let most = placement
        .iter()
        .map(|&h| cluster.hosts[h].rnics.len())
        .min()
        .unwrap_or(0);
    let rails: Vec<usize> = (0..most)
        .filter(|&rnic| {
            placement
                .iter()
                .all(|&host| cabled.contains(&RnicPort { host, rnic }))
        })
        .collect();
    if rails.is_empty() {
        return Err(bad(
            "the job's hosts have no RNIC index in common on the fabric".to_string(),
        ));
    }
    Ok(rails)
}

/// The outcome of each of `runs`, the first being `healthy` (already run). A scenario set
/// as an earlier one is (the true states are the measured background alone, say) is that
/// run, not run twice, and moves no packets of its own; which earlier one, by index.
fn run_once_each(
    replay: &Replay,
    runs: &[(&str, Vec<usize>, LinkStates)],
    healthy: Outcome,
    message_packets: u64,
    healthy_ps: u64,
) -> Result<(Vec<Outcome>, Vec<Option<usize>>), PlanError> {
    let same_as: Vec<Option<usize>> = (0..runs.len())
        .map(|i| {
            let (_, order, states) = &runs[i];
            runs[..i]
                .iter()
                .position(|(_, o, s)| o == order && s == states)
        })
        .collect();
    let fresh: Vec<_> = (1..runs.len())
        .filter(|&i| same_as[i].is_none())
        .map(|i| runs[i].clone())
        .collect();
    let mut ran = run_all(replay, &fresh, message_packets, healthy_ps)?.into_iter();
    let mut outcomes = vec![healthy];
    for alias in &same_as[1..] {
        outcomes.push(match *alias {
            Some(j) => match outcomes[j] {
                Outcome::Ran { time_us, .. } => Outcome::Ran {
                    time_us,
                    packets: 0,
                },
                cannot => cannot,
            },
            None => ran.next().expect("one outcome per fresh run"),
        });
    }
    Ok((outcomes, same_as))
}

/// Runs the scenarios at once, one thread each.
fn run_all(
    replay: &Replay,
    runs: &[(&str, Vec<usize>, LinkStates)],
    message_packets: u64,
    healthy_ps: u64,
) -> Result<Vec<Outcome>, PlanError> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(_, order, states)| {
                scope.spawn(move || replay.run(order, states, message_packets, healthy_ps))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a replay does not panic"))
            .collect()
    })
}

fn ran(outcome: Outcome) -> (f64, u64) {
    match outcome {
        Outcome::Ran { time_us, packets } => (time_us, packets),
        Outcome::CannotRun(_) => unreachable!("a healthy fabric has no cable down"),
    }
}

fn time(outcome: Outcome) -> Option<f64> {
    match outcome {
        Outcome::Ran { time_us, .. } => Some(time_us),
        Outcome::CannotRun(_) => None,
    }
}

/// What explains the time, in words, and the scenarios run to find it.
struct Answer {
    explains: &'static str,
    element: Option<String>,
    evidence: String,
    trials: Vec<WhatIfScenario>,
}

/// What the comparison needs beside the times.
struct Judge<'a> {
    cluster: &'a Cluster,
    replay: &'a Replay<'a>,
    placement: &'a [usize],
    measured: &'a LinkStates,
    message_packets: u64,
    healthy_ps: u64,
    healthy_us: f64,
    ideal_us: f64,
}

impl Judge<'_> {
    fn explain(
        &self,
        observed_us: f64,
        background_us: Option<f64>,
        elements_us: Option<f64>,
        suggested_us: Option<f64>,
        matrix: &fabric::traffic::CommMatrix,
    ) -> Result<Answer, PlanError> {
        let healthy = self.healthy_us;
        let versus = format!(
            "observed {observed_us:.1} us against {healthy:.1} us on the healthy fabric ({:+.0} %)",
            100.0 * (observed_us / healthy - 1.0)
        );
        let answer = |explains, evidence| Answer {
            explains,
            element: None,
            evidence,
            trials: Vec::new(),
        };
        if observed_us <= healthy * (1.0 + HEALTHY_TOLERANCE) {
            let best = suggested_us.map_or(healthy, |s| s.min(healthy));
            let bound = format!(
                "the line-rate bound (every RNIC sending all the time) of {:.1} us",
                self.ideal_us
            );
            if let Some(s) = suggested_us.filter(|&s| s < healthy * (1.0 - MAPPING_GAIN)) {
                return Ok(answer(
                    "mapping",
                    format!(
                        "{versus}: the fabric explains nothing; the suggested mapping runs in \
                         {s:.1} us on it ({:.0} % faster)",
                        100.0 * (1.0 - s / healthy)
                    ),
                ));
            }
            if best > self.ideal_us * PATTERN_FACTOR {
                return Ok(answer(
                    "pattern",
                    format!(
                        "{versus}: the fabric explains nothing; even the best healthy replay \
                         takes {best:.1} us, {:.1} x {bound}: the pattern itself is slow",
                        best / self.ideal_us
                    ),
                ));
            }
            return Ok(answer(
                "none",
                format!(
                    "{versus}: the job runs as on a healthy fabric{}; {:.2} x {bound}",
                    match suggested_us {
                        Some(s) => format!("; the suggested mapping ({s:.1} us) gains little"),
                        None => "; its placement is already the suggested one".to_string(),
                    },
                    best / self.ideal_us
                ),
            ));
        }
        let excess = observed_us - healthy;
        let share = |t: Option<f64>| t.map(|t| (t - healthy) / excess);
        let (background, elements) = (share(background_us), share(elements_us));
        let shares = format!(
            "other jobs' traffic alone reproduces {}, the cables' states alone {}",
            percent(background, "none measured"),
            percent(elements, "none measured")
        );
        let by_background = background.filter(|&s| s >= EXPLAINS_SHARE);
        let by_elements = elements.filter(|&s| s >= EXPLAINS_SHARE);
        match (by_background, by_elements) {
            (Some(b), e) if e.is_none_or(|e| b > e) => Ok(answer(
                "background_traffic",
                format!("{versus}; of the excess, {shares}: other jobs' traffic explains it"),
            )),
            (_, Some(_)) => {
                let (element, named, trials) = self.name_element(matrix)?;
                Ok(Answer {
                    explains: "element",
                    element,
                    evidence: format!("{versus}; of the excess, {shares}: {named}"),
                    trials,
                })
            }
            _ => Ok(answer(
                "unexplained",
                format!(
                    "{versus}; of the excess, {shares}: neither explains it (a host, or a \
                     state of the fabric not measured)"
                ),
            )),
        }
    }

    /// The cable that explains the time: the only measured one on the job's routes, or the
    /// one whose replay alone is slowest among those tried.
    fn name_element(
        &self,
        matrix: &fabric::traffic::CommMatrix,
    ) -> Result<(Option<String>, String, Vec<WhatIfScenario>), PlanError> {
        let on_routes = self.job_cables(matrix);
        let elements = self.measured.elements();
        let mut suspects: Vec<(Cable, &str)> = elements
            .iter()
            .copied()
            .filter(|(c, _)| on_routes.contains(c))
            .collect();
        if suspects.is_empty() {
            // A down cable off the routes may still move them.
            suspects = elements;
        }
        let label = |c: Cable| self.cluster.cable_label(c);
        match suspects.as_slice() {
            [(cable, state)] => Ok((
                Some(label(*cable)),
                format!("the {state} cable at {} explains it", label(*cable)),
                Vec::new(),
            )),
            several if several.len() <= MAX_ELEMENT_TRIALS => {
                let runs: Vec<(&str, Vec<usize>, LinkStates)> = several
                    .iter()
                    .map(|&(c, _)| ("element", self.placement.to_vec(), self.measured.only(c)))
                    .collect();
                let outcomes = run_all(self.replay, &runs, self.message_packets, self.healthy_ps)?;
                let mut trials = Vec::new();
                let mut worst: Option<(f64, Cable, &str)> = None;
                for (&(cable, state), outcome) in several.iter().zip(outcomes) {
                    let time_us = match outcome {
                        Outcome::Ran { time_us, packets } => {
                            trials.push(WhatIfScenario {
                                name: format!("element {}", label(cable)),
                                setting: format!("only the {state} cable at {}", label(cable)),
                                time_us,
                                packets,
                            });
                            time_us
                        }
                        Outcome::CannotRun(_) => f64::INFINITY,
                    };
                    if worst.is_none_or(|(t, _, _)| time_us > t) {
                        worst = Some((time_us, cable, state));
                    }
                }
                let (_, cable, state) = worst.expect("several suspects");
                Ok((
                    Some(label(cable)),
                    format!(
                        "of the {} cables tried alone, the {state} one at {} slows the job most",
                        several.len(),
                        label(cable)
                    ),
                    trials,
                ))
            }
            many => {
                let names: Vec<String> = many.iter().map(|&(c, _)| label(c)).collect();
                Ok((
                    None,
                    format!(
                        "one of the cables at {} explains it (too many to try one by one)",
                        names.join(", ")
                    ),
                    Vec::new(),
                ))
            }
        }
    }

    /// Every cable the job's traffic crosses, on every rail, host cables included.
    fn job_cables(&self, matrix: &fabric::traffic::CommMatrix) -> HashSet<Cable> {
        let mut cables = HashSet::new();
        for flow in matrix.flows() {
            for &rnic in &self.replay.rails {
                let a = RnicPort {
                    host: self.placement[flow.src as usize],
                    rnic,
                };
                let b = RnicPort {
                    host: self.placement[flow.dst as usize],
                    rnic,
                };
                cables.extend(self.cluster.cables_between(a, b));
            }
        }
        cables
    }
}

/// `64 %`, or `what` when there is no share.
fn percent(share: Option<f64>, what: &str) -> String {
    share.map_or(what.to_string(), |s| format!("{:.0} %", 100.0 * s))
}

/// `leaf1/5 degraded to 50 %, leaf2/9 down, other jobs at 60 % of line rate`, or `none`.
fn describe(cluster: &Cluster, states: &LinkStates) -> String {
    let label = |c: Cable| cluster.cable_label(c);
    let mut parts: Vec<String> = Vec::new();
    parts.extend(
        states
            .degraded
            .iter()
            .map(|&(c, f)| format!("{} degraded to {:.0} %", label(c), 100.0 * f)),
    );
    parts.extend(
        states
            .flapping
            .iter()
            .map(|&(c, f)| format!("{} flapping, replayed at {:.0} %", label(c), 100.0 * f)),
    );
    parts.extend(states.down.iter().map(|&c| format!("{} down", label(c))));
    parts.extend(
        states
            .errors
            .iter()
            .map(|&(c, r)| format!("{} corrupting {r} packets a second", label(c))),
    );
    parts.extend(
        states
            .background
            .map(|l| format!("other jobs at {:.0} % of line rate", 100.0 * l)),
    );
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// `node001, node002, ... node016` (the first and last few of a long list).
fn host_list(cluster: &Cluster, order: &[usize]) -> String {
    let names: Vec<&str> = order
        .iter()
        .map(|&h| cluster.hosts[h].name.as_str())
        .collect();
    if names.len() <= 8 {
        names.join(", ")
    } else {
        format!(
            "{}, ... {}",
            names[..6].join(", "),
            names[names.len() - 2..].join(", ")
        )
    }
}
