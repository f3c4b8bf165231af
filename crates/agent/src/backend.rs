//! What the agent runs on: the virtual host (with faults that appear on a schedule, and a
//! clock it advances `time_scale` times faster than the wall clock), or this machine.

use crate::{Control, Wake};
use analyze::History;
use check::host::{
    engine_options, open_monitor, real_host, simulated_baseline, Host, HostError, ProbeOptions,
};
use check::pipeline::{run_once, BaselineSource, CheckSettings, RunContext};
use model::CounterReport;
use model::{Baseline, BaselineKind, ComponentId, HostSnapshot, HostTopology, Mode, Report};
use probe::{LatencySpec, ProbeEngine};
use rdma::host::Probed;
use std::time::Duration;
use vhost::{Fault, VirtualHost};

/// The agent's view of a host: what the loop in `lib.rs` needs of a virtual host and of
/// this machine alike, so that the loop (triggers, duty cycle, storing) is the same code for
/// both, and the tests drive it on the virtual host.
pub trait Backend {
    /// The host model, when there is something to probe.
    fn host(&self) -> Option<&HostTopology>;

    /// Why probing is off (no RDMA device), if it is.
    fn probing_disabled(&self) -> Option<String> {
        None
    }

    /// The backend clock, ns: the virtual host's simulated clock, or this machine's
    /// monotonic clock. Cadences and the duty cycle are measured on it.
    fn now_ns(&self) -> u64;

    /// The monitors' view now.
    fn snapshot(&mut self) -> HostSnapshot;

    /// Every counter source, for the run's record (`hostping counters --format json`).
    fn counters(&mut self) -> CounterReport;

    /// Probes the plan of `mode` and analyzes it: the run's report, or `None` when there is
    /// nothing to probe (probing is off). `run_index` is the run's index among this agent's
    /// runs (`check::pipeline::RunContext::run_index`).
    fn check(
        &mut self,
        settings: &CheckSettings,
        mode: Mode,
        snapshot: &HostSnapshot,
        history: &History,
        run_index: u32,
    ) -> Option<Report>;

    /// Lets up to `ns` ns of backend time pass; a stop or a probe request ends it early.
    fn wait(&mut self, ns: u64, control: &Control) -> Wake;

    /// Called before each iteration of the loop (scheduled faults).
    fn step(&mut self) {}
}

/// A fault that appears at a time of the virtual clock (`--schedule 10m=service:rnic0:250`).
#[derive(Debug, Clone)]
pub struct Scheduled {
    /// When, ns of virtual time.
    pub at_ns: u64,
    /// The fault.
    pub fault: Fault,
}

/// A `--schedule` string that cannot be used. Each message names the string.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// No `=` between time and fault.
    #[error("--schedule `{0}`: expected AT=FAULT, like 10m=service:rnic0:250")]
    Shape(String),
    /// The time is not a duration.
    #[error("--schedule `{text}`: `{at}` is not a duration: {reason}")]
    Time {
        /// The whole string.
        text: String,
        /// Its time part.
        at: String,
        /// Why it is not a duration.
        reason: humantime::DurationError,
    },
    /// The fault is malformed or names something the host lacks.
    #[error("--schedule `{text}`: {fault}")]
    Fault {
        /// The whole string.
        text: String,
        /// What is wrong with its fault.
        fault: vhost::FaultError,
    },
}

impl Scheduled {
    /// Parses `AT=FAULT`, `AT` a duration like `90s` or `10m`.
    pub fn parse(text: &str, host: &HostTopology) -> Result<Scheduled, ScheduleError> {
        let (at, fault) = text
            .split_once('=')
            .ok_or_else(|| ScheduleError::Shape(text.to_string()))?;
        let time = humantime::parse_duration(at.trim()).map_err(|reason| ScheduleError::Time {
            text: text.to_string(),
            at: at.to_string(),
            reason,
        })?;
        let fault = Fault::parse(fault.trim(), host).map_err(|fault| ScheduleError::Fault {
            text: text.to_string(),
            fault,
        })?;
        Ok(Scheduled {
            at_ns: crate::ns(time),
            fault,
        })
    }
}

