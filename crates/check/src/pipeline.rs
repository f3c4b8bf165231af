//! One check, end to end: monitor snapshot, choice of mode and plan, probe, analysis,
//! history (DESIGN 1). It is generic over the engine, so the virtual host and the real
//! verbs engine run through the same code.

use analyze::{FollowUp, FollowUpTest, History, Input, ModeChoice};
use model::{
    Baseline, BaselineKind, ComponentId, HostSnapshot, HostTopology, Mode, Path, PathMeasurement,
    Report, StreamResult, Thresholds,
};
use probe::{LatencySpec, Monitor, Plan, ProbeEngine, RunSpec, StreamSpec};

/// Idle time between runs of a series: the host-status cadence of Hostping 5 (5 min).
pub const DEFAULT_CADENCE_NS: u64 = 300 * 1_000_000_000;

/// What a series of checks does.
#[derive(Debug, Clone)]
pub struct CheckSettings {
    /// How many runs.
    pub runs: u32,
    /// Mode choice.
    pub mode: ModeChoice,
    /// The latency test on every path.
    pub latency: LatencySpec,
    /// A streaming test on every path after its latency test, when wanted.
    pub stream: Option<StreamSpec>,
    /// Analyzer thresholds.
    pub thresholds: Thresholds,
    /// Idle time between runs, ns.
    pub cadence_ns: u64,
}

impl Default for CheckSettings {
    fn default() -> Self {
        CheckSettings {
            runs: 1,
            mode: ModeChoice::Auto,
            latency: LatencySpec::default(),
            stream: None,
            thresholds: Thresholds::default(),
            cadence_ns: DEFAULT_CADENCE_NS,
        }
    }
}

/// Message size and depth of the analyzer's discriminating streams.
const FOLLOW_UP_MESSAGE_BYTES: u64 = 64 * 1024;
const FOLLOW_UP_DEPTH: u32 = 16;

/// Lets the analyzer run its follow-up streams and re-probes on the engine under test.
struct EngineFollowUp<'a> {
    engine: &'a mut dyn ProbeEngine,
    /// The run's latency test, which re-probes repeat.
    latency: &'a LatencySpec,
}

impl FollowUp for EngineFollowUp<'_> {
    fn stream(&mut self, path: &Path, test: &FollowUpTest) -> Option<StreamResult> {
        let spec = StreamSpec {
            message_bytes: FOLLOW_UP_MESSAGE_BYTES,
            qps: test.qps,
            depth: FOLLOW_UP_DEPTH,
            duration_us: test.duration_us,
            ..StreamSpec::default()
        };
        self.engine.stream(path, &spec).ok()
    }

    fn latency(&mut self, path: &Path, idle_ns: u64) -> Option<PathMeasurement> {
        self.engine.idle(idle_ns);
        let samples = self.engine.latency(path, self.latency).ok()?;
        probe::measurement(self.latency, &samples).ok()
    }
}

/// A probe engine that is also the host's monitor: what a series of checks runs on (the
/// virtual host, or the verbs engine with the real counter sources).
pub trait Prober: ProbeEngine + Monitor {}
impl<T: ProbeEngine + Monitor> Prober for T {}

/// What each run's paths are judged against.
#[derive(Debug, Clone, Copy)]
pub enum BaselineSource<'a> {
    /// A baseline file, or a simulated one.
    Given(&'a Baseline, BaselineKind),
    /// Per run, line rate and peers in the same run ([`analyze::relative::relative`]):
    /// `software` lists the software RNICs (no line rate to hold them to).
    Relative {
        /// RNICs without a meaningful line rate (rxe, siw).
        software: &'a [ComponentId],
    },
}

/// Paths whose probe failed on the host: a timeout, a work completion in error, refused
/// registration, data that did not arrive intact. They are findings in their own right
/// (the analyzer cannot judge them); paths unavailable by design are not.
pub fn failed_paths(report: &Report) -> Vec<&model::PathReport> {
    report.paths.iter().filter(|p| p.failed()).collect()
}

