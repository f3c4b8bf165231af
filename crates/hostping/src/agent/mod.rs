/*!
`hostping agent`: Hostping as it is deployed (Hostping 4.2, 5, 7). It runs on every server,
reads cheap counters, probes when the host is idle or when symptoms appear, keeps every run
in SQLite, finds flapping across runs, and serves Prometheus `/metrics` and a JSON API.

One thread runs the loop below; the HTTP server runs on a second one and only reads (the
metrics registry behind a mutex, the database through its own read-only connection).

```text
every symptoms_every (1 s):      snapshot -> Tx pause > PFC_high or drops -> affinitive probe
every host_status_every (5 min): snapshot -> all RNICs < Thp_low, GPUs idle -> full mesh
both go through the duty-cycle limiter; each run: probe, analyze, store (one transaction),
update metrics, add to the history (flapping: gray in 3 consecutive runs, or abnormal and
normal by turns over the last 6)
```

The clock is the backend's: a real host's monotonic clock, or the virtual host's simulated
clock, which the agent advances while it waits, `time_scale` times faster than the wall
clock, so a day of cadence passes in seconds in tests and demos.

With a `[fabric]` table the agent also sweeps switch ports on a third thread
([`fabric`]), on the wall clock, every `fabric.every` (10 s).

Nothing is lost on SIGTERM: the run in progress finishes and is stored, then the agent
stops. A SIGKILL loses at most that run: each run is one transaction in a WAL database.
*/

pub mod backend;
pub mod bench;
pub mod config;
pub mod cost;
pub mod duty;
pub mod fabric;
pub mod http;
pub mod outbox;

use crate::pipeline::CheckSettings;
use analyze::History;
use analyze::{ModeChoice, Symptom};
use backend::Backend;
use config::AgentConfig;
use duty::DutyLimiter;
use model::{HostSnapshot, Mode, Report};
use probe::LatencySpec;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use store::{Metrics, NewRun, Store, TriggerOutcome};

/// A stop request (SIGTERM, SIGINT, or a test), that wakes a waiting agent at once.
#[derive(Debug, Default)]
pub struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    /// Asks the agent to stop after the run in progress.
    pub fn stop(&self) {
        *self.stopped.lock().expect("stop flag") = true;
        self.wake.notify_all();
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.lock().expect("stop flag")
    }

    /// Sleeps up to `d` of wall time; returns early, with `true`, when stopped.
    pub fn sleep(&self, d: Duration) -> bool {
        let guard = self.stopped.lock().expect("stop flag");
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, d, |stopped| !*stopped)
            .expect("stop flag");
        *guard
    }
}

/// What the HTTP API reports about the agent besides runs.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Status {
    /// The host model, or why there is none.
    pub host: String,
    /// `measured` or `simulated`.
    pub provenance: String,
    /// The backend clock, ns.
    pub clock_ns: u64,
    /// Runs stored since this agent started.
    pub runs_stored: u64,
    /// Share of time spent probing since start.
    pub duty_cycle: f64,
    /// The latest monitor snapshot.
    pub last_snapshot: Option<HostSnapshot>,
    /// Why probing is off, when it is (no RDMA device).
    pub probing_disabled: Option<String>,
}

/// The agent's state across iterations of its loop.
pub struct Agent<'a> {
    backend: &'a mut dyn Backend,
    config: &'a AgentConfig,
    store: Store,
    metrics: Arc<Mutex<Metrics>>,
    status: Arc<Mutex<Status>>,
    history: History,
    limiter: DutyLimiter,
    runs_stored: u64,
    store_errors: u64,
    /// The store's count of runs pushed out of a full outbox, as last published.
    outbox_dropped: u64,
    next_run_index: u32,
    log: &'a mut dyn FnMut(&str),
}

/// This machine's hostname (the agent's default name in the fleet).
pub fn hostname() -> std::io::Result<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it or
    // fails.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Wall-clock milliseconds since the epoch.
fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<'a> Agent<'a> {
    /// An agent over `backend`, storing into `store`; the flapping history is rebuilt from
    /// the runs already stored for this host.
    pub fn new(
        backend: &'a mut dyn Backend,
        config: &'a AgentConfig,
        store: Store,
        metrics: Arc<Mutex<Metrics>>,
        status: Arc<Mutex<Status>>,
        log: &'a mut dyn FnMut(&str),
    ) -> Result<Agent<'a>, store::StoreError> {
        // The agent judges each run with the recent ones, as many as the flapping rules read.
        let mut history = History::for_thresholds(&config.thresholds);
        let keep = history.capacity();
        let mut next_run_index = 0;
        if let Some(host) = backend.host() {
            for report in store.recent_reports(&host.name, keep)? {
                history.record(&report);
                next_run_index += 1;
            }
        }
        let t = &config.triggers;
        let limiter = DutyLimiter::new(t.max_duty_cycle, ns(t.burst), backend.now_ns());
        Ok(Agent {
            backend,
            config,
            store,
            metrics,
            status,
            history,
            limiter,
            runs_stored: 0,
            store_errors: 0,
            outbox_dropped: 0,
            next_run_index,
            log,
        })
    }

    /// Runs until `stop`, or until the backend clock has advanced by `run_for_ns`.
    /// Returns how many runs were stored.
    pub fn run(&mut self, stop: &Stop, run_for_ns: Option<u64>) -> u64 {
        let t = &self.config.triggers;
        let (symptom_every, status_every) = (ns(t.symptoms_every), ns(t.host_status_every));
        let start = self.backend.now_ns();
        let end = run_for_ns.map(|d| start.saturating_add(d));
        let mut next_symptom = start;
        let mut next_status = start;
        if let Some(why) = self.backend.probing_disabled() {
            (self.log)(&format!(
                "probing disabled: {why}; monitoring counters only"
            ));
        }
        while !stop.is_stopped() {
            self.backend.step();
            let now = self.backend.now_ns();
            if end.is_some_and(|e| now >= e) {
                break;
            }
            let (symptoms_due, status_due) = (now >= next_symptom, now >= next_status);
            if symptoms_due || status_due {
                // One reading serves both checks: a second one right after would measure
                // rates over microseconds, or the agent's own probe traffic.
                let snapshot = self.snapshot();
                if symptoms_due {
                    next_symptom = next_symptom.saturating_add(symptom_every).max(now + 1);
                    self.check_symptoms(&snapshot);
                }
                if status_due {
                    next_status = next_status.saturating_add(status_every).max(now + 1);
                    self.check_host_status(&snapshot);
                }
            }
            self.publish_self();
            let wake = next_symptom.min(next_status).min(end.unwrap_or(u64::MAX));
            let now = self.backend.now_ns();
            if self.backend.wait(wake.saturating_sub(now), stop) {
                break;
            }
        }
        self.runs_stored
    }

    fn snapshot(&mut self) -> HostSnapshot {
        let snapshot = self.backend.snapshot();
        self.metrics
            .lock()
            .expect("metrics")
            .observe_snapshot(&snapshot);
        self.status.lock().expect("status").last_snapshot = Some(snapshot.clone());
        snapshot
    }

    fn check_symptoms(&mut self, snapshot: &HostSnapshot) {
        let found = analyze::symptoms(snapshot, &self.config.thresholds);
        let Some(first) = found.first() else { return };
        let detail = found
            .iter()
            .map(Symptom::detail)
            .collect::<Vec<_>>()
            .join("; ");
        self.probe(first.trigger(), &detail, Mode::Busy, snapshot);
    }

    fn check_host_status(&mut self, snapshot: &HostSnapshot) {
        let Some(host) = self.backend.host() else {
            return;
        };
        if analyze::mode_from_snapshot(host, snapshot, &self.config.thresholds) == Mode::Idle {
            self.probe(
                "idle",
                "host idle: every RNIC under Thp_low, GPUs idle",
                Mode::Idle,
                snapshot,
            );
        } else {
            self.count_trigger("idle", TriggerOutcome::SkippedBusy);
        }
    }

    fn count_trigger(&mut self, trigger: &str, outcome: TriggerOutcome) {
        self.metrics
            .lock()
            .expect("metrics")
            .observe_trigger(trigger, outcome);
    }

    fn settings(&self) -> CheckSettings {
        CheckSettings {
            runs: 1,
            mode: ModeChoice::Auto,
            latency: LatencySpec {
                op: self.config.probe.op,
                iterations: self.config.probe.iterations,
                ..LatencySpec::default()
            },
            stream: None,
            thresholds: self.config.thresholds,
            cadence_ns: 0,
        }
    }

    /// One triggered run, if the duty cycle allows it: probe, analyze, store, publish.
    fn probe(&mut self, trigger: &str, detail: &str, mode: Mode, snapshot: &HostSnapshot) {
        if self.backend.probing_disabled().is_some() {
            self.count_trigger(trigger, TriggerOutcome::SkippedBusy);
            return;
        }
        let start = self.backend.now_ns();
        if !self.limiter.allows(start) {
            self.count_trigger(trigger, TriggerOutcome::RateLimited);
            return;
        }
        self.count_trigger(trigger, TriggerOutcome::Probed);
        let started_unix_ms = unix_ms();
        let settings = self.settings();
        let Some(report) = self.backend.check(
            &settings,
            mode,
            snapshot,
            &self.history,
            self.next_run_index,
        ) else {
            return;
        };
        let end = self.backend.now_ns();
        let duration_ns = end.saturating_sub(start);
        self.limiter.charge(duration_ns, end);
        self.next_run_index += 1;
        self.history.record(&report);
        let counters = serde_json::to_value(self.backend.counters()).expect("counters serialise");
        self.store_run(NewRunParts {
            started_unix_ms,
            clock_ns: start,
            duration_ns,
            trigger,
            detail,
            snapshot,
            counters: &counters,
            report: &report,
        });
        self.metrics
            .lock()
            .expect("metrics")
            .observe_run(trigger, &report, duration_ns);
        (self.log)(&summary(trigger, detail, &report, start));
    }

    fn store_run(&mut self, parts: NewRunParts<'_>) {
        let snapshot = serde_json::to_value(parts.snapshot).expect("snapshots serialise");
        let run = NewRun {
            started_unix_ms: parts.started_unix_ms,
            clock_ns: parts.clock_ns,
            duration_ns: parts.duration_ns,
            trigger: parts.trigger,
            trigger_detail: parts.detail,
            snapshot: &snapshot,
            counters: Some(parts.counters),
            report: parts.report,
        };
        match self.store.insert_run(&run) {
            Ok(_) => {
                self.runs_stored += 1;
                let dropped = self.store.outbox_dropped();
                if dropped > self.outbox_dropped {
                    self.metrics
                        .lock()
                        .expect("metrics")
                        .observe_outbox_dropped(dropped - self.outbox_dropped);
                    self.outbox_dropped = dropped;
                }
            }
            Err(e) => {
                // The run stays in the metrics and the log; the agent keeps watching.
                self.store_errors += 1;
                (self.log)(&format!("cannot store run: {e}"));
            }
        }
    }

    fn publish_self(&mut self) {
        let now = self.backend.now_ns();
        let duty = self.limiter.duty_cycle(now);
        let (cpu, rss) = cost::process_cost();
        self.metrics
            .lock()
            .expect("metrics")
            .observe_self(cpu, rss, duty, self.store_errors);
        let mut status = self.status.lock().expect("status");
        status.clock_ns = now;
        status.runs_stored = self.runs_stored;
        status.duty_cycle = duty;
    }
}

struct NewRunParts<'a> {
    started_unix_ms: i64,
    clock_ns: u64,
    duration_ns: u64,
    trigger: &'a str,
    detail: &'a str,
    snapshot: &'a HostSnapshot,
    counters: &'a serde_json::Value,
    report: &'a Report,
}

/// One log line per run.
fn summary(trigger: &str, detail: &str, report: &Report, clock_ns: u64) -> String {
    let causes: Vec<String> = report
        .diagnoses
        .iter()
        .map(|d| {
            let links: Vec<&str> = d.links.iter().map(|l| l.as_str()).collect();
            format!("{} {}", d.cause.as_str(), links.join(","))
        })
        .collect();
    format!(
        "t={:.1}s {trigger} ({detail}): {} paths, {}",
        clock_ns as f64 / 1e9,
        report.paths.len(),
        if report.healthy {
            "healthy".to_string()
        } else {
            causes.join("; ")
        }
    )
}
