//! Beyond the papers: on the thesis' case studies (`cases`), does a switch-port counter
//! sampler at 1, 10 or 100 Hz (LDMS ibfabric's rates) find the congestion-tree roots that
//! in-packet reservoir sampling finds (thesis 4.1)? Faster rates are added to show what rate
//! the answer needs.
//!
//! Every case's runs are simulated once with switch-port counter snapshots every
//! [`FINEST_PS`]; a sampler at f Hz is the snapshots 1/f apart, its first sweep at the
//! start of the run (the most favourable phase: the run falls in as few windows as can be).
//! After the run the fabric is idle, so the counters hold their last values for the rest of
//! a window. Each window's roots come from `analysis::counter_roots`; a rate's roots are
//! the union over its windows. The reference is the ground truth's congestion trees (the
//! simulator's exact per-packet congestion marks), and reservoir sampling's roots are the
//! trees of its estimated view, both with the diagnosis' default thresholds.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::analysis::counter_roots::{counter_roots, CounterThresholds, CounterWindow};
use crate::analysis::view::{link_name, JobSelection};
use crate::analysis::{trees::congestion_trees, LinkView, Thresholds, ViewSpec};
use crate::cases::{self, Runner, Scale};
use crate::sim::{CounterSnapshot, SimConfig, SimResult};
use crate::topology::{PortIndex, Topology};
use crate::traffic::{JobPlan, TrafficError};

/// Snapshot interval of the runs: 100 us, the window of a 10 kHz sampler.
pub const FINEST_PS: u64 = 100_000_000;

/// The sampling rates compared, Hz.
pub const RATES_HZ: [u32; 5] = [1, 10, 100, 1_000, 10_000];

/// Roots one telemetry found, against the ground truth's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Found {
    /// Roots found.
    pub roots: usize,
    /// Of them, ground-truth roots.
    pub true_roots: usize,
}

/// One run of a case study.
#[derive(Clone, Debug, Serialize)]
pub struct RootsRow {
    /// The case study (`stencil`, `reduction`, `background`).
    pub case: String,
    /// The run within it (a mapping, a reduction).
    pub run: String,
    /// Simulated time of the run, us.
    pub simulated_us: f64,
    /// The ground truth's roots, by name (e.g. `leaf 3 port 0 -> node 54`).
    pub truth: Vec<String>,
    /// What the in-packet reservoir telemetry found.
    pub reservoir: Found,
    /// Per rate of [`RATES_HZ`]: the sampler's windows over the run, and its roots.
    pub counters: Vec<CounterFound>,
    /// Counters read exactly at the run's start and end: one window as long as the run, the
    /// best any sampling rate can do with a run's counters.
    pub counters_whole_run: Found,
}

/// What a switch-port counter sampler at one rate found.
#[derive(Clone, Debug, Serialize)]
pub struct CounterFound {
    /// The sampling rate, Hz.
    pub hz: u32,
    /// Sampling windows over the run.
    pub windows: usize,
    /// Roots found against the ground truth's.
    pub found: Found,
}

/// Runs the three case studies at `scale` through `run` (which must keep `config`, counter
/// snapshots added) and compares the roots of every run.
pub fn roots_study(
    scale: Scale,
    seed: u64,
    run: &mut Runner,
) -> Result<Vec<RootsRow>, TrafficError> {
    type Case = fn(Scale, u64, &mut Runner) -> Result<cases::CaseReport, TrafficError>;
    let all: [(&str, Case); 3] = [
        ("stencil", cases::stencil),
        ("reduction", cases::reduction),
        ("background", cases::background),
    ];
    let mut rows = Vec::new();
    for (case, study) in all {
        // Each run is compared as it ends, so no run's result is kept or copied.
        let mut compared =
            |label: &str, topology: &Topology, plans: Vec<JobPlan>, config: SimConfig| {
                let config = SimConfig {
                    counter_interval_ps: Some(FINEST_PS),
                    ..config
                };
                let result = run(label, topology, plans, config);
                rows.push(compare(case, label, topology, &result));
                result
            };
        study(scale, seed, &mut compared)?;
    }
    Ok(rows)
}

