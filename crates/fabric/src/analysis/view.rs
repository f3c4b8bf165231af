//! The link view: for every switch output port (one direction of one link), what a chosen set
//! of samples says about it: weighted count, congested count, congested fraction (thesis
//! 3.2) and utilised bandwidth (4.2).
//!
//! The samples are either the receivers' telemetry of some jobs (all of them, as a network
//! administrator sees it, or one application's own, as its user sees it: thesis 4.4) in one
//! arrival-time window or all of them (Figure 4.11), or the simulator's exact counts.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::bandwidth;
use crate::sim::{JobResult, SimResult};
use crate::telemetry::estimate::{
    congested_fraction, congested_fraction_sd, scale_to_all_packets, thresholded_counts,
    weighted_count_variance, Z_99,
};
use crate::telemetry::{PortSamples, TelemetryConfig, TelemetryKind};
use crate::topology::{Level, NodeId, Peer, PortIndex, PortRef, Topology};

/// Where the numbers come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// What the receivers' reservoir samples estimate (what a real fabric would give).
    Telemetry,
    /// The simulator's exact per-port counts.
    GroundTruth,
}

/// Whose samples: every job's, or only some (an application sees only its own packets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobSelection {
    /// Every job's samples (what a network administrator sees).
    All,
    /// Indices into [`SimResult::jobs`].
    Only(Vec<usize>),
}

impl JobSelection {
    /// `all`, or job names separated by commas, as a user types them.
    pub fn parse(spec: &str, jobs: &[JobResult]) -> Result<Self, ViewError> {
        if spec.trim() == "all" {
            return Ok(JobSelection::All);
        }
        let indices = spec
            .split(',')
            .map(str::trim)
            .map(|name| {
                jobs.iter()
                    .position(|job| job.name == name)
                    .ok_or_else(|| ViewError::UnknownJob {
                        name: name.to_string(),
                        known: jobs
                            .iter()
                            .map(|job| job.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JobSelection::Only(indices))
    }

    fn contains(&self, job: usize) -> bool {
        match self {
            JobSelection::All => true,
            JobSelection::Only(jobs) => jobs.contains(&job),
        }
    }
}

/// Which arrival-time windows (thesis Figure 4.11) are summed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WindowSelection {
    /// Every window summed: the whole run.
    All,
    /// One window, by its index.
    Only(usize),
}

impl WindowSelection {
    fn contains(self, window: usize) -> bool {
        match self {
            WindowSelection::All => true,
            WindowSelection::Only(only) => only == window,
        }
    }
}

/// The time a port's bytes are divided by to give its bandwidth.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeBase {
    /// From the first to the last arrival of the selected packets (thesis 4.2: arrival time
    /// stands in for the time a packet crossed the link).
    ArrivalSpan,
    /// The selected window's width (the whole run when all windows are summed).
    WindowWidth,
}

/// What a view is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewSpec {
    /// Telemetry estimates or exact counts.
    pub source: Source,
    /// Whose packets.
    pub jobs: JobSelection,
    /// Which arrival-time windows.
    pub window: WindowSelection,
    /// Telemetry only: the ground truth has no arrival times and always uses the run length.
    pub time_base: TimeBase,
}

impl ViewSpec {
    /// Telemetry samples of `jobs`, all windows, bandwidth over the arrival span.
    pub fn telemetry(jobs: JobSelection) -> Self {
        ViewSpec {
            source: Source::Telemetry,
            jobs,
            window: WindowSelection::All,
            time_base: TimeBase::ArrivalSpan,
        }
    }

    /// The telemetry of `jobs` when the run has it, otherwise the exact counts.
    pub fn for_run(result: &SimResult, jobs: JobSelection) -> Self {
        let has_telemetry = result
            .telemetry
            .as_ref()
            .is_some_and(|s| s.config.kind != TelemetryKind::Off);
        if has_telemetry {
            Self::telemetry(jobs)
        } else {
            Self::ground_truth(jobs)
        }
    }

    /// The exact counts of `jobs` over the whole run.
    pub fn ground_truth(jobs: JobSelection) -> Self {
        ViewSpec {
            source: Source::GroundTruth,
            ..Self::telemetry(jobs)
        }
    }

    /// The same samples restricted to one arrival-time window.
    pub fn in_window(self, window: usize) -> Self {
        ViewSpec {
            window: WindowSelection::Only(window),
            ..self
        }
    }
}

/// One arrival-time window, `[start_ps, end_ps)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeWindow {
    /// The window's number, from 0.
    pub index: usize,
    /// Its start, ps of simulated time.
    pub start_ps: u64,
    /// Its end (excluded), ps.
    pub end_ps: u64,
}