/// Progress of a series: `(run, path done, paths in run)`.
pub type Progress<'a> = &'a mut dyn FnMut(u32, usize, usize);

/// Runs `settings.runs` checks, each judged with the history of the ones before it, and
/// hands each report to `on_report` as soon as it exists (so nothing is lost if a later run
/// fails). Returns the reports.
pub fn check(
    engine: &mut dyn Prober,
    host: &HostTopology,
    baseline: BaselineSource<'_>,
    settings: &CheckSettings,
    on_report: &mut dyn FnMut(&Report),
    progress: Progress,
) -> Vec<Report> {
    let mut history = History::for_thresholds(&settings.thresholds);
    let mut reports = Vec::with_capacity(settings.runs as usize);
    for i in 0..settings.runs {
        if i > 0 {
            engine.idle(settings.cadence_ns);
        }
        let snapshot = engine.snapshot();
        let mode = settings.mode.resolve(host, &snapshot, &settings.thresholds);
        let run = RunContext {
            host,
            baseline,
            settings,
            snapshot: &snapshot,
            history: &history,
            run_index: i,
        };
        let report = run_once(engine, &run, mode, &mut |done, total| {
            progress(i, done, total)
        });
        history.record(&report);
        on_report(&report);
        reports.push(report);
    }
    reports
}

/// What one run is judged with, beside the engine.
pub struct RunContext<'a> {
    /// The host model.
    pub host: &'a HostTopology,
    /// What the paths are judged against.
    pub baseline: BaselineSource<'a>,
    /// Probe specs and thresholds (`runs` and `mode` are the caller's business).
    pub settings: &'a CheckSettings,
    /// The monitors' view that started the run (utilisation for overloads).
    pub snapshot: &'a HostSnapshot,
    /// Earlier runs (flapping).
    pub history: &'a History,
    /// The run's index in its series.
    pub run_index: u32,
}

/// One run: probe the plan of `mode`, then analyze. The caller records the report in its
/// history: a series does it here, the agent across triggers.
pub fn run_once(
    engine: &mut dyn ProbeEngine,
    ctx: &RunContext<'_>,
    mode: Mode,
    progress: &mut dyn FnMut(usize, usize),
) -> Report {
    let paths = probe::plan(ctx.host, Plan::for_mode(mode));
    let spec = RunSpec {
        latency: ctx.settings.latency.clone(),
        stream: ctx.settings.stream.clone(),
    };
    let run = probe::run(engine, ctx.host, mode, &paths, &spec, progress);
    let relative;
    let (baseline, kind) = match ctx.baseline {
        BaselineSource::Given(b, kind) => (b, kind),
        BaselineSource::Relative { software } => {
            relative = analyze::relative::relative(ctx.host, &run, software);
            (&relative, BaselineKind::Relative)
        }
    };
    let input = Input {
        host: ctx.host,
        run: &run,
        baseline,
        snapshot: ctx.snapshot,
        thresholds: &ctx.settings.thresholds,
        history: ctx.history,
        run_index: ctx.run_index,
    };
    let mut follow_up = EngineFollowUp {
        engine,
        latency: &ctx.settings.latency,
    };
    let mut report = analyze::analyze(&input, &mut follow_up);
    report.baseline = Some(kind);
    report
}

/// Runs a series on a fresh virtual host of `host` with `faults`, quietly (no output, no
/// progress): what scenarios and benchmarks need.
pub fn check_virtual(
    host: &HostTopology,
    faults: Vec<vhost::Fault>,
    seed: u64,
    baseline: &Baseline,
    settings: &CheckSettings,
) -> Vec<Report> {
    let config = vhost::VhostConfig {
        seed,
        ..vhost::VhostConfig::default()
    };
    let mut engine = vhost::VirtualHost::new(host.clone(), faults, config);
    check(
        &mut engine,
        host,
        BaselineSource::Given(baseline, BaselineKind::Simulated),
        settings,
        &mut |_| {},
        &mut |_, _, _| {},
    )
}
