/*!
The hostping analyzer: from one probe run to a report that names intra-host bottlenecks and
their root causes (Hostping 4.3, and beyond it where the paper fell short).

This crate owns the judgement: whether the host is idle or busy ([`mode`]) and which symptoms
call for a probe ([`symptoms`]); path status against the baseline or, on a busy RNIC, against
its own affinitive paths, and the relative reference of a host without a baseline
([`relative`]); binary tomography (Algorithm 1) and the groups of links it cannot
tell apart; the root-cause rules (PCIe misconfiguration, RNIC misconfiguration, failed or
overloaded links); and flapping across runs. It consumes `model` values and produces a
[`model::Report`]. It never touches sysfs, verbs or the virtual host, never reads the clock
or the environment, and keeps no state: the history is a value the caller passes in, and
follow-up tests are run by the caller through [`FollowUp`].

Beside a report's rules it judges a probed RNIC pair between two hosts part by part ([`pair`]:
host A's path, host B's, the network; DESIGN 4.6), and where the throughput of an IOTLB sweep (`check --iotlb`)
falls off ([`iotlb_knee`], HotNets'22 3.1).

# Order of the rules

1. path status (idle: against the baseline; busy: relative), Algorithm 1 and indistinguishable groups
   ([`tomography`]); a link that only latency-bound paths cross is normal down to the loss
   they could have shown, and its report says that bound (module `bound`);
2. PCIe misconfiguration first: slow GPU paths that should turn in a switch (ACS / ATS);
   then IOMMU congestion: slow memory paths of an RNIC whose translated DMA the IOTLB bound
   of HotNets'22 3.1 explains (module `iommu`);
3. RNICs abnormal to all affinitive endpoints: slow start, Tx window (follow-up streams),
   overloaded or failed RNIC link;
4. a minimal cover of the remaining abnormal paths by abnormal link groups; overloaded or
   failed by utilisation, or a memory channel whose bus the cores take (HotNets'22 3.2);
   in busy mode, an abnormal RNIC with no abnormal link suspects its
   own link; an RNIC whose service traffic fills its line rate has its own link overloaded,
   whether or not it pauses (Hostping 4.3, busy mode; DESIGN 4.2);
5. re-probes, within an idle run, of the paths that alone judge a link ([`FollowUp::latency`]);
6. flapping from the history and from those re-probes;
7. ODP stalls from the RNICs' transport counters and ODP regions ([`odp`], ISPASS'21),
   which no probe can show;
8. what was not judged (module `judged`): links Algorithm 1 left uncertain
   make the report `inconclusive` (DESIGN 4.3, exit status 3), never healthy, with the paths
   and the reason in `not_judged`.

```
use analyze::{analyze, History, Input, NoFollowUp};
use model::{Baseline, BaselinePath, HostSnapshot, LatencyStats, Mode, Op, PathMeasurement,
            PathOutcome, PathProbe, ProbeRun, Provenance, Thresholds};

let host = model::builtin::load("dgx-a100").unwrap().unwrap();
let stats = |us: f64| LatencyStats { samples: 1, min_us: us, p50_us: us, p90_us: us, p99_us: us, max_us: us };
let healthy = |p: &model::Path| if p.affinitive { 199.0 } else { 120.0 };
// gpu4's PCIe link lost bandwidth: rnic2 reaches gpu4 at 120 Gb/s instead of 199.
let measured = |p: &model::Path| {
    if p.rnic.as_str() == "rnic2" && p.endpoint.as_str() == "gpu4" { 120.0 } else { healthy(p) }
};
let run = ProbeRun {
    host: host.name.clone(), provenance: Provenance::Simulated, mode: Mode::Idle,
    started_ns: 0, finished_ns: 1,
    paths: host.paths().iter().map(|p| PathProbe {
        rnic: p.rnic.clone(), endpoint: p.endpoint.clone(), started_ns: 0, stream: None,
        outcome: PathOutcome::Measured(PathMeasurement {
            op: Op::Write, small_bytes: 1, large_bytes: 131072,
            small: stats(1.5), large: stats(1.5 + 1048.576 / measured(p)),
            bandwidth_gbps: measured(p), verified_bytes: None,
        }),
    }).collect(),
};
let baseline = Baseline {
    host: host.name.clone(), provenance: Provenance::Simulated, runs: 1,
    paths: host.paths().iter().map(|p| BaselinePath {
        rnic: p.rnic.clone(), endpoint: p.endpoint.clone(), latency_us: 1.5, bandwidth_gbps: healthy(p),
    }).collect(),
    measured_with: Default::default(),
};
let history = History::new(8);
let input = Input {
    host: &host, run: &run, baseline: &baseline, snapshot: &HostSnapshot::default(),
    thresholds: &Thresholds::default(), history: &history, run_index: 0,
};
let report = analyze(&input, &mut NoFollowUp);
assert!(!report.healthy);
assert_eq!(report.diagnoses.len(), 1);
assert_eq!(report.diagnoses[0].cause.as_str(), "link_failure");
assert_eq!(report.diagnoses[0].links, ["gpu4--lsw4".into()] as [model::LinkId; 1]);
```
*/
#![deny(missing_docs)]

