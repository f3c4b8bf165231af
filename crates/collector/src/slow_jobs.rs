//! Slow jobs found and judged without anyone asking (issue 39 item 4, DESIGN 4.8): as soon
//! as an agent posts a job's collectives (crate::collectives), the collector reads that
//! job's symptom again, and when the job has turned slow it runs the job verdict itself
//! (`verdict::pipeline`, the same as `GET /api/jobs/verdict` with the job's ranks' hosts as
//! its nodes), stores it, and exports it to Prometheus. Every [`EVERY`] it lists the jobs
//! whose collectives ended in the last [`RUNNING_S`]: the others have ended and leave the
//! export.
//!
//! The verdicts are kept in `job_verdicts` and served at `GET /api/jobs/{job}/verdict`
//! (crate::verdicts).
//!
//! | path | what |
//! |---|---|
//! | `GET /metrics` | `hostping_job_slow{job}` (1 slow, 0 not) for each running job, `hostping_job_verdict{job,verdict}` and `hostping_job_culprit{job,layer,host,component,cause}` (the culprit's score) for each running job judged |
//!
//! One verdict a slowdown: a job is judged again only when its onset moved on by more than
//! [`NEW_ONSET_S`] (a new slowdown after a recovery), not on every tick while it stays slow.
//! The verdict's window starts [`LEAD_S`] before the onset and ends at the tick: each host's
//! newest check in it, the switch ports' counters over it against the window before it.
//! Probes run when the collector holds a probe token for its own verdicts (`--judge-probe-
//! token-file`), as `probe=1` does: checks of hosts without one, pairs, follow-ups.

use crate::collectives::{read_job, running_jobs, JobRead, Posted};
use crate::job::follow_up::CHECK_WAIT;
use crate::job::measure::Fleet;
use crate::job::query::{VerdictQuery, Window};
use crate::mesh::{Access, PAIR_WAIT};
use crate::verdicts;
use model::job::JobReport;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use verdict::pipeline::{self, Options};

