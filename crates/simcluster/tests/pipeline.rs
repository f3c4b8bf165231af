//! One verdict pipeline (issue 37): the simulated cluster and a stand-in for the collector,
//! given the same evidence, write the same verdict, byte for byte.
//!
//! The stand-in measures as the collector does, through futures that wait before they
//! answer, but serves what the simulated job recorded: the window's evidence, then the
//! follow-up pairs it measured. Both run `verdict::pipeline::run`, so any step of the
//! sequence written twice would show here as a difference.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use model::job::{JobEvidence, JobPair, JobReport};
use simcluster::job::{JobOptions, JobRun};
use simcluster::mesh::MeshSettings;
use simcluster::whatif::{JobTraffic, LinkStates, Observed, WhatIfSettings};
use simcluster::{Cluster, ClusterFaults, RnicPort};
use verdict::pipeline::{
    self, Gathered, Measure, Options, PairsMeasured, Replay, Step, WhatIfAsked,
};

/// A future that is pending once (waking its task at once) and then ready with `T`: a step
/// that waits, as the collector's database and agents make it wait.
struct Later<T>(Option<T>, bool);

impl<T: Unpin> Future for Later<T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if !self.1 {
            self.1 = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.0.take().expect("polled after it was ready"))
    }
}

fn later<'a, T: Unpin + Send + 'a>(value: T) -> Step<'a, T> {
    Box::pin(Later(Some(value), false))
}

/// The collector's shape, the simulated job's recorded measurements.
struct Recorded<'a> {
    cluster: &'a Cluster,
    evidence: Option<JobEvidence>,
    pairs: Option<Vec<JobPair>>,
    /// The outcomes of the hosts it checked again.
    rechecks: Vec<String>,
}

impl Measure for Recorded<'_> {
    type Error = String;

    fn gather(&mut self) -> Step<'_, Result<Gathered, String>> {
        let evidence = self.evidence.take().ok_or("gathered twice".to_string());
        later(evidence.map(|evidence| Gathered {
            evidence,
            follow_ups: Vec::new(),
        }))
    }

    fn placed(&self) -> Result<&Cluster, String> {
        Ok(self.cluster)
    }

    fn measure_pairs(
        &mut self,
        _: Vec<(RnicPort, RnicPort)>,
    ) -> Step<'_, Result<PairsMeasured, String>> {
        let pairs = self.pairs.take().ok_or("probed twice".to_string());
        later(pairs.map(PairsMeasured::Measured))
    }

    fn recheck<'a>(&'a mut self, hosts: &'a [String]) -> Step<'a, Vec<String>> {
        later(self.rechecks.drain(..hosts.len()).collect())
    }

    fn replay(&mut self, replay: Replay) -> Step<'_, Result<(JobReport, JobEvidence), String>> {
        later(Ok(replay.run(self.cluster)))
    }
}

#[test]
fn the_simulated_cluster_and_a_real_measurer_give_the_same_verdict_bytes() {
    let cluster = Cluster::builtin("pod-32").unwrap().unwrap();
    // Two hosts across two leaves: one pair a rail, whose route leaves a degraded uplink
    // among cables it cannot split, so the follow-ups run.
    // node009 also has a degraded PCIe link of its own: its host is checked again.
    let texts = vec![
        "fabric:degrade:leaf1/9:0.25".to_string(),
        "node009:degrade:gpu0--lsw0:0.3".to_string(),
    ];
    let faults = ClusterFaults::parse(&texts, &cluster).unwrap();
    let settings = MeshSettings {
        nodes: Some(model::hostlist::expand("node[001,009]").unwrap()),
        ..MeshSettings::default()
    };
    let traffic = JobTraffic::RingAllReduce { bytes: 1 << 24 };
    let options = JobOptions {
        probe: true,
        what_if: Some(traffic.clone()),
        collectives: None,
    };
    let simulated: JobRun =
        simcluster::job::run(&cluster, &faults, &settings, &options, &|_, _| {}).unwrap();

    // What the simulated job measured: the window (the mesh is seeded, so gathering again
    // gives it), then the follow-up pairs after it.
    let window = simcluster::job::evidence(&cluster, &faults, &settings, &|_, _| {}).unwrap();
    let follow_up_pairs = simulated.evidence.pairs[window.pairs.len()..].to_vec();
    let mut real = Recorded {
        cluster: &cluster,
        evidence: Some(window),
        pairs: Some(follow_up_pairs),
        rechecks: simulated
            .report
            .follow_ups
            .iter()
            .filter(|f| f.kind == verdict::recheck::KIND)
            .map(|f| f.outcome.clone())
            .collect(),
    };
    let options = Options {
        probe: true,
        what_if: Some(WhatIfAsked {
            traffic,
            observed: Observed::Replay(LinkStates::from_faults(&faults.fabric)),
            settings: WhatIfSettings {
                seed: settings.seed,
            },
        }),
    };
    let answered = pipeline::block_on(pipeline::run(&mut real, options)).unwrap();

    let bytes = |r: &JobReport| serde_json::to_vec(r).unwrap();
    assert_eq!(
        String::from_utf8(bytes(&answered.report)).unwrap(),
        String::from_utf8(bytes(&simulated.report)).unwrap()
    );
    assert_eq!(
        serde_json::to_vec(&answered.evidence).unwrap(),
        serde_json::to_vec(&simulated.evidence).unwrap()
    );
    // node009's culprit was checked again, on a fresh run of its host, and found again.
    let node009 = simulated
        .report
        .culprits
        .iter()
        .find(|c| c.host.as_deref() == Some("node009"))
        .expect("node009's own fault named");
    let recheck = simulated
        .report
        .follow_ups
        .iter()
        .find(|f| f.kind == "recheck")
        .expect("node009 checked again");
    assert_eq!(recheck.target, "node009 loopback");
    assert!(
        recheck
            .outcome
            .starts_with(&format!("checked (simulated): {}", node009.cause)),
        "{recheck:?}"
    );
    // The sequence ran every step it has here: follow-ups, and the what-if judged.
    assert!(
        !simulated.report.follow_ups.is_empty(),
        "{}",
        simulated.report.summary
    );
    assert!(
        simulated.evidence.what_if.is_some(),
        "{:?}",
        simulated.report.not_judged
    );
}