/// The virtual host as an agent backend.
pub struct SimBackend {
    vh: VirtualHost,
    host: HostTopology,
    baseline: Baseline,
    kind: BaselineKind,
    time_scale: f64,
    schedule: Vec<Scheduled>,
}

impl SimBackend {
    /// A backend over `vh`, judged against `baseline`; virtual time runs `time_scale`
    /// times faster than the wall clock while the agent waits.
    pub fn new(
        vh: VirtualHost,
        baseline: Baseline,
        kind: BaselineKind,
        time_scale: f64,
        mut schedule: Vec<Scheduled>,
    ) -> SimBackend {
        schedule.sort_by_key(|s| std::cmp::Reverse(s.at_ns));
        SimBackend {
            host: vh.topology().clone(),
            vh,
            baseline,
            kind,
            time_scale,
            schedule,
        }
    }
}

impl Backend for SimBackend {
    fn host(&self) -> Option<&HostTopology> {
        Some(&self.host)
    }

    fn now_ns(&self) -> u64 {
        self.vh.now_ns()
    }

    fn snapshot(&mut self) -> HostSnapshot {
        probe::Monitor::snapshot(&mut self.vh)
    }

    fn counters(&mut self) -> CounterReport {
        self.vh
            .counter_report(model::time::unix_ms(std::time::SystemTime::now()))
    }

    fn check(
        &mut self,
        settings: &CheckSettings,
        mode: Mode,
        snapshot: &HostSnapshot,
        history: &History,
        run_index: u32,
    ) -> Option<Report> {
        let ctx = RunContext {
            host: &self.host,
            baseline: BaselineSource::Given(&self.baseline, self.kind),
            settings,
            snapshot,
            history,
            run_index,
        };
        Some(run_once(&mut self.vh, &ctx, mode, &mut |_, _| {}))
    }

    fn wait(&mut self, ns: u64, control: &Control) -> Wake {
        let wall = Duration::from_secs_f64(ns as f64 / 1e9 / self.time_scale);
        let started = std::time::Instant::now();
        let wake = control.wait(wall);
        match wake {
            Wake::Stopped => {}
            Wake::Elapsed => self.vh.advance(ns),
            // Virtual time keeps pace with the wall time actually waited, so a request
            // wakes the host at the virtual moment it arrived.
            Wake::ProbeRequested => {
                let waited = started.elapsed().as_secs_f64() * self.time_scale * 1e9;
                self.vh.advance((waited as u64).min(ns));
            }
        }
        wake
    }

    fn step(&mut self) {
        let now = self.vh.now_ns();
        while self.schedule.last().is_some_and(|s| s.at_ns <= now) {
            let s = self.schedule.pop().expect("checked");
            self.vh.inject(s.fault);
        }
    }
}

/// This machine as an agent backend: the verbs engine when there is an RDMA device,
/// counters only otherwise.
pub struct RealBackend<E> {
    /// The probe side, when there is one.
    probing: Result<RealProbing<E>, rdma::host::RealError>,
    /// Reads every counter source.
    counters: rdma::monitor::HostMonitor,
    started: std::time::Instant,
}

/// The probe side of a real backend.
pub struct RealProbing<E> {
    /// The discovered model.
    pub host: HostTopology,
    /// The engine.
    pub engine: E,
    /// A recorded baseline, or none (relative judgement).
    pub baseline: Option<Baseline>,
    /// Software RNICs (no line rate to judge them by).
    pub software: Vec<ComponentId>,
}

impl<E> RealBackend<E> {
    /// A backend probing through `probing`, or only reading counters when it is `Err(why)`.
    pub fn new(
        probing: Result<RealProbing<E>, rdma::host::RealError>,
        counters: rdma::monitor::HostMonitor,
    ) -> RealBackend<E> {
        RealBackend {
            probing,
            counters,
            started: std::time::Instant::now(),
        }
    }
}

impl<E: ProbeEngine> Backend for RealBackend<E> {
    fn host(&self) -> Option<&HostTopology> {
        self.probing.as_ref().ok().map(|p| &p.host)
    }

