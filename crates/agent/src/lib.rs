/*!
`hostping agent`: Hostping as it is deployed (Hostping 4.2, 5, 7). It runs on every server,
reads cheap counters, probes when the host is idle or when symptoms appear, keeps every run
in SQLite, finds flapping across runs, and serves Prometheus `/metrics` and a JSON API.

One thread runs the loop below; the HTTP server runs on a second one and reads (the
metrics registry behind a mutex, the database through its own read-only connection). The
one thing it may ask of the loop is a probe now (`POST /api/probe`, for a holder of a probe
token): a single slot in [`Control`] that wakes the loop at once, and the run still goes
through the duty-cycle limiter.

```text
every symptoms_every (1 s):      snapshot -> Tx pause > PFC_high or drops -> affinitive probe
every host_status_every (5 min): snapshot -> all RNICs < Thp_low, GPUs idle -> full mesh
on request (POST /api/probe):    snapshot -> idle ? full mesh : affinitive probe (`manual`)
all go through the duty-cycle limiter; each run: probe, analyze, store (one transaction),
update metrics, add to the history (flapping: gray in 3 consecutive runs, or abnormal and
normal by turns over the last 6)
```

The clock is the backend's: a real host's monotonic clock, or the virtual host's simulated
clock, which the agent advances while it waits, `time_scale` times faster than the wall
clock, so a day of cadence passes in seconds in tests and demos.

With a `[fabric]` table the agent also sweeps switch ports on a third thread
([`switch_sampler`]), on the wall clock, every `fabric.every` (10 s).

Nothing is lost on SIGTERM: the run in progress finishes and is stored, then the agent
stops. A SIGKILL loses at most that run: each run is one transaction in a WAL database.

The modules: [`backend`] (the virtual host or this machine), [`config`] (the TOML file),
[`duty`] (the duty-cycle limiter), [`http`] (`/metrics` and the JSON API), [`sender`]
(delivery of runs to the fleet collector), [`switch_sampler`] (switch ports, `[fabric]`, on
[`sweep_loop`], the loop `hostping fabric sample` runs too),
[`cost`] (what the agent costs its host), [`lock`] (one agent per database) and
[`state_log`] (each symptom and verdict logged once, when it appears, changes or clears).

Each stored run is followed by pruning the runs beyond `agent.keep` and `agent.keep_runs`
([`config::AgentSection`]), at most [`PRUNE_BATCH`] at a time, so the database stays
bounded whatever the rate of runs.
*/

#![deny(missing_docs)]

pub mod backend;
pub mod config;
pub mod cost;
pub mod duty;
pub mod http;
pub mod lock;
pub mod nccl;
pub mod pair;
pub mod register;
pub mod sender;
pub mod state_log;
pub mod sweep_loop;
pub mod switch_sampler;
#[cfg(test)]
mod test_collector;

use analyze::History;
use analyze::{ModeChoice, Symptom};
use backend::Backend;
use check::pipeline::CheckSettings;
use config::AgentConfig;
use duty::DutyLimiter;
use model::{HostSnapshot, Mode, Report};
use probe::LatencySpec;
use state_log::StateLog;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};
use store::{Metrics, NewRun, RunRetention, Store, TriggerOutcome};

/// The most runs one pruning after a run deletes: a few milliseconds of SQLite work, and
/// far more than the one run stored, so a database over its bound (the bound was lowered,
/// or an older agent left it unbounded) shrinks back within a few hundred runs.
pub const PRUNE_BATCH: u32 = 64;

/// What other threads ask of the agent's loop: stop (SIGTERM, SIGINT, or a test), or probe
/// now (`POST /api/probe`). Either wakes a waiting loop at once through one condition
/// variable; the fabric sampler and the outbox sender wait on it for the stop only.
#[derive(Debug, Default)]
pub struct Control {
    state: Mutex<ControlState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct ControlState {
    stopped: bool,
    probe: ProbeSlot,
}

/// The one slot for probing on request: a request waits in it until the loop has run (or
/// refused) it, and any request meanwhile joins that one, so the slot never grows a queue.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum ProbeSlot {
    #[default]
    Empty,
    /// Asked for by this token holder; the loop has not taken it yet.
    Requested(String),
    /// The loop is running (or refusing) it.
    Taken,
}