/// The roots of one run, by the ground truth, reservoir sampling and counters at each rate.
pub fn compare(case: &str, run: &str, topology: &Topology, result: &SimResult) -> RootsRow {
    let thresholds = Thresholds::default();
    let roots_of = |spec: &ViewSpec| -> BTreeSet<PortIndex> {
        let view = LinkView::build(topology, result, spec).expect("a run's own view");
        congestion_trees(
            topology,
            &view,
            |e| thresholds.is_congested(view.link(e)),
            thresholds.upstream_ratio,
        )
        .into_iter()
        .map(|tree| tree.root)
        .collect()
    };
    let truth = roots_of(&ViewSpec::ground_truth(JobSelection::All));
    let found = |roots: &BTreeSet<PortIndex>| Found {
        roots: roots.len(),
        true_roots: roots.intersection(&truth).count(),
    };
    let reservoir = match result.telemetry {
        Some(_) => found(&roots_of(&ViewSpec::for_run(result, JobSelection::All))),
        None => found(&BTreeSet::new()),
    };
    let counters = RATES_HZ
        .iter()
        .map(|&hz| {
            let windows = windows(&result.counters, 1_000_000_000_000 / u64::from(hz));
            let roots: BTreeSet<PortIndex> = windows
                .iter()
                .flat_map(|w| {
                    counter_roots(
                        topology,
                        w,
                        result.config.link_gbps,
                        &CounterThresholds::default(),
                    )
                })
                .collect();
            CounterFound {
                hz,
                windows: windows.len(),
                found: found(&roots),
            }
        })
        .collect();
    let whole_run = match result.counters.last() {
        Some(end) => counter_roots(
            topology,
            &CounterWindow {
                start_ps: 0,
                window_ps: end.at_ps,
                xmit_bytes: end.ports.iter().map(|p| p.xmit_bytes).collect(),
                xmit_wait_ps: end.ports.iter().map(|p| p.xmit_wait_ps).collect(),
            },
            result.config.link_gbps,
            &CounterThresholds::default(),
        )
        .into_iter()
        .collect(),
        None => BTreeSet::new(),
    };
    RootsRow {
        case: case.to_string(),
        run: run.to_string(),
        simulated_us: result.end_ps as f64 / 1e6,
        truth: truth
            .iter()
            .map(|&e| link_name(topology, topology.port_ref(e)))
            .collect(),
        reservoir,
        counters,
        counters_whole_run: found(&whole_run),
    }
}

/// A sampler's windows of `period_ps` from the run's snapshots (taken every [`FINEST_PS`]
/// and at the end, which the period must be a multiple of); the last window is a whole
/// period, the counters idle after the run.
pub fn windows(snapshots: &[CounterSnapshot], period_ps: u64) -> Vec<CounterWindow> {
    let Some(last) = snapshots.last() else {
        return Vec::new();
    };
    // The counters at time t: the latest snapshot at or before it (zero before the first).
    let at = |t: u64| snapshots.iter().rev().find(|s| s.at_ps <= t);
    let mut out = Vec::new();
    let mut start = 0;
    while start < last.at_ps {
        let end = (start + period_ps).min(last.at_ps);
        let now = at(end).expect("the end snapshot is at or before it");
        let delta = match at(start) {
            Some(then) => now.delta_since(then),
            None => now.ports.clone(),
        };
        out.push(CounterWindow {
            start_ps: start,
            window_ps: period_ps,
            xmit_bytes: delta.iter().map(|p| p.xmit_bytes).collect(),
            xmit_wait_ps: delta.iter().map(|p| p.xmit_wait_ps).collect(),
        });
        start += period_ps;
    }
    out
}

/// The table of rows, for a terminal.
pub fn render_text(rows: &[RootsRow]) -> String {
    let mut out = String::from(
        "congestion-tree roots found (found / of them true), simulated; counters: one sampler, \
         first sweep at the run's start\n",
    );
    out += &format!(
        "{:<11} {:<34} {:>9} {:>5} {:>9}",
        "case", "run", "sim us", "truth", "reservoir"
    );
    for hz in RATES_HZ {
        out += &format!(" {:>9}", format!("{hz} Hz"));
    }
    out += &format!(" {:>9}\n", "whole run");
    let cell = |f: &Found| format!("{}/{}", f.roots, f.true_roots);
    for row in rows {
        out += &format!(
            "{:<11} {:<34} {:>9.1} {:>5} {:>9}",
            row.case,
            truncate(&row.run, 34),
            row.simulated_us,
            row.truth.len(),
            cell(&row.reservoir)
        );
        for c in &row.counters {
            out += &format!(" {:>9}", cell(&c.found));
        }
        out += &format!(" {:>9}\n", cell(&row.counters_whole_run));
    }
    out
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        text.chars().take(width - 1).collect::<String>() + "~"
    }
}
