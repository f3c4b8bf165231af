//! The job verdict (DESIGN 4.7): what the analyzer is given about a job's hosts, the pairs
//! probed between them, the switch ports on its routes and the simulator's what-if, and what
//! it answers: `host`, `network`, `both`, `neither` or `inconclusive`, with culprits ranked.
//!
//! Every producer (the simulated cluster, the collector's PostgreSQL) fills the same
//! [`JobEvidence`]; `analyze::job` judges it without I/O; [`JobReport`] is the JSON of
//! DESIGN 4.7 (`hostping job --format json`, `GET /api/jobs/verdict`).

use serde::{Deserialize, Serialize};

use crate::pair::{PairEnd, PartStatus};
use crate::report::Report;
use crate::switch_port::SwitchPortCounters;
use crate::LinkId;

/// DESIGN 4.7's verdict.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A host's intra-host network, its RNIC or its settings.
    Host,
    /// Cables, switch ports, congestion in the fabric.
    Network,
    /// Both of the above.
    Both,
    /// The infrastructure is healthy: a slow job comes from its own pattern or placement.
    Neither,
    /// Not enough was measured to judge (`not_judged` says what).
    Inconclusive,
}

impl Verdict {
    /// DESIGN 4.7's exit status: 0 neither, 1 host / network / both, 3 inconclusive.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Neither => 0,
            Verdict::Host | Verdict::Network | Verdict::Both => 1,
            Verdict::Inconclusive => 3,
        }
    }

    /// The name in JSON and words.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Host => "host",
            Verdict::Network => "network",
            Verdict::Both => "both",
            Verdict::Neither => "neither",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// Whether the infrastructure is at fault (host, network or both).
    pub fn infrastructure_at_fault(self) -> bool {
        matches!(self, Verdict::Host | Verdict::Network | Verdict::Both)
    }
}

pub use crate::layer::Layer;

/// One ranked culprit (DESIGN 4.7's `culprits[]`; fields after `evidence` are additions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// Where it lies.
    pub layer: Layer,
    /// The host, for a host's or an RNIC's culprit.
    pub host: Option<String>,
    /// The element: a host's link id (`gpu4--lsw4`) or RNIC (`rnic2`), a cable named by a
    /// port (`leaf2/9`); `None` when the evidence leaves several (`candidates`) or names none
    /// (background traffic, a pattern).
    pub component: Option<String>,
    /// A cause of DESIGN 4.3 for a host; `link_degraded`, `link_flapping`, `link_errors`,
    /// `link_down`, `background_traffic` for the fabric; `pattern` or `mapping` for the job.
    pub cause: String,
    /// How strongly the evidence points at it, 0 to 1; culprits are ranked by it.
    pub score: f64,
    /// The evidence, in words a reader can check against the pairs, ports and hosts.
    pub evidence: String,
    /// The elements the evidence cannot tell apart, when it does not prove one (the
    /// culprit is one of them); empty when `component` is proven.
    #[serde(default)]
    pub candidates: Vec<String>,
    /// What to do about it (drain the host, reseat or replace the cable, ...).
    pub action: String,
}

// Here rather than in crate::action, which would otherwise need this module and this
// module it (JobReport.actions).
impl crate::action::CulpritKey {
    /// The key of `culprit`.
    pub fn of(culprit: &Culprit) -> crate::action::CulpritKey {
        crate::action::CulpritKey {
            layer: culprit.layer,
            host: culprit.host.clone(),
            component: culprit.component.clone(),
            cause: culprit.cause.clone(),
        }
    }
}

/// Something the verdict could not judge, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotJudgedItem {
    /// What: a host, a pair (`node001/rnic0<->node009/rnic0`), a port, a cable.
    pub what: String,
    /// Why, in words.
    pub why: String,
}

/// One RNIC's path on a job's host: from the RNIC to the endpoint the job's data lives in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPath {
    /// The RNIC (`rnic0`).
    pub rnic: String,
    /// The endpoint (`gpu0`, `mem0`).
    pub endpoint: String,
    /// The links the path crosses, when the host's model is known (empty otherwise: then
    /// every diagnosis of the host that names the RNIC or no RNIC is taken to touch it).
    #[serde(default)]
    pub links: Vec<LinkId>,
}

/// One of the job's hosts, as the verdict sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobHost {
    /// Host name.
    pub host: String,
    /// Its own check in the window (DESIGN 4.3), judged against its kind's baseline; `None`
    /// when it has none there (then the host is not judged).
    pub report: Option<Report>,
    /// The paths the job's traffic crosses on it.
    pub job_paths: Vec<JobPath>,
    /// Paths its own check did not find abnormal but its kind's fleet baseline does (a run
    /// judged without a baseline of its own, judged again by the collector).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fleet_abnormal: Vec<FleetAbnormal>,
}