    fn probing_disabled(&self) -> Option<String> {
        self.probing.as_ref().err().map(|e| e.to_string())
    }

    fn now_ns(&self) -> u64 {
        crate::ns(self.started.elapsed())
    }

    fn snapshot(&mut self) -> HostSnapshot {
        let mut snapshot = probe::Monitor::snapshot(&mut self.counters);
        snapshot.at_ns = self.now_ns();
        snapshot
    }

    fn counters(&mut self) -> CounterReport {
        self.counters.read()
    }

    fn check(
        &mut self,
        settings: &CheckSettings,
        mode: Mode,
        snapshot: &HostSnapshot,
        history: &History,
        run_index: u32,
    ) -> Option<Report> {
        let p = self.probing.as_mut().ok()?;
        let baseline = match &p.baseline {
            Some(b) => BaselineSource::Given(b, BaselineKind::Recorded),
            None => BaselineSource::Relative {
                software: &p.software,
            },
        };
        let ctx = RunContext {
            host: &p.host,
            baseline,
            settings,
            snapshot,
            history,
            run_index,
        };
        Some(run_once(&mut p.engine, &ctx, mode, &mut |_, _| {}))
    }

    fn wait(&mut self, ns: u64, control: &Control) -> Wake {
        control.wait(Duration::from_nanos(ns))
    }
}

/// Why the agent cannot watch the host it was given.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The host cannot be set up (its model, faults, probe settings).
    #[error(transparent)]
    Host(#[from] HostError),
    /// A `--schedule` string is malformed.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
}

/// The agent's view of this host. A real host without an RDMA device (or without
/// libibverbs) still reports its counters, with probing off and the reason.
pub fn for_host(
    host: Host,
    baseline: Option<Baseline>,
    probe: &ProbeOptions,
    latency: &LatencySpec,
    time_scale: f64,
    schedule: &[String],
) -> Result<Box<dyn Backend>, BackendError> {
    match host {
        Host::Virtual { vhost, options } => {
            let mut parsed: Vec<Scheduled> = Vec::with_capacity(schedule.len());
            for text in schedule {
                let s = Scheduled::parse(text, vhost.topology())?;
                // Scheduled faults meet the injected ones as `--inject` faults meet each
                // other: one setting per target (vhost::Fault::contradicts).
                let mut earlier = vhost.faults().iter().chain(parsed.iter().map(|p| &p.fault));
                if let Some(reason) = earlier.find_map(|e| s.fault.contradicts(e)) {
                    let fault = vhost::FaultError {
                        input: s.fault.to_string(),
                        reason,
                    };
                    return Err(ScheduleError::Fault {
                        text: text.clone(),
                        fault,
                    }
                    .into());
                }
                parsed.push(s);
            }
            let schedule = parsed;
            let (baseline, kind) = match baseline {
                Some(b) => (b, BaselineKind::Recorded),
                None => (
                    simulated_baseline(&vhost, &options, check::record::DEFAULT_RUNS, latency),
                    BaselineKind::Simulated,
                ),
            };
            Ok(Box::new(SimBackend::new(
                *vhost, baseline, kind, time_scale, schedule,
            )))
        }
        Host::Real {
            root,
            discovery,
            monitor,
            ..
        } => {
            let options = engine_options(probe)?;
            // The engine comes with the counter sources as its monitor; only a host
            // that cannot probe opens them on their own (NVML and the uncore PMUs are
            // opened once either way).
            let probed =
                real_host(&root, &discovery).and_then(|real| Ok((real.engine(options)?, real)));
            let (probing, monitor) = match probed {
                Ok((Probed { engine, monitor }, real)) => (
                    Ok(RealProbing {
                        software: real.software_rnics(),
                        host: real.host,
                        engine,
                        baseline,
                    }),
                    monitor,
                ),
                Err(why) => (
                    Err(why),
                    *monitor.unwrap_or_else(|| open_monitor(&root, &discovery)),
                ),
            };
            Ok(Box::new(RealBackend::new(probing, monitor)))
        }
    }
}
