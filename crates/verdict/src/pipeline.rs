//! The job verdict's one sequence (DESIGN 4.7, issue 28's follow-ups and what-if): gather,
//! judge, follow-up pairs, judge, switch ports read now, judge, suspected hosts checked
//! again (DESIGN 4.9's confirmation), what-if. Written once here
//! and run by the simulated cluster and by the collector, each implementing [`Measure`]
//! (what it can measure and how), so that the same evidence gives the same verdict, byte
//! for byte, wherever it is judged.
//!
//! The steps are futures because the collector measures through agents and samplers on its
//! async runtime; the simulated cluster answers at once and runs the sequence with
//! [`block_on`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use model::job::{
    FollowUp, JobEvidence, JobPair, JobReport, NotJudgedItem, ProbePhase, ProbeRound,
};

use crate::follow_up::{self, PortRead};
use crate::job::judge_with_what_if;
use crate::recheck;
use crate::spec::{Cluster, RnicPort};
use crate::whatif::{JobTraffic, Observed, WhatIfSettings};

/// One step of a [`Measure`]: a future that may borrow the measurer.
pub type Step<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a verdict runs beside the window's evidence.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Follow-ups: pairs that split what the evidence could not, and switch ports read now.
    pub probe: bool,
    /// Replay the job's traffic on the fabric and say what explains its time.
    pub what_if: Option<WhatIfAsked>,
}

/// A what-if as asked.
#[derive(Clone, Debug)]
pub struct WhatIfAsked {
    /// The job's traffic.
    pub traffic: JobTraffic,
    /// What the job was seen to do: a simulated job's true link states, a real job's time.
    pub observed: Observed,
    /// The replays' seed.
    pub settings: WhatIfSettings,
}

/// What gathering the window's evidence found.
pub struct Gathered {
    /// The evidence.
    pub evidence: JobEvidence,
    /// What was followed up to gather it (the collector's checks asked of hosts without a
    /// run in the window), first among the report's follow-ups.
    pub follow_ups: Vec<FollowUp>,
}

/// The follow-up pairs measured, or why none could be.
pub enum PairsMeasured {
    /// The pairs as the verdict reads them; pair `k` answers the `k % n`-th of the `n`
    /// asked (a measurer may run them in several rounds).
    Measured(Vec<JobPair>),
    /// Why none ran, in words (each pair's follow-up says `not run: <why>`).
    NotRun(String),
}

/// The what-if's replay, ready to run on the cluster the job is placed on.
pub struct Replay {
    /// What was asked.
    pub asked: WhatIfAsked,
    /// The evidence so far.
    pub evidence: JobEvidence,
    /// The verdict so far, its follow-ups in it.
    pub report: JobReport,
}

impl Replay {
    /// Replays the job on `placed` and judges again with the what-if in the evidence
    /// ([`judge_with_what_if`]); the new verdict and the evidence.
    pub fn run(mut self, placed: &Cluster) -> (JobReport, JobEvidence) {
        let report = judge_with_what_if(
            placed,
            &self.asked.traffic,
            self.asked.observed,
            &mut self.evidence,
            self.report,
            &self.asked.settings,
        );
        (report, self.evidence)
    }
}

/// What a verdict can measure, and how: the simulated cluster (virtual hosts on the packet
/// simulator) or the collector (agents, samplers, PostgreSQL).
pub trait Measure: Send {
    /// Why no verdict can be given (the evidence could not be gathered, a probe could not
    /// be set up).
    type Error: Send;

    /// The window's evidence.
    fn gather(&mut self) -> Step<'_, Result<Gathered, Self::Error>>;

    /// The cluster the job is placed on, which follow-ups and the what-if plan on; or why
    /// the job is not placed on one (no follow-up is then planned, and the what-if is not
    /// judged for this reason). Known after [`Measure::gather`].
    fn placed(&self) -> Result<&Cluster, String>;