/// What a view was built from, for titles and for the diagnosis' evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleSet {
    /// Telemetry estimates or exact counts.
    pub source: Source,
    /// The telemetry algorithm (`None` for the ground truth).
    pub telemetry: Option<TelemetryKind>,
    /// Names of the jobs whose packets were counted.
    pub jobs: Vec<String>,
    /// Whether that is every job of the run: if not, traffic of the others is invisible.
    pub all_jobs: bool,
    /// The window, when one was selected.
    pub window: Option<TimeWindow>,
    /// What the bandwidth estimates divide by.
    pub time_base: TimeBase,
    /// The time the bandwidth estimates divide by, picoseconds.
    pub span_ps: u64,
}

impl SampleSet {
    /// One line for plot titles and reports, e.g. "simulated; reservoir telemetry of job
    /// primary (1 of 2 jobs); window 2: 1.90-3.70 ms".
    pub fn describe(&self, total_jobs: usize) -> String {
        let what = match self.telemetry {
            None => "exact counts (ground truth)".to_string(),
            Some(kind) => format!("{} telemetry", kind_name(kind)),
        };
        let whose = if self.all_jobs {
            "all jobs".to_string()
        } else {
            let noun = if self.jobs.len() == 1 { "job" } else { "jobs" };
            format!(
                "{noun} {} ({} of {total_jobs} jobs)",
                self.jobs.join(", "),
                self.jobs.len()
            )
        };
        let when = match self.window {
            None => "whole run".to_string(),
            Some(w) => format!("window {}: {}", w.index, time_range(w.start_ps, w.end_ps)),
        };
        format!("simulated; {what} of {whose}; {when}")
    }
}

fn kind_name(kind: TelemetryKind) -> &'static str {
    match kind {
        TelemetryKind::Off => "no",
        TelemetryKind::Reservoir => "reservoir",
        TelemetryKind::Reservoir1Bit => "1-bit reservoir",
        TelemetryKind::SingleBit => "single-bit",
    }
}

/// `start-end unit`, in the unit that suits the end (us below a millisecond, else ms).
pub fn time_range(start_ps: u64, end_ps: u64) -> String {
    let (scale, unit) = if end_ps < 1_000_000_000 {
        (1e6, "us")
    } else {
        (1e9, "ms")
    };
    format!(
        "{:.2}-{:.2} {unit}",
        start_ps as f64 / scale,
        end_ps as f64 / scale
    )
}

/// Which way a link goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Towards the cores.
    Up,
    /// Towards the compute nodes.
    Down,
}

/// One switch output port as the selected samples see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkStats {
    /// The switch output port.
    pub port: PortRef,
    /// Its dense index ([`Topology::port_index`]).
    pub index: PortIndex,
    /// Level of the switch the link leaves.
    pub level: Level,
    /// Towards the cores or towards the nodes.
    pub direction: Direction,
    /// The compute node at the far end, for a leaf's down port (an endpoint link).
    pub endpoint: Option<NodeId>,
    /// Weighted count: estimated packets through the port (thesis 3.2).
    pub count: f64,
    /// The weighted count of the tagged packets alone (thesis 5.1; `count` when every packet
    /// is tagged, and for the ground truth): the sample behind the estimates, which decides
    /// how far they can be trusted.
    pub tagged_count: f64,
    /// One standard deviation of `count`, estimated from the samples (thesis 3.3:
    /// `Var[W] = N (l - 1)`); 0 for the ground truth.
    pub count_sd: f64,
    /// Estimated packets marked congested at the port.
    pub congested: f64,
    /// One standard deviation of `congested` (thesis 3.3: `Var[Ŵ] = M (g - 1)`).
    pub congested_sd: f64,
    /// `congested / count`, 0 without count, clamped to [0, 1] (thesis 3.3): the two counts
    /// are sampled independently, so their quotient alone can exceed 1
    /// ([`congested_fraction`]).
    pub congested_fraction: f64,
    /// One standard deviation of the quotient before clamping (thesis 3.3's Taylor expansion
    /// of `Var[F]`), from the samples' own variances; 0 for the ground truth.
    pub congested_fraction_sd: f64,
    /// Estimated utilised bandwidth over the view's time span, Gb/s (thesis 4.2).
    pub gbps: f64,
}

/// Every switch output port of the tree, indexed by [`PortIndex`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkView {
    /// What the view was built from.
    pub samples: SampleSet,
    /// Jobs in the run (for "1 of 2 jobs").
    pub total_jobs: usize,
    /// Line rate of every link, each direction.
    pub link_gbps: f64,
    /// Every switch output port, by [`PortIndex`].
    pub links: Vec<LinkStats>,
}