/// The answer to a probe request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeRequest {
    /// Queued: the loop wakes and runs it.
    Queued,
    /// One is already waiting or running; this one joins it.
    AlreadyPending,
}

/// Why a wait of the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The time passed.
    Elapsed,
    /// A stop was asked for.
    Stopped,
    /// A probe was asked for.
    ProbeRequested,
}

impl Control {
    fn state(&self) -> std::sync::MutexGuard<'_, ControlState> {
        self.state.lock().expect("agent control")
    }

    /// Asks the agent to stop after the run in progress.
    pub fn stop(&self) {
        self.state().stopped = true;
        self.wake.notify_all();
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.state().stopped
    }

    /// Asks for one probe now, on behalf of the token holder `by`.
    pub fn request_probe(&self, by: &str) -> ProbeRequest {
        let mut state = self.state();
        if state.probe != ProbeSlot::Empty {
            return ProbeRequest::AlreadyPending;
        }
        state.probe = ProbeSlot::Requested(by.to_owned());
        drop(state);
        self.wake.notify_all();
        ProbeRequest::Queued
    }

    /// The holder of a waiting probe request, which the loop now takes.
    fn take_probe_request(&self) -> Option<String> {
        let mut state = self.state();
        match std::mem::take(&mut state.probe) {
            ProbeSlot::Requested(by) => {
                state.probe = ProbeSlot::Taken;
                Some(by)
            }
            other => {
                state.probe = other;
                None
            }
        }
    }

    /// The taken request is done (run or refused): the next one is queued anew.
    fn probe_done(&self) {
        self.state().probe = ProbeSlot::Empty;
    }

    /// Sleeps up to `d` of wall time; returns early, with `true`, when stopped. Probe
    /// requests do not end it (for the threads that only stop).
    pub fn sleep(&self, d: Duration) -> bool {
        let guard = self.state();
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, d, |s| !s.stopped)
            .expect("agent control");
        guard.stopped
    }

    /// The loop's wait: up to `d` of wall time, ended early by a stop or a probe request.
    pub fn wait(&self, d: Duration) -> Wake {
        let guard = self.state();
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, d, |s| {
                !s.stopped && !matches!(s.probe, ProbeSlot::Requested(_))
            })
            .expect("agent control");
        if guard.stopped {
            Wake::Stopped
        } else if matches!(guard.probe, ProbeSlot::Requested(_)) {
            Wake::ProbeRequested
        } else {
            Wake::Elapsed
        }
    }
}

/// The trigger of a run asked for through `POST /api/probe`.
pub const MANUAL: &str = "manual";

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
    /// Share of time (0 to 1) spent probing since start.
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
    /// What the log last said about symptoms and verdicts.
    said: StateLog,
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