/// How often the running jobs are listed (those that ended dropped, those not read yet
/// read). A posted job is read at once ([`Posted`]).
pub const EVERY: Duration = Duration::from_secs(5);
/// A job whose newest collectives ended longer ago than this is no longer running: it is
/// neither judged nor exported any more (it stays in `GET /api/jobs`).
pub const RUNNING_S: f64 = 600.0;
/// The verdict's window starts this long before the onset, so that a host checked just
/// before the job slowed is judged rather than left out.
pub const LEAD_S: i64 = 60;
/// A slow job is judged again only when its onset moved on by more than this.
pub const NEW_ONSET_S: f64 = 300.0;
/// Culprits exported per job at most, the best first: the series stay bounded.
const CULPRITS_EXPORTED: usize = 5;
/// The longest a tick's verdicts may take together: past it the tick is given up and the
/// next one starts over. One verdict that probes may wait out a check of the hosts without
/// one and a recheck of its host culprits ([`CHECK_WAIT`] each) and a pair of the mesh and
/// one of the follow-ups ([`PAIR_WAIT`] each) and still end, so that its own tick never
/// cuts it off; a minute more for the reads and the pairs that answered.
const TICK_WAIT: Duration =
    Duration::from_secs(2 * CHECK_WAIT.as_secs() + 2 * PAIR_WAIT.as_secs() + 60);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabel {
    job: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabels {
    job: String,
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CulpritLabels {
    job: String,
    layer: String,
    host: String,
    component: String,
    cause: String,
}

/// The running jobs as judged, for `GET /metrics`: rebuilt whole at every tick, so that a
/// job that ended leaves no series behind.
#[derive(Debug, Default)]
pub struct Metrics {
    slow: Family<JobLabel, Gauge>,
    verdict: Family<VerdictLabels, Gauge>,
    culprit: Family<CulpritLabels, Gauge<f64, AtomicU64>>,
    errors: prometheus_client::metrics::counter::Counter,
}

impl Metrics {
    /// Registers the series in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Metrics> {
        let m = Arc::new(Metrics::default());
        registry.register(
            "hostping_job_slow",
            "Whether a running job's collectives slowed (1) or not (0), from its NCCL Inspector records",
            m.slow.clone(),
        );
        registry.register(
            "hostping_job_verdict",
            "The verdict the collector reached by itself on a running job that slowed (1 on the verdict's series)",
            m.verdict.clone(),
        );
        registry.register(
            "hostping_job_culprit",
            "A culprit of that verdict, its score (0 to 1)",
            m.culprit.clone(),
        );
        registry.register(
            "hostping_collector_slow_jobs_errors",
            "Ticks of the slow-job watch that failed (retried at the next)",
            m.errors.clone(),
        );
        m
    }

    /// The series of the running jobs, replacing the last ones.
    fn show(&self, running: &BTreeMap<String, Watched>) {
        self.slow.clear();
        self.verdict.clear();
        self.culprit.clear();
        for (job, w) in running {
            let job = job.clone();
            self.slow
                .get_or_create(&JobLabel { job: job.clone() })
                .set(i64::from(w.slow));
            let Some(report) = &w.report else { continue };
            self.verdict
                .get_or_create(&VerdictLabels {
                    job: job.clone(),
                    verdict: verdicts::word(&report.verdict),
                })
                .set(1);
            for c in report.culprits.iter().take(CULPRITS_EXPORTED) {
                let labels = CulpritLabels {
                    job: job.clone(),
                    layer: verdicts::word(&c.layer),
                    host: c.host.clone().unwrap_or_default(),
                    component: c.component.clone().unwrap_or_default(),
                    cause: c.cause.clone(),
                };
                self.culprit.get_or_create(&labels).set(c.score);
            }
        }
    }
}

/// A running job as the watch last read it.
struct Watched {
    slow: bool,
    /// Its verdict on its current slowdown, when it has one.
    report: Option<JobReport>,
}

/// Watches the running jobs until the process stops: the jobs `posted` marks as soon as
/// they are posted (at most one read a `MIN_GAP` (a second)), and every [`EVERY`] the list of
/// running jobs, which drops the jobs that ended and reads those not seen yet (after a
/// restart). Each job that turned slow is judged (probing with `probe_token` when given),
/// and its verdict handed to `actions` (the policy, when the collector has one); a failed
/// read goes to `log` and its jobs are read again at the next wake-up.
pub async fn watch_loop(
    access: Access,
    probe_token: Option<String>,
    actions: Option<crate::actions::Actions>,
    posted: Arc<Posted>,
    metrics: Arc<Metrics>,
    log: impl Fn(String),
) {
    let mut running: BTreeMap<String, Watched> = BTreeMap::new();
    let mut timer = tokio::time::interval(EVERY);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let list = tokio::select! {
            _ = timer.tick() => true,
            _ = posted.wait() => false,
        };
        let now_s = model::time::unix_ms(SystemTime::now()) as f64 / 1e3;
        let mut jobs = posted.take();
        let watch = Watch {
            access: &access,
            probe_token: probe_token.as_deref(),
            actions: actions.as_ref(),
            now_s,
        };
        let read = async {
            if list {
                watch.list(&mut running, &mut jobs).await?;
            }
            watch.read(&mut running, &jobs, &log).await
        };
        let failed = match tokio::time::timeout(TICK_WAIT, read).await {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(why),
            Err(_) => Some(format!("the reads took past {} s", TICK_WAIT.as_secs())),
        };
        if let Some(why) = failed {
            metrics.errors.inc();
            log(format!("slow jobs: {why} (read again shortly)"));
            posted.mark(jobs);
        }
        metrics.show(&running);
        tokio::time::sleep(MIN_GAP).await;
    }
}

/// The least time between two reads: posts arriving meanwhile are read together.
const MIN_GAP: Duration = Duration::from_secs(1);

/// One wake-up's reads.
struct Watch<'a> {
    access: &'a Access,
    probe_token: Option<&'a str>,
    actions: Option<&'a crate::actions::Actions>,
    now_s: f64,
}