/// Why a view cannot be built from a run.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ViewError {
    /// Telemetry was asked for but the run has none.
    #[error("the run has no telemetry samples (telemetry was off); use the ground truth")]
    NoTelemetry,
    /// A job name given is not in the run.
    #[error("no job named {name:?} (jobs: {known})")]
    UnknownJob {
        /// The name given.
        name: String,
        /// The run's job names, comma-separated.
        known: String,
    },
    /// A job index is beyond the run's jobs.
    #[error("job {job} is not in the run ({jobs} jobs)")]
    JobOutOfRange {
        /// The index given.
        job: usize,
        /// Jobs in the run.
        jobs: usize,
    },
    /// A window index is beyond the telemetry's windows.
    #[error("window {window} does not exist (the samples have {windows})")]
    WindowOutOfRange {
        /// The index given.
        window: usize,
        /// Windows in the samples.
        windows: usize,
    },
    /// A window was asked of the ground truth, which is not split in time.
    #[error("the ground truth is not split into time windows; use the telemetry samples")]
    GroundTruthHasNoWindows,
    /// The counts are of another tree than the one given.
    #[error("the counts have {found} ports but the topology has {expected}: they come from another tree")]
    WrongTree {
        /// Ports the counts have.
        found: usize,
        /// Ports the tree has.
        expected: usize,
    },
    /// 1-bit telemetry samples lack the candidate counts Q its estimator needs (thesis 5.3).
    #[error("1-bit samples without their candidate counts (Q of thesis 5.3)")]
    MissingCandidates,
}

/// What a source gives besides its counts: the parts of [`SampleSet`] it decides.
struct Basis {
    telemetry: Option<TelemetryKind>,
    window: Option<TimeWindow>,
    time_base: TimeBase,
    span_ps: u64,
}

/// Per-port estimates before they become [`LinkStats`].
struct PortTotals {
    count: Vec<f64>,
    /// The count before scaling tagged packets up to all packets: the sample size.
    tagged_count: Vec<f64>,
    congested: Vec<f64>,
    bytes: Vec<f64>,
    /// Estimated variances of `count` and `congested` (0 for exact counts).
    count_variance: Vec<f64>,
    congested_variance: Vec<f64>,
}

impl LinkView {
    /// Builds the view of `spec` from a finished run.
    pub fn build(
        topology: &Topology,
        result: &SimResult,
        spec: &ViewSpec,
    ) -> Result<Self, ViewError> {
        let jobs = result.jobs.len();
        if let JobSelection::Only(selected) = &spec.jobs {
            if let Some(&job) = selected.iter().find(|&&job| job >= jobs) {
                return Err(ViewError::JobOutOfRange { job, jobs });
            }
        }
        let (totals, basis) = match spec.source {
            Source::Telemetry => from_telemetry(topology, result, spec)?,
            Source::GroundTruth => from_ground_truth(topology, result, spec)?,
        };
        let samples = SampleSet {
            source: spec.source,
            telemetry: basis.telemetry,
            jobs: (0..jobs)
                .filter(|&j| spec.jobs.contains(j))
                .map(|j| result.jobs[j].name.clone())
                .collect(),
            all_jobs: (0..jobs).all(|j| spec.jobs.contains(j)),
            window: basis.window,
            time_base: basis.time_base,
            span_ps: basis.span_ps,
        };
        let links = (0..topology.num_ports())
            .map(|e| link_stats(topology, e as PortIndex, &totals, samples.span_ps))
            .collect();
        Ok(LinkView {
            samples,
            total_jobs: jobs,
            link_gbps: result.config.link_gbps,
            links,
        })
    }

    /// The statistics of one port, by its dense index (panics on an index outside the tree:
    /// indices come from the same tree).
    pub fn link(&self, index: PortIndex) -> &LinkStats {
        &self.links[index as usize]
    }

    /// Of all packet-hops, the fraction marked congested (Table 4.1's "fraction of congested
    /// hops"): sum of congested counts over sum of counts.
    pub fn congested_hop_fraction(&self) -> f64 {
        let count: f64 = self.links.iter().map(|l| l.count.max(0.0)).sum();
        let congested: f64 = self.links.iter().map(|l| l.congested.max(0.0)).sum();
        congested_fraction(congested, count)
    }

    /// The link with the highest congested fraction among those with at least `min_count`
    /// weighted packets sampled (fewer give a fraction too noisy to rank, thesis 3.3).
    pub fn worst_link(&self, min_count: f64) -> Option<&LinkStats> {
        self.links
            .iter()
            .filter(|l| l.tagged_count >= min_count)
            .max_by(|a, b| a.congested_fraction.total_cmp(&b.congested_fraction))
    }