    /// Probes the RNIC pairs `pairs` (ports of [`Measure::placed`]).
    fn measure_pairs(
        &mut self,
        pairs: Vec<(RnicPort, RnicPort)>,
    ) -> Step<'_, Result<PairsMeasured, Self::Error>>;

    /// Reads the switch ports of `reads` now and adds their counters to `evidence`; one
    /// follow-up per read, what came of it. `None`: this measurer reads no switch port now
    /// (the simulated cluster's counters cover the whole window), and none is planned.
    fn read_ports<'a>(
        &'a mut self,
        reads: &'a [PortRead],
        evidence: &'a mut JobEvidence,
    ) -> Step<'a, Option<Vec<FollowUp>>> {
        let _ = (reads, evidence);
        Box::pin(std::future::ready(None))
    }

    /// Checks each host of `hosts` again now, a loopback run of its own
    /// ([`crate::recheck`]): one outcome per host, in order, in [`crate::recheck::checked`]'s
    /// words or `not run: <why>`.
    fn recheck<'a>(&'a mut self, hosts: &'a [String]) -> Step<'a, Vec<String>>;

    /// Runs the what-if's replay ([`Replay::run`] on [`Measure::placed`]): the new verdict
    /// and evidence, or why the replay did not finish.
    fn replay(&mut self, replay: Replay) -> Step<'_, Result<(JobReport, JobEvidence), String>>;
}

/// A job judged, with the evidence its verdict was drawn from.
#[derive(Clone, Debug)]
pub struct JobRun {
    /// The verdict.
    pub report: JobReport,
    /// The evidence, follow-ups' pairs and reads and the what-if included.
    pub evidence: JobEvidence,
}

/// Gathers the evidence and judges it; with `options.probe`, runs the pairs that separate
/// each culprit's candidate cables ([`follow_up::plan`]) and judges again, then reads the
/// switch ports [`follow_up::plan_port_reads`] chooses and judges again, then checks the
/// hosts of the host-side culprits again ([`recheck`]: what confirms or clears them, the
/// verdict unchanged); with `options.what_if`, replays the job's traffic and judges a last time. A step that cannot
/// run says why: a pair or a read in its follow-up, the what-if in `not_judged`.
pub async fn run<M: Measure>(measure: &mut M, options: Options) -> Result<JobRun, M::Error> {
    let Gathered {
        mut evidence,
        mut follow_ups,
    } = measure.gather().await?;
    let mut report = analyze::job::judge(&evidence);
    if options.probe && measure.placed().is_ok() {
        let step = separate(measure, &report, &mut evidence).await?;
        if !step.is_empty() {
            follow_ups.extend(step);
            report = analyze::job::judge(&evidence);
        }
        let step = read_ports(measure, &report, &mut evidence).await;
        if !step.is_empty() {
            follow_ups.extend(step);
            report = analyze::job::judge(&evidence);
        }
    }
    if options.probe {
        follow_ups.extend(recheck(measure, &report).await);
    }
    report.follow_ups = follow_ups;
    let Some(asked) = options.what_if else {
        return Ok(JobRun { report, evidence });
    };
    if let Some(why) = measure.placed().err() {
        report.not_judged.push(what_if_not_run(why));
        return Ok(JobRun { report, evidence });
    }
    let kept = report.clone();
    let replay = Replay {
        asked,
        evidence: evidence.clone(),
        report,
    };
    Ok(match measure.replay(replay).await {
        Ok((report, evidence)) => JobRun { report, evidence },
        Err(why) => {
            let mut report = kept;
            report.not_judged.push(what_if_not_run(why));
            JobRun { report, evidence }
        }
    })
}