/// Wall-clock milliseconds since the epoch, now.
fn unix_ms() -> i64 {
    model::time::unix_ms(SystemTime::now())
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
            said: StateLog::default(),
            log,
        })
    }

    /// Runs until `control` says stop, or until the backend clock has advanced by
    /// `run_for_ns`; probes on request as `control` asks. Returns how many runs were stored.
    pub fn run(&mut self, control: &Control, run_for_ns: Option<u64>) -> u64 {
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
        while !control.is_stopped() {
            self.backend.step();
            let now = self.backend.now_ns();
            if end.is_some_and(|e| now >= e) {
                break;
            }
            if let Some(by) = control.take_probe_request() {
                self.probe_on_request(&by);
                control.probe_done();
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
            if self.backend.wait(wake.saturating_sub(now), control) == Wake::Stopped {
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
        for line in self.said.symptoms(&found) {
            (self.log)(&line);
        }
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

    /// A probe asked for through `POST /api/probe` by the token holder `by`: in the mode the
    /// host's state gives (idle if idle, else busy), through the same duty-cycle limiter as
    /// the other triggers, so a token holder cannot make the agent overload the host.
    fn probe_on_request(&mut self, by: &str) {
        let snapshot = self.snapshot();
        let idle = self.backend.host().is_some_and(|host| {
            analyze::mode_from_snapshot(host, &snapshot, &self.config.thresholds) == Mode::Idle
        });
        let mode = if idle { Mode::Idle } else { Mode::Busy };
        let detail = format!("requested by {by}");
        if self.probe(MANUAL, &detail, mode, &snapshot) == TriggerOutcome::RateLimited {
            (self.log)(&format!(
                "probe requested by {by} refused: over the duty-cycle limit (triggers.max_duty_cycle {})",
                self.config.triggers.max_duty_cycle
            ));
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
    /// Returns the outcome it counted.
    fn probe(
        &mut self,
        trigger: &str,
        detail: &str,
        mode: Mode,
        snapshot: &HostSnapshot,
    ) -> TriggerOutcome {
        if self.backend.probing_disabled().is_some() {
            self.count_trigger(trigger, TriggerOutcome::SkippedBusy);
            return TriggerOutcome::SkippedBusy;
        }
        let start = self.backend.now_ns();
        if !self.limiter.allows(start) {
            self.count_trigger(trigger, TriggerOutcome::RateLimited);
            return TriggerOutcome::RateLimited;
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
            return TriggerOutcome::Probed;
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
        // A run asked for by a person is always answered in the log; the others when their
        // verdict is news.
        let verdict = state_log::verdict(&report);
        if trigger == MANUAL || self.said.verdict_is_news(trigger, &verdict) {
            (self.log)(&format!(
                "t={:.1}s {trigger} ({detail}): {} paths, {verdict}",
                start as f64 / 1e9,
                report.paths.len(),
            ));
        }
        TriggerOutcome::Probed
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
                self.prune();
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

    /// Deletes a bounded batch of the runs beyond the retention settings.
    fn prune(&mut self) {
        let a = &self.config.agent;
        let keep_ms = i64::try_from(a.keep.as_millis()).unwrap_or(i64::MAX);
        let retention = RunRetention {
            older_than_unix_ms: unix_ms().saturating_sub(keep_ms),
            keep_runs: a.keep_runs,
            batch: PRUNE_BATCH,
        };
        if let Err(e) = self.store.prune_runs(&retention) {
            // The runs stay; the next run tries again.
            self.store_errors += 1;
            (self.log)(&format!("cannot prune old runs: {e}"));
        }
    }

    fn publish_self(&mut self) {
        let now = self.backend.now_ns();
        let duty = self.limiter.duty_cycle(now);
        let (cpu, rss) = check::cost::process_cost();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_probe_request_waits_at_most_and_later_ones_join_it() {
        let c = Control::default();
        assert_eq!(c.request_probe("alice"), ProbeRequest::Queued);
        assert_eq!(c.request_probe("bob"), ProbeRequest::AlreadyPending);
        // The loop takes the first holder's request; one arriving while it runs joins it.
        assert_eq!(c.take_probe_request().as_deref(), Some("alice"));
        assert_eq!(c.request_probe("bob"), ProbeRequest::AlreadyPending);
        assert_eq!(c.take_probe_request(), None, "nothing was queued behind it");
        c.probe_done();
        assert_eq!(c.take_probe_request(), None);
        assert_eq!(c.request_probe("bob"), ProbeRequest::Queued);
        assert_eq!(c.take_probe_request().as_deref(), Some("bob"));
    }

    #[test]
    fn a_request_or_a_stop_ends_the_loops_wait_and_only_a_stop_ends_a_sleep() {
        let c = Arc::new(Control::default());
        assert_eq!(c.wait(Duration::from_millis(1)), Wake::Elapsed);
        let asker = {
            let c = c.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                c.request_probe("alice")
            })
        };
        // Without the wake-up the wait would last a minute and say Elapsed.
        assert_eq!(c.wait(Duration::from_secs(60)), Wake::ProbeRequested);
        assert_eq!(asker.join().unwrap(), ProbeRequest::Queued);
        // A pending request does not cut short the sleeps of the threads that only stop.
        assert!(!c.sleep(Duration::from_millis(1)));
        let stopper = {
            let c = c.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                c.stop();
            })
        };
        assert!(c.sleep(Duration::from_secs(60)));
        stopper.join().unwrap();
        // A stop wins over a pending request.
        assert_eq!(c.wait(Duration::from_secs(60)), Wake::Stopped);
    }
}