/// A host's path abnormal against its kind's fleet baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetAbnormal {
    /// The RNIC.
    pub rnic: String,
    /// The endpoint.
    pub endpoint: String,
    /// The figures against the fleet's, in words.
    pub evidence: String,
}

/// What every pair object of DESIGN 4.6 starts with: the two ends, the pair's figures split
/// into its parts, and each part judged. The verdict's [`JobPair`] and the simulated mesh's
/// pair embed it flattened, so both write these fields first and in this order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairParts {
    /// The initiating RNIC.
    pub a: PairEnd,
    /// The responding RNIC.
    pub b: PairEnd,
    /// One-way latency (half the round trip, as `ib_write_lat` reports), us; `None` when
    /// the probe could not run.
    pub latency_us: Option<f64>,
    /// Stream bandwidth, Gb/s: the slower direction while each RNIC writes to the other.
    pub bandwidth_gbps: Option<f64>,
    /// Host A's part: half its loopback latency for this RNIC and endpoint, us.
    pub host_a_us: Option<f64>,
    /// Host B's part, us.
    pub host_b_us: Option<f64>,
    /// The network's part: the latency less both host parts, us.
    pub network_us: Option<f64>,
    /// Switch ports from A to B, each switch's input then output port.
    pub route: Vec<String>,
    /// `normal`, `abnormal` (some part is), `uncertain` (some part was not judged), `failed`.
    pub status: PartStatus,
    /// Host A's part judged (its loopback path's status in its own check).
    pub host_a_status: PartStatus,
    /// Host B's part judged.
    pub host_b_status: PartStatus,
    /// The network's part judged.
    pub network_status: PartStatus,
    /// The endpoint on host A the data lives in (`gpu0`, `mem0`).
    pub endpoint_a: String,
    /// The endpoint on host B.
    pub endpoint_b: String,
}

/// One RNIC-to-RNIC pair probed between two of the job's hosts, split into its parts (the
/// fields of DESIGN 4.6's `pairs[]`, and what the verdict needs beside them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPair {
    /// The ends, the figures and their judgement.
    #[serde(flatten)]
    pub parts: PairParts,
    /// The cables the probes crossed, both ways, each named by one end (`leaf2/9`),
    /// including the two RNICs' own cables; a real pair's in route order from A (A's own
    /// cable first, B's last), and without a known route just those two (`node01/rxe_a`).
    pub cables: Vec<String>,
    /// Packets lost on the way and sent again.
    pub retransmitted_packets: u64,
    /// Why the pair is not normal, in words.
    pub reason: Option<String>,
    /// Host A's RNIC's transport counters over a real probe (which way packets were
    /// lost); `None` where not read (a simulated pair, a port that could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_a: Option<crate::odp_bench::TransportDelta>,
    /// Which probe of the pair this is (issue 38): a pair probed in several rounds is one
    /// pair probed several times. `None` where the producer did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<ProbeRound>,
}

/// When a pair was probed: the window's mesh or a follow-up (`--probe`), and which of its
/// rounds (a simulated job's mesh and follow-ups each run twice, half a flap period apart,
/// so that a flapping cable shows in one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRound {
    /// `mesh` or `follow_up`.
    pub phase: ProbePhase,
    /// The round, from 1.
    pub round: u32,
    /// Rounds of that phase.
    pub rounds: u32,
}

/// What probed a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbePhase {
    /// The pairs of the job's window (`hostping mesh` over its hosts).
    Mesh,
    /// Pairs that split a culprit's candidates (`--probe`).
    FollowUp,
}

impl std::fmt::Display for ProbeRound {
    /// `round 1 of 2 (mesh)`, `round 2 of 2 (follow-up)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match self.phase {
            ProbePhase::Mesh => "mesh",
            ProbePhase::FollowUp => "follow-up",
        };
        write!(f, "round {} of {} ({phase})", self.round, self.rounds)
    }
}

/// How much was probed between the job's hosts (issue 38): a pair probed in several
/// rounds counts once in `pairs` and once a round in `probes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeCount {
    /// Distinct pairs of RNICs probed (either way round).
    pub pairs: usize,
    /// Probes run: every entry of `pairs[]`.
    pub probes: usize,
    /// Rounds of the window's mesh.
    pub mesh_rounds: u32,
    /// Of `probes`, those run as follow-ups (`--probe`).
    pub follow_up_probes: usize,
    /// Rounds of the follow-ups.
    pub follow_up_rounds: u32,
}