/// The follow-up pairs: planned on the placed cluster, measured, added to `evidence`; what
/// was run (or could not be) and why.
async fn separate<M: Measure>(
    measure: &mut M,
    report: &JobReport,
    evidence: &mut JobEvidence,
) -> Result<Vec<FollowUp>, M::Error> {
    let Ok(placed) = measure.placed() else {
        return Ok(Vec::new());
    };
    let plan = follow_up::plan(placed, report, &evidence.nodes);
    let names: Vec<String> = plan
        .pairs
        .iter()
        .map(|&(a, b, _)| format!("{}<->{}", placed.rnic_label(a), placed.rnic_label(b)))
        .collect();
    let mut step = plan.not_planned;
    if plan.pairs.is_empty() {
        return Ok(step);
    }
    let asked = plan.pairs.iter().map(|&(a, b, _)| (a, b)).collect();
    match measure.measure_pairs(asked).await? {
        PairsMeasured::Measured(pairs) => {
            // Pair `k` answers the `k % n`-th asked, in round `k / n`: each is labelled
            // with its round, so that one pair normal in one round and abnormal in the
            // other reads as two phases of a flap, not as two answers.
            let asked = plan.pairs.len();
            let rounds = pairs.len().div_ceil(asked) as u32;
            for (k, mut pair) in pairs.into_iter().enumerate() {
                let (_, _, why) = &plan.pairs[k % asked];
                let round = Some(ProbeRound {
                    phase: ProbePhase::FollowUp,
                    round: (k / asked) as u32 + 1,
                    rounds,
                });
                pair.round = round;
                step.push(FollowUp {
                    kind: "pair".to_string(),
                    target: analyze::job::paths::pair_name(&pair),
                    why: why.clone(),
                    outcome: follow_up::outcome(pair.parts.network_status, pair.reason.as_deref()),
                    round,
                });
                evidence.pairs.push(pair);
            }
        }
        PairsMeasured::NotRun(why) => step.extend(plan.pairs.iter().zip(names).map(
            |((_, _, reason), name)| FollowUp {
                kind: "pair".to_string(),
                target: name,
                why: reason.clone(),
                outcome: format!("not run: {why}"),
                round: None,
            },
        )),
    }
    Ok(step)
}

/// The switch ports read now, planned on the placed cluster; what was read (or could not
/// be) and why. Nothing when the measurer reads no port now.
async fn read_ports<M: Measure>(
    measure: &mut M,
    report: &JobReport,
    evidence: &mut JobEvidence,
) -> Vec<FollowUp> {
    let Ok(placed) = measure.placed() else {
        return Vec::new();
    };
    let plan = follow_up::plan_port_reads(placed, report, evidence);
    match measure.read_ports(&plan.reads, evidence).await {
        Some(read) => plan.not_planned.into_iter().chain(read).collect(),
        None => Vec::new(),
    }
}

/// The hosts of `report`'s host-side culprits, checked again now; a follow-up each.
async fn recheck<M: Measure>(measure: &mut M, report: &JobReport) -> Vec<FollowUp> {
    let suspects = recheck::suspects(report);
    if suspects.is_empty() {
        return Vec::new();
    }
    let hosts: Vec<String> = suspects.iter().map(|s| s.host.clone()).collect();
    let outcomes = measure.recheck(&hosts).await;
    suspects
        .iter()
        .zip(outcomes)
        .map(|(s, outcome)| recheck::follow_up(s, outcome))
        .collect()
}

fn what_if_not_run(why: String) -> NotJudgedItem {
    NotJudgedItem {
        what: "what-if".to_string(),
        why,
    }
}