impl Watch<'_> {
    /// The running jobs listed: those that ended leave `running`, those not in it join
    /// `jobs`, to be read.
    async fn list(
        &self,
        running: &mut BTreeMap<String, Watched>,
        jobs: &mut BTreeSet<String>,
    ) -> Result<(), String> {
        let client = self.access.pool.get().await.map_err(|e| e.to_string())?;
        let listed: BTreeSet<String> = running_jobs(&client, self.now_s - RUNNING_S)
            .await
            .map_err(|e| crate::server_words(&e))?
            .into_iter()
            .collect();
        running.retain(|job, _| listed.contains(job));
        jobs.extend(listed.into_iter().filter(|j| !running.contains_key(j)));
        Ok(())
    }

    /// Reads each of `jobs` into `running`, judging those that turned slow without a
    /// verdict on this slowdown; a line to `log` per verdict reached.
    async fn read(
        &self,
        running: &mut BTreeMap<String, Watched>,
        jobs: &BTreeSet<String>,
        log: &impl Fn(String),
    ) -> Result<(), String> {
        if jobs.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = jobs.iter().cloned().collect();
        let client = self.access.pool.get().await.map_err(|e| e.to_string())?;
        let stored = verdicts::stored_onsets(&client, &names)
            .await
            .map_err(|e| crate::server_words(&e))?;
        drop(client);
        for job in names {
            let client = self.access.pool.get().await.map_err(|e| e.to_string())?;
            let since = self.now_s - crate::collectives::SYMPTOM_LOOKBACK_S;
            let read = read_job(&client, &job, since)
                .await
                .map_err(|e| crate::server_words(&e))?;
            drop(client);
            // A resend of an ended job's buckets does not make it running again.
            let Some(read) = read.filter(|r| r.last_seen >= self.now_s - RUNNING_S) else {
                running.remove(&job);
                continue;
            };
            let onset = read.symptom.since.filter(|_| read.symptom.slow);
            let report = match (onset, stored.get(&job)) {
                (None, _) => None,
                // This slowdown was judged: keep showing that verdict.
                (Some(onset), Some((judged_onset, report)))
                    if onset - judged_onset <= NEW_ONSET_S =>
                {
                    Some(report.clone())
                }
                (Some(onset), _) => {
                    let report = self.judge(&job, &read, onset).await?;
                    log(format!(
                        "slow jobs: job {job} slowed at {onset:.0} (unix s): {}",
                        report.summary
                    ));
                    // The verdict is stored: a failure to act on it is logged, and does not
                    // judge the job again.
                    if let Some(actions) = self.actions {
                        if let Err(e) = actions.on_verdict(&job, onset, &report, log).await {
                            log(format!("actions: job {job}: {e}"));
                        }
                    }
                    Some(report)
                }
            };
            let slow = read.symptom.slow;
            running.insert(job, Watched { slow, report });
        }
        Ok(())
    }

    /// Runs the verdict on `job`, slow since `onset_s`, over [`LEAD_S`] before the onset to
    /// now, and stores it: its nodes are its ranks' hosts, and its collectives those just
    /// `read` (not read again).
    async fn judge(&self, job: &str, read: &JobRead, onset_s: f64) -> Result<JobReport, String> {
        let until_s = self.now_s.ceil() as i64;
        let probe = self.probe_token.is_some();
        let query = VerdictQuery {
            nodes: read.nodes.clone(),
            window: Window {
                since_s: (onset_s.floor() as i64 - LEAD_S).min(until_s - 1),
                until_s,
            },
            job: Some(job.to_string()),
            probe,
            what_if: None,
            collectives: Some(read.evidence.clone()),
        };
        let options = Options {
            probe,
            what_if: None,
        };
        let token = self.probe_token.map(str::to_string);
        let mut fleet = Fleet::new(self.access, &query, token);
        let run = pipeline::run(&mut fleet, options)
            .await
            .map_err(|(code, why)| format!("job {job}: the verdict was refused ({code}): {why}"))?;
        let report = run.report;
        let client = self.access.pool.get().await.map_err(|e| e.to_string())?;
        verdicts::store(&client, job, onset_s, probe, &report)
            .await
            .map_err(|e| crate::server_words(&e))?;
        Ok(report)
    }
}