/// One switch port's counters over the job's window, and outside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPort {
    /// The port (`leaf2/9`).
    pub port: String,
    /// The cable it ends, named as pairs' `cables` name it.
    pub cable: String,
    /// Whether a route between two of the job's RNICs crosses it.
    pub on_job_route: bool,
    /// Counter deltas over the window.
    pub during: SwitchPortCounters,
    /// Seconds the window's deltas span.
    pub during_s: f64,
    /// The same port's deltas outside the window, when they were read.
    pub before: Option<SwitchPortCounters>,
    /// Seconds those deltas span.
    pub before_s: f64,
    /// Of `during_s`, the seconds read now as a follow-up (issue 28 section 2: the port
    /// read through its sampler at the verdict's request, after the window's own reads);
    /// 0 when every count is the window's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub read_now_s: f64,
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// What replaying the job's traffic on the simulated fabric says (issue 28's what-if).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    /// The traffic replayed (`ring all-reduce of 64 MiB over 16 ranks`).
    pub traffic: String,
    /// Each scenario's simulated time, best first as listed by the producer.
    pub scenarios: Vec<WhatIfScenario>,
    /// What explains the time observed: `pattern`, `mapping`, `background_traffic`,
    /// `element` (a degraded element of the infrastructure), `none` (the job ran as it
    /// would on a healthy fabric with a good mapping), `unexplained` (slower than healthy,
    /// and no measured state of the fabric reproduces it: a host, or a state not measured).
    pub explains: String,
    /// The element, when `explains` is `element`.
    pub element: Option<String>,
    /// A mapping that does better, when `explains` is `mapping`: host names in rank order.
    #[serde(default)]
    pub suggested_mapping: Vec<String>,
    /// The comparison in words.
    pub evidence: String,
    /// Always true: every number came from the packet simulator.
    pub simulated: bool,
}

/// One replay of the job's traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfScenario {
    /// `observed`, `healthy`, `background_only`, `elements_only`, `suggested_mapping`, ...
    pub name: String,
    /// What the scenario sets, in words.
    pub setting: String,
    /// The job's simulated time, us.
    pub time_us: f64,
    /// Packets the simulator moved (the work done beside the time).
    pub packets: u64,
}

/// Everything the verdict is given about one job over one window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobEvidence {
    /// The job's id (a Slurm job id), when it has one.
    pub job: Option<String>,
    /// Its hosts, in rank order.
    pub nodes: Vec<String>,
    /// Each host's own check.
    pub hosts: Vec<JobHost>,
    /// The pairs probed between its hosts.
    pub pairs: Vec<JobPair>,
    /// Switch ports: those on the job's routes and, for comparison, others.
    pub ports: Vec<JobPort>,
    /// Cables between the job's RNICs that its routes cross, named as `cables` name them:
    /// what a verdict of `neither` must have seen judged.
    pub job_cables: Vec<String>,
    /// The simulator's what-if, when it ran.
    pub what_if: Option<WhatIf>,
    /// Whether the measurements came from the simulators.
    pub simulated: bool,
    /// What the producer could not find out (the job's routes on an unknown fabric, a run
    /// that does not read): not judged, so never called healthy.
    #[serde(default)]
    pub not_judged: Vec<NotJudgedItem>,
    /// The job's own collectives (NCCL Inspector, DESIGN 4.8), when any record was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives: Option<CollectiveEvidence>,
}

/// The job's collectives as read: each rank's summaries and what the reading skipped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectiveEvidence {
    /// Records read.
    pub records: u64,
    /// Per rank, collective kind and size, and time bucket.
    pub summaries: Vec<crate::inspector::RankSummary>,
    /// What was not used.
    pub skipped: crate::inspector::Skipped,
    /// What the job's topology allows a communicator's bus bandwidth to reach, set by
    /// producers that know the hosts (DESIGN 4.8's `expected`); unknown by default.
    #[serde(default)]
    pub expected_busbw_gbs: ExpectedBusBandwidth,
    /// Some of the records were written by a simulation (`metadata.git_rev`
    /// [`crate::inspector::SIMULATED_GIT_REV`]): a verdict judged with them is simulated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// The bus bandwidth the job's hardware allows, GB/s, by where a communicator's ranks are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExpectedBusBandwidth {
    /// A communicator across hosts (`nnodes` > 1): the RNICs' line rate.
    #[serde(default)]
    pub across_hosts: Option<f64>,
    /// A communicator within one host (`nnodes` 1): its NVLink or PCIe rate.
    #[serde(default)]
    pub within_host: Option<f64>,
}

impl ExpectedBusBandwidth {
    /// A job's, from each of its hosts': the host that allows least bounds the job, so each
    /// side is the least of the hosts', unknown when there is no host or one does not say.
    pub fn least_of(hosts: &[ExpectedBusBandwidth]) -> Self {
        ExpectedBusBandwidth {
            across_hosts: least_known(hosts.iter().map(|h| h.across_hosts)),
            within_host: least_known(hosts.iter().map(|h| h.within_host)),
        }
    }
}