    /// "simulated; ... " line describing the samples.
    pub fn describe(&self) -> String {
        self.samples.describe(self.total_jobs)
    }
}

fn from_telemetry(
    topology: &Topology,
    result: &SimResult,
    spec: &ViewSpec,
) -> Result<(PortTotals, Basis), ViewError> {
    let samples = result
        .telemetry
        .as_ref()
        .filter(|s| s.config.kind != TelemetryKind::Off)
        .ok_or(ViewError::NoTelemetry)?;
    let windows = samples.windows();
    if let WindowSelection::Only(window) = spec.window {
        if window >= windows {
            return Err(ViewError::WindowOutOfRange { window, windows });
        }
    }
    let sum = samples.sum(|job, window| spec.jobs.contains(job) && spec.window.contains(window));
    check_ports(topology, sum.counts.len())?;
    let window = match (spec.window, samples.window_ps) {
        // The last window ends with the run (it also holds every later arrival when the
        // run needed more than `MAX_WINDOWS`).
        (WindowSelection::Only(index), Some(width)) => {
            let start_ps = index as u64 * width;
            let end_ps = if index + 1 == windows {
                result.end_ps.max(start_ps + 1)
            } else {
                start_ps + width
            };
            Some(TimeWindow {
                index,
                start_ps,
                end_ps,
            })
        }
        _ => None,
    };
    let span_ps = match spec.time_base {
        TimeBase::ArrivalSpan if sum.packets > 0 => sum.last_arrival_ps - sum.first_arrival_ps,
        TimeBase::ArrivalSpan => 0,
        TimeBase::WindowWidth => window.map_or(result.end_ps, |w| w.end_ps - w.start_ps),
    };
    let totals = telemetry_totals(&samples.config, &sum, topology.diameter())?;
    let basis = Basis {
        telemetry: Some(samples.config.kind),
        window,
        time_base: spec.time_base,
        span_ps,
    };
    Ok((totals, basis))
}

/// The receivers' sums as estimates of all packets: for the 1-bit kinds, counts below the
/// false-positive threshold `L sqrt(Q) z` are set to 0 first (thesis 5.3, with L the
/// diameter and z = Φ^-1(0.99), as the thesis suggests when counts are not kept per path
/// length), each with its own Q; a port whose count is dropped loses its bytes too. Then the
/// tagged packets stand for all packets (5.1).
fn telemetry_totals(
    config: &TelemetryConfig,
    sum: &PortSamples,
    diameter: u32,
) -> Result<PortTotals, ViewError> {
    let one_bit = matches!(
        config.kind,
        TelemetryKind::Reservoir1Bit | TelemetryKind::SingleBit
    );
    let (count, congested, bytes) = if one_bit {
        if sum.candidates.len() != sum.counts.len()
            || sum.congested_candidates.len() != sum.counts.len()
        {
            return Err(ViewError::MissingCandidates);
        }
        let count = thresholded_counts(&sum.counts, &sum.candidates, diameter, Z_99);
        let congested =
            thresholded_counts(&sum.congested, &sum.congested_candidates, diameter, Z_99);
        let bytes = sum
            .bytes
            .iter()
            .zip(&count)
            .map(|(&b, &c)| if c > 0.0 { b } else { 0.0 })
            .collect();
        (count, congested, bytes)
    } else {
        (sum.counts.clone(), sum.congested.clone(), sum.bytes.clone())
    };
    // Variances of the estimates of all packets: every tagged sample of weight w stands for
    // w / f packets, so the squares scale by 1 / f^2 (estimate::weighted_count_moments).
    let f = config.tag_fraction;
    let variance = |sum_sq: &[f64], sum: &[f64]| -> Vec<f64> {
        sum_sq
            .iter()
            .zip(sum)
            .map(|(&sq, &w)| weighted_count_variance(sq / (f * f), w / f))
            .collect()
    };
    Ok(PortTotals {
        count_variance: variance(&sum.counts_sq, &sum.counts),
        congested_variance: variance(&sum.congested_sq, &sum.congested),
        count: scale_to_all_packets(&count, f),
        tagged_count: count,
        congested: scale_to_all_packets(&congested, f),
        bytes: scale_to_all_packets(&bytes, f),
    })
}