/// Runs `future` on this thread to its end: the simulated cluster's sequence, whose steps
/// answer at once, and tests.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// Wakes the thread [`block_on`] parks.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::JobTraffic;

    /// A measurer over recorded evidence, which counts what it was asked.
    struct Stub {
        placed: Result<Cluster, String>,
        replayed: Result<(), String>,
        asked_pairs: usize,
        asked_reads: Option<usize>,
        reads_ports: bool,
        rechecked: Vec<String>,
    }

    impl Stub {
        fn on(placed: Result<Cluster, String>) -> Stub {
            Stub {
                placed,
                replayed: Ok(()),
                asked_pairs: 0,
                asked_reads: None,
                reads_ports: true,
                rechecked: Vec::new(),
            }
        }
    }

    impl Measure for Stub {
        type Error = String;

        fn gather(&mut self) -> Step<'_, Result<Gathered, String>> {
            let evidence = JobEvidence {
                nodes: vec!["node001".to_string(), "node009".to_string()],
                ..JobEvidence::default()
            };
            Box::pin(std::future::ready(Ok(Gathered {
                evidence,
                follow_ups: Vec::new(),
            })))
        }

        fn placed(&self) -> Result<&Cluster, String> {
            self.placed.as_ref().map_err(Clone::clone)
        }

        fn measure_pairs(
            &mut self,
            pairs: Vec<(RnicPort, RnicPort)>,
        ) -> Step<'_, Result<PairsMeasured, String>> {
            self.asked_pairs += pairs.len();
            Box::pin(std::future::ready(Ok(PairsMeasured::Measured(Vec::new()))))
        }

        fn read_ports<'a>(
            &'a mut self,
            reads: &'a [PortRead],
            _: &'a mut JobEvidence,
        ) -> Step<'a, Option<Vec<FollowUp>>> {
            self.asked_reads = Some(reads.len());
            let answer = self.reads_ports.then(Vec::new);
            Box::pin(std::future::ready(answer))
        }

        fn recheck<'a>(&'a mut self, hosts: &'a [String]) -> Step<'a, Vec<String>> {
            self.rechecked.extend_from_slice(hosts);
            let outcomes = hosts.iter().map(|_| "checked (stub): healthy".into());
            Box::pin(std::future::ready(outcomes.collect()))
        }

        fn replay(&mut self, replay: Replay) -> Step<'_, Result<(JobReport, JobEvidence), String>> {
            let answer = self
                .replayed
                .clone()
                .map(|()| (replay.report, replay.evidence));
            Box::pin(std::future::ready(answer))
        }
    }

    fn what_if() -> Options {
        Options {
            probe: true,
            what_if: Some(WhatIfAsked {
                traffic: JobTraffic::RingAllReduce { bytes: 1 << 20 },
                observed: Observed::Time(100.0),
                settings: WhatIfSettings::default(),
            }),
        }
    }

    fn pod() -> Cluster {
        Cluster::builtin("pod-32").unwrap().unwrap()
    }

    #[test]
    fn a_job_not_placed_is_not_followed_up_and_its_what_if_says_why() {
        let mut stub = Stub::on(Err("no fabric".to_string()));
        let run = block_on(run(&mut stub, what_if())).unwrap();
        assert_eq!((stub.asked_pairs, stub.asked_reads), (0, None));
        let last = run.report.not_judged.last().unwrap();
        assert_eq!(
            (last.what.as_str(), last.why.as_str()),
            ("what-if", "no fabric")
        );
        assert!(run.evidence.what_if.is_none());
    }

    #[test]
    fn a_replay_that_does_not_finish_leaves_the_verdict_and_says_why() {
        let mut stub = Stub::on(Ok(pod()));
        stub.replayed = Err("the replay did not finish".to_string());
        let before = block_on(run(&mut Stub::on(Ok(pod())), Options::default())).unwrap();
        let run = block_on(run(&mut stub, what_if())).unwrap();
        assert_eq!(run.report.verdict, before.report.verdict);
        let last = run.report.not_judged.last().unwrap();
        assert_eq!(
            (last.what.as_str(), last.why.as_str()),
            ("what-if", "the replay did not finish")
        );
    }

    #[test]
    fn ports_are_read_only_with_probe_and_a_measurer_that_reads_them() {
        let mut stub = Stub::on(Ok(pod()));
        block_on(run(&mut stub, Options::default())).unwrap();
        assert_eq!(stub.asked_reads, None, "no probe: nothing followed up");
        let mut stub = Stub::on(Ok(pod()));
        stub.reads_ports = false;
        let run = block_on(run(&mut stub, what_if())).unwrap();
        // Asked (the plan is the pipeline's), answered "reads none": no follow-up at all.
        assert!(stub.asked_reads.is_some());
        assert!(
            run.report.follow_ups.is_empty(),
            "{:?}",
            run.report.follow_ups
        );
    }
}