/// The least of `values`; `None` when there is none or one is `None`.
pub fn least_known(mut values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .try_fold(f64::INFINITY, |least, v| v.map(|v| least.min(v)))
        .filter(|v| v.is_finite())
}

/// `hostping job --format json` and `GET /api/jobs/verdict` (DESIGN 4.7; fields after
/// `simulated` are additions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// The job's id.
    pub job: Option<String>,
    /// Its hosts.
    pub nodes: Vec<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// The culprits, best first.
    pub culprits: Vec<Culprit>,
    /// The pairs probed.
    pub pairs: Vec<JobPair>,
    /// What could not be judged.
    pub not_judged: Vec<NotJudgedItem>,
    /// Whether the measurements came from the simulators.
    pub simulated: bool,
    /// The verdict in words for people, one sentence.
    pub summary: String,
    /// Faults found that are not the job's: on hosts it does not use, on cables or ports
    /// off its routes, on host paths it does not cross.
    pub not_the_jobs: Vec<Culprit>,
    /// Each host's health as its check judged it.
    pub hosts: Vec<JobHostSummary>,
    /// The switch ports whose counters the verdict used, with what it found.
    pub ports: Vec<JobPortSummary>,
    /// The what-if, when it ran.
    pub what_if: Option<WhatIf>,
    /// Follow-up measurements run (`--probe`) and why.
    pub follow_ups: Vec<FollowUp>,
    /// The smallest loss each layer's measurements could have seen (issue 38): what lies
    /// under it is not called healthy, only not seen.
    #[serde(default)]
    pub sensitivity: Sensitivity,
    /// Distinct pairs probed, probes and rounds (issue 38: `pairs` lists every probe).
    #[serde(default)]
    pub probed: ProbeCount,
    /// The job's own symptom from its collectives (DESIGN 4.8); absent when no record was
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symptom: Option<crate::inspector::Symptom>,
    /// What the policy would do with this verdict (DESIGN 4.9, `hostping job --actions
    /// FILE`); absent without a policy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<crate::action::Action>,
}

/// The smallest losses the job's measurements would have flagged, layer by layer: a
/// verdict of `neither` says nothing of a loss under them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// The hosts' own checks on the job's paths.
    pub host: LayerSensitivity,
    /// The pairs between the job's hosts (the fabric).
    pub network: LayerSensitivity,
}

/// How far one layer was judged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerSensitivity {
    /// The share of its rate an element of the layer had to lose before a measurement
    /// would call it abnormal (0.2: losses of up to 20 % do not show), the largest over
    /// what the layer measured; `None` when nothing of the layer was measured.
    pub min_visible_loss: Option<f64>,
    /// What the bound rests on, in words: the threshold and what it is applied to.
    pub basis: String,
}

/// A host in the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobHostSummary {
    /// Host name.
    pub host: String,
    /// Its own check's verdict (`None` when it has no run in the window): `true` says
    /// only that nothing its probes reached was abnormal past Abnormal_th. The job's
    /// verdict judges the host on the job's paths alone: `job_paths_healthy`,
    /// `unjudged_links` and `judged` say what that covers, and the report's `sensitivity`
    /// how small a loss could have been seen.
    pub healthy: Option<bool>,
    /// Causes its check found.
    pub causes: Vec<String>,
    /// Whether the job's paths on the host are healthy in its check: `None` when one was not
    /// judged (or the host has no run).
    #[serde(default)]
    pub job_paths_healthy: Option<bool>,
    /// The host's links the job's verdict did not judge: those no job path crosses (a fault
    /// there is not the job's, and their health is not vouched for) and those on the job's
    /// paths that its check left uncertain.
    #[serde(default)]
    pub unjudged_links: Vec<String>,
    /// What was judged, in words (`the job's paths are healthy; links not on them were not
    /// judged: mem0--cpu0, ...`).
    #[serde(default)]
    pub judged: String,
}

/// A switch port in the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPortSummary {
    /// The port.
    pub port: String,
    /// Whether the job's routes cross it.
    pub on_job_route: bool,
    /// `normal`, `errors`, `down`, `congested`.
    pub state: String,
    /// Error counts a second over the window (symbol, receive errors, discards).
    pub errors_per_s: f64,
    /// XmitWait ticks a second over the window (the tick is the switch's own).
    pub xmit_wait_per_s: f64,
}

/// A follow-up measurement (`--probe`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FollowUp {
    /// `loopback`, `pair`, `ports`.
    pub kind: String,
    /// What was measured (`node003 loopback`, `node001/rnic0<->node017/rnic0`).
    pub target: String,
    /// The hypotheses it separates.
    pub why: String,
    /// What it found.
    pub outcome: String,
    /// The round of a follow-up pair (each runs in both phases of a flap); `None` for
    /// other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<ProbeRound>,
}