fn from_ground_truth(
    topology: &Topology,
    result: &SimResult,
    spec: &ViewSpec,
) -> Result<(PortTotals, Basis), ViewError> {
    if spec.window != WindowSelection::All {
        return Err(ViewError::GroundTruthHasNoWindows);
    }
    let truth = &result.ground_truth;
    let ports = topology.num_ports();
    check_ports(topology, truth.bytes.len())?;
    for per_job in truth.packets.iter().chain(&truth.congested) {
        check_ports(topology, per_job.len())?;
    }
    let selected_sum = |per_job: &[Vec<u64>], e: usize| -> f64 {
        per_job
            .iter()
            .enumerate()
            .filter(|(j, _)| spec.jobs.contains(*j))
            .map(|(_, counts)| counts[e] as f64)
            .sum()
    };
    let count: Vec<f64> = (0..ports)
        .map(|e| selected_sum(&truth.packets, e))
        .collect();
    let bytes = (0..ports)
        .map(|e| {
            let all: f64 = truth.packets.iter().map(|counts| counts[e] as f64).sum();
            bandwidth::share_of_bytes(truth.bytes[e] as f64, count[e], all)
        })
        .collect();
    let totals = PortTotals {
        tagged_count: count.clone(),
        congested: (0..ports)
            .map(|e| selected_sum(&truth.congested, e))
            .collect(),
        count,
        bytes,
        count_variance: vec![0.0; ports],
        congested_variance: vec![0.0; ports],
    };
    let basis = Basis {
        telemetry: None,
        window: None,
        time_base: TimeBase::WindowWidth,
        span_ps: result.end_ps,
    };
    Ok((totals, basis))
}

fn check_ports(topology: &Topology, found: usize) -> Result<(), ViewError> {
    let expected = topology.num_ports();
    if found == expected {
        Ok(())
    } else {
        Err(ViewError::WrongTree { found, expected })
    }
}

fn link_stats(
    topology: &Topology,
    index: PortIndex,
    totals: &PortTotals,
    span_ps: u64,
) -> LinkStats {
    let e = index as usize;
    let port = topology.port_ref(index);
    let endpoint = match topology.peer(port) {
        Peer::Node(node) => Some(node),
        Peer::Switch { .. } => None,
    };
    LinkStats {
        port,
        index,
        level: topology.level(port.switch),
        direction: if topology.is_up(port) {
            Direction::Up
        } else {
            Direction::Down
        },
        endpoint,
        count: totals.count[e],
        count_sd: totals.count_variance[e].sqrt(),
        tagged_count: totals.tagged_count[e],
        congested: totals.congested[e],
        congested_sd: totals.congested_variance[e].sqrt(),
        congested_fraction: congested_fraction(totals.congested[e], totals.count[e]),
        congested_fraction_sd: congested_fraction_sd(
            totals.congested[e],
            totals.congested_variance[e],
            totals.count[e],
            totals.count_variance[e],
        ),
        gbps: bandwidth::gbps(totals.bytes[e], span_ps),
    }
}

/// A switch as the thesis names them: "leaf 43", "aggregation 175", "core 300" (global
/// switch numbers).
pub fn switch_name(topology: &Topology, switch: crate::topology::SwitchId) -> String {
    let level = match topology.level(switch) {
        Level::Leaf => "leaf",
        Level::Aggregation => "aggregation",
        Level::Core => "core",
    };
    format!("{level} {}", switch.0)
}

/// A directed link: "leaf 43 port 33 -> aggregation 175", "leaf 0 port 0 -> node 0".
pub fn link_name(topology: &Topology, port: PortRef) -> String {
    let far = match topology.peer(port) {
        Peer::Node(node) => format!("node {}", node.0),
        Peer::Switch { switch, .. } => switch_name(topology, switch),
    };
    format!(
        "{} port {} -> {far}",
        switch_name(topology, port.switch),
        port.port
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ranges_pick_their_unit() {
        assert_eq!(time_range(0, 500_000_000), "0.00-500.00 us");
        assert_eq!(time_range(1_900_000_000, 3_700_000_000), "1.90-3.70 ms");
    }

    #[test]
    fn job_selection_by_name() {
        let jobs: Vec<JobResult> = ["primary", "background"]
            .iter()
            .map(|name| JobResult {
                name: name.to_string(),
                ..JobResult::default()
            })
            .collect();
        assert_eq!(JobSelection::parse("all", &jobs), Ok(JobSelection::All));
        assert_eq!(
            JobSelection::parse("background", &jobs),
            Ok(JobSelection::Only(vec![1]))
        );
        assert_eq!(
            JobSelection::parse("primary, background", &jobs),
            Ok(JobSelection::Only(vec![0, 1]))
        );
        let err = JobSelection::parse("ring", &jobs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no job named \"ring\" (jobs: primary, background)"
        );
    }
}