mod bound;
mod causes;
pub mod collectives;
mod evidence;
mod facts;
mod flap_common;
mod flap_cover;
mod flap_within;
mod flapping;
pub mod fleet;
pub mod follow_up;
pub mod history;
pub mod host_baseline;
mod iommu;
pub mod iotlb_knee;
pub mod job;
mod judged;
pub mod lint;
mod localize;
mod membus;
mod misconfig;
pub mod mode;
pub mod odp;
pub mod pair;
pub mod pair_baseline;
pub mod relative;
mod reprobe;
pub mod ring_model;
pub mod robust;
mod status;
pub mod symptoms;
pub mod tomography;

pub use follow_up::{FollowUp, FollowUpTest, NoFollowUp};
pub use history::{History, RunRecord};
pub use mode::{mode_from_snapshot, ModeChoice};
pub use symptoms::{symptoms, Symptom};

use facts::Facts;
use model::{
    Baseline, HostSnapshot, HostTopology, LinkReport, Mode, PathReport, PathStatus, ProbeRun,
    Report, Thresholds,
};

/// Everything one analysis reads.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The host model the run was made on.
    pub host: &'a HostTopology,
    /// The probe run: `run.mode` (idle or busy) and the probed paths.
    pub run: &'a ProbeRun,
    /// Per-path baseline of a healthy idle host of the same model.
    pub baseline: &'a Baseline,
    /// The monitors' view taken before the probe (excludes probe traffic).
    pub snapshot: &'a HostSnapshot,
    /// Thresholds (Hostping 5 defaults).
    pub thresholds: &'a Thresholds,
    /// Earlier runs of this host, oldest first.
    pub history: &'a History,
    /// Goes into `Report.run`.
    pub run_index: u32,
}

/// Analyses one probe run: path and link status, diagnoses, and flapping from the history.
///
/// `follow_up` is asked for streaming tests only in idle mode, only for an RNIC abnormal to
/// all of its affinitive endpoints. Diagnoses are sorted by cause, then links.
pub fn analyze(input: &Input, follow_up: &mut dyn FollowUp) -> Report {
    let f = Facts::gather(input);
    let mut remaining = f.abnormal_paths();
    let mut diagnoses = misconfig::diagnose(&f, &mut remaining);
    diagnoses.extend(iommu::diagnose(&f, &mut remaining));
    diagnoses.extend(causes::rnic_rule(&f, follow_up, &mut remaining));
    diagnoses.extend(localize::set_cover(&f, &mut remaining));
    diagnoses.extend(causes::busy_rnic_link(&f));
    diagnoses.extend(causes::saturated_rnic_links(&f, &diagnoses));
    diagnoses.extend(odp::diagnose(&f));
    // What is left in `remaining` lies only on normal links: gray, no cause from one run.
    let reprobes = reprobe::run(&f, follow_up);
    let run = input.run;
    let busy = match run.mode {
        Mode::Busy => mode::busy_because(input.host, input.snapshot, input.thresholds),
        Mode::Idle => Vec::new(),
    };
    let (inconclusive, not_judged) = judged::not_judged(&f, &busy);

    let mut report = Report {
        host: run.host.clone(),
        mode: run.mode,
        busy,
        healthy: false,
        inconclusive,
        not_judged,
        provenance: run.provenance,
        run: input.run_index,
        paths: f
            .verdicts
            .iter()
            .zip(reprobes)
            .map(|(v, reprobes)| PathReport {
                reprobes,
                ..v.to_report()
            })
            .collect(),
        links: f
            .links
            .iter()
            .zip(input.host.links())
            .zip(&f.bounds)
            .map(|((v, l), bound)| LinkReport {
                id: v.id.clone(),
                kind: l.kind,
                status: v.status,
                abnormal_cnt: v.abnormal_cnt,
                utilisation: input.snapshot.utilisation(&l.id),
                bound: bound.clone(),
            })
            .collect(),
        diagnoses: Vec::new(),
        baseline: None,
        thresholds: Some(*input.thresholds),
    };
    let current = RunRecord::from_report(&report);
    flapping::diagnose(
        input.host,
        input.thresholds,
        input.history,
        &current,
        &mut diagnoses,
    );
    diagnoses.sort_by(|a, b| {
        (a.cause, &a.links, &a.rnic, &a.evidence).cmp(&(b.cause, &b.links, &b.rnic, &b.evidence))
    });
    // Healthy only when judged (DESIGN 4.3): no cause, no abnormal path, no failed probe,
    // and every link judged. A host with findings and unjudged links is both unhealthy and
    // inconclusive; its exit status is 1 (a finding outranks "could not judge").
    report.healthy = diagnoses.is_empty()
        && !report.inconclusive
        && report
            .paths
            .iter()
            .all(|p| p.status != PathStatus::Abnormal && !p.failed());
    report.diagnoses = diagnoses;
    report
}
