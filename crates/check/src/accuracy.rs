//! `hostping bench`: the scenario suite with its accuracy and false-alarm rate, and the CPU
//! cost of one full-mesh check.

use crate::pipeline::{self, CheckSettings};
use crate::scenario::{Scenario, ScenarioRun};
use analyze::ModeChoice;
use model::report::Verdict;
use model::HostTopology;
use serde::Serialize;
use vhost::VhostConfig;

/// One scenario's row.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioRow {
    /// Case label.
    pub case: String,
    /// What the case is.
    pub title: String,
    /// Expected, in short form.
    pub expected: String,
    /// Diagnosed, in short form.
    pub got: String,
    /// Whether they match.
    pub pass: bool,
}

/// False alarms of one model.
#[derive(Debug, Clone, Serialize)]
pub struct FalseAlarms {
    /// Host model.
    pub host: String,
    /// Healthy runs checked.
    pub runs: u32,
    /// Runs that reported a finding (a diagnosis, an abnormal path, a failed probe).
    pub false_alarms: u32,
    /// Runs with no finding that could not judge every link (not called healthy either;
    /// a model whose links no healthy run can judge shows here, not as an alarm).
    pub inconclusive: u32,
}

/// The whole suite's result.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteResult {
    /// Per scenario.
    pub scenarios: Vec<ScenarioRow>,
    /// Scenarios passed.
    pub passed: usize,
    /// Per built-in model.
    pub false_alarms: Vec<FalseAlarms>,
}

impl SuiteResult {
    /// All scenarios pass and no healthy run raised an alarm.
    pub fn ok(&self) -> bool {
        self.passed == self.scenarios.len() && self.false_alarms.iter().all(|f| f.false_alarms == 0)
    }
}

/// Runs every scenario; `progress(done)` after each.
pub fn run_scenarios(
    scenarios: &[Scenario],
    progress: &mut dyn FnMut(usize),
) -> Vec<(ScenarioRow, ScenarioRun)> {
    scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let outcome = s.run();
            progress(i + 1);
            let row = ScenarioRow {
                case: s.case.clone(),
                title: s.title.clone(),
                expected: s.expected_summary(),
                got: outcome.got_summary(),
                pass: outcome.pass,
            };
            (row, outcome)
        })
        .collect()
}

/// Checks `runs` healthy virtual hosts of a model, seeds 1..=runs, each against the same
/// simulated baseline, and counts the runs that reported a finding and those inconclusive.
pub fn false_alarms(host: &HostTopology, runs: u32, progress: &mut dyn FnMut()) -> FalseAlarms {
    let settings = CheckSettings {
        mode: ModeChoice::Auto,
        ..CheckSettings::default()
    };
    let baseline = crate::record::simulated(
        host,
        crate::record::DEFAULT_RUNS,
        0,
        &settings.latency,
        VhostConfig::default().noise,
    );
    let mut alarms = 0;
    let mut inconclusive = 0;
    for seed in 1..=u64::from(runs) {
        let reports = pipeline::check_virtual(host, Vec::new(), seed, &baseline, &settings);
        let verdicts: Vec<Verdict> = reports.iter().map(|r| r.verdict()).collect();
        if verdicts.contains(&Verdict::Findings) {
            alarms += 1;
        } else if verdicts.contains(&Verdict::Inconclusive) {
            inconclusive += 1;
        }
        progress();
    }
    FalseAlarms {
        host: host.name.clone(),
        runs,
        false_alarms: alarms,
        inconclusive,
    }
}

/// The scenario table as printed by `hostping bench scenarios`.
pub fn suite_table(result: &SuiteResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let w = |f: fn(&ScenarioRow) -> usize| result.scenarios.iter().map(f).max().unwrap_or(0);
    let (wc, wt, we, wg) = (
        w(|r| r.case.len()).max(4),
        w(|r| r.title.len()),
        w(|r| r.expected.len()).max(8),
        w(|r| r.got.len()).max(3),
    );
    let _ = writeln!(
        out,
        "{:<wc$}  {:<wt$}  {:<we$}  {:<wg$}  pass",
        "case", "scenario", "expected", "got"
    );
    for r in &result.scenarios {
        let _ = writeln!(
            out,
            "{:<wc$}  {:<wt$}  {:<we$}  {:<wg$}  {}",
            r.case,
            r.title,
            r.expected,
            r.got,
            if r.pass { "yes" } else { "NO" }
        );
    }
    let n = result.scenarios.len();
    let _ = writeln!(
        out,
        "\naccuracy: {}/{} scenarios ({:.1} %)",
        result.passed,
        n,
        100.0 * result.passed as f64 / n.max(1) as f64
    );
    for f in &result.false_alarms {
        let _ = writeln!(
            out,
            "false alarms, {}: {}/{} healthy noisy runs ({:.1} %); inconclusive {}",
            f.host,
            f.false_alarms,
            f.runs,
            100.0 * f64::from(f.false_alarms) / f64::from(f.runs.max(1)),
            f.inconclusive
        );
    }
    out
}
