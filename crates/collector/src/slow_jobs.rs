//! Slow jobs found and judged without anyone asking (issue 39 item 4, DESIGN 4.8): every
//! [`EVERY`] the collector reads the symptom of each job whose collectives arrived in the
//! last [`RUNNING_S`] (crate::collectives), and when one has turned slow it runs the job
//! verdict itself (`verdict::pipeline`, the same as `GET /api/jobs/verdict` with the job's
//! ranks' hosts as its nodes), stores it, and exports it to Prometheus.
//!
//! | path | what |
//! |---|---|
//! | `GET /api/jobs/{job}/verdict` | the newest verdict the collector reached on the job by itself ([`StoredVerdict`]); 404 naming the job when it has none |
//! | `GET /metrics` | `hostping_job_slow{job}` (1 slow, 0 not) for each running job, `hostping_job_verdict{job,verdict}` and `hostping_job_culprit{job,layer,host,component,cause}` (the culprit's score) for each running job judged |
//!
//! One verdict a slowdown: a job is judged again only when its onset moved on by more than
//! [`NEW_ONSET_S`] (a new slowdown after a recovery), not on every tick while it stays slow.
//! The verdict's window starts [`LEAD_S`] before the onset and ends at the tick: each host's
//! newest check in it, the switch ports' counters over it against the window before it.
//! Probes run when the collector holds a probe token for its own verdicts (`--judge-probe-
//! token-file`), as `probe=1` does: checks of hosts without one, pairs, follow-ups.

use crate::api::ApiError;
use crate::collectives::{read_job, running_jobs};
use crate::job::measure::Fleet;
use crate::job::query::{VerdictQuery, Window};
use crate::mesh::Access;
use axum::extract::{Path as UrlPath, State};
use axum::routing::get;
use axum::{Json, Router};
use deadpool_postgres::Pool;
use model::job::JobReport;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use verdict::pipeline::{self, Options};

/// The table (schema version 12): one row a judged slowdown.
pub const MIGRATION: &str = "CREATE TABLE job_verdicts (
        job TEXT NOT NULL,
        onset_s DOUBLE PRECISION NOT NULL,
        judged_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        verdict TEXT NOT NULL,
        probed BOOLEAN NOT NULL,
        report JSONB NOT NULL,
        PRIMARY KEY (job, onset_s)
    );
    -- a job's newest verdict, and retention
    CREATE INDEX job_verdicts_judged_at ON job_verdicts (judged_at);
    CREATE INDEX job_verdicts_job_judged ON job_verdicts (job, judged_at DESC);";

/// How often the running jobs' symptoms are read. The agents post closed buckets every few
/// seconds (agent::nccl), and a slowdown shows after two slow buckets
/// (analyze::collectives): with this, a verdict is stored within 30 s of the onset (issue
/// 39 item 7).
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
/// The longest a tick's verdicts may take together (probes included, whose own waits are
/// shorter): past it the tick is given up and the next one starts over.
const TICK_WAIT: Duration = Duration::from_secs(300);

/// A verdict the collector reached by itself: `GET /api/jobs/{job}/verdict`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredVerdict {
    /// The job.
    pub job: String,
    /// The slowdown's onset, Unix seconds (the symptom's `since`).
    pub onset_s: f64,
    /// When the collector judged it, Unix seconds.
    pub judged_at: f64,
    /// Whether probes ran.
    pub probed: bool,
    /// The verdict, as `GET /api/jobs/verdict` answers it.
    pub report: JobReport,
}

/// The routes, over the database.
pub fn routes(pool: Pool) -> Router {
    Router::new()
        .route("/api/jobs/{job}/verdict", get(stored_verdict))
        .with_state(pool)
}

/// `GET /api/jobs/{job}/verdict`.
async fn stored_verdict(
    State(pool): State<Pool>,
    UrlPath(job): UrlPath<String>,
) -> Result<Json<StoredVerdict>, ApiError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "SELECT onset_s, extract(epoch FROM judged_at)::float8, probed, report::text
             FROM job_verdicts WHERE job = $1 ORDER BY judged_at DESC LIMIT 1",
            &[&job],
        )
        .await?;
    let Some(row) = row else {
        return Err(ApiError::NotFound(format!(
            "job {job}: the collector has not judged it (it judges a job when its collectives slow)"
        )));
    };
    let report: String = row.get(3);
    let report = serde_json::from_str(&report)
        .map_err(|e| ApiError::Database(format!("job {job}'s stored verdict: {e}")))?;
    Ok(Json(StoredVerdict {
        job,
        onset_s: row.get(0),
        judged_at: row.get(1),
        probed: row.get(2),
        report,
    }))
}

/// The newest verdict of each of `jobs`: (verdict, judged at, Unix seconds).
pub(crate) async fn newest_verdicts(
    client: &tokio_postgres::Client,
    jobs: &[String],
) -> Result<std::collections::HashMap<String, (String, f64)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT DISTINCT ON (job) job, verdict, extract(epoch FROM judged_at)::float8
             FROM job_verdicts WHERE job = ANY($1) ORDER BY job, judged_at DESC",
            &[&jobs],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect())
}

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

    /// The series of one tick's jobs, replacing the last tick's.
    fn show(&self, jobs: &[Watched]) {
        self.slow.clear();
        self.verdict.clear();
        self.culprit.clear();
        for w in jobs {
            let job = w.job.clone();
            self.slow
                .get_or_create(&JobLabel { job: job.clone() })
                .set(i64::from(w.slow));
            let Some(report) = &w.report else { continue };
            self.verdict
                .get_or_create(&VerdictLabels {
                    job: job.clone(),
                    verdict: word(&report.verdict),
                })
                .set(1);
            for c in report.culprits.iter().take(CULPRITS_EXPORTED) {
                let labels = CulpritLabels {
                    job: job.clone(),
                    layer: word(&c.layer),
                    host: c.host.clone().unwrap_or_default(),
                    component: c.component.clone().unwrap_or_default(),
                    cause: c.cause.clone(),
                };
                self.culprit.get_or_create(&labels).set(c.score);
            }
        }
    }
}

/// A value's JSON word (`"network"`), as the contract spells it.
fn word<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A running job as one tick left it.
struct Watched {
    job: String,
    slow: bool,
    /// Its verdict on its current slowdown, when it has one.
    report: Option<JobReport>,
}

/// Watches the running jobs every [`EVERY`] until the process stops, judging each that
/// turned slow (probing with `probe_token` when given); a failed tick goes to `log` and is
/// retried at the next.
pub async fn watch_loop(
    access: Access,
    probe_token: Option<String>,
    metrics: Arc<Metrics>,
    log: impl Fn(String),
) {
    let mut timer = tokio::time::interval(EVERY);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let now_s = model::time::unix_ms(SystemTime::now()) as f64 / 1e3;
        match tokio::time::timeout(TICK_WAIT, tick(&access, probe_token.as_deref(), now_s)).await {
            Ok(Ok((watched, judged))) => {
                metrics.show(&watched);
                for line in judged {
                    log(line);
                }
            }
            Ok(Err(why)) => {
                metrics.errors.inc();
                log(format!("slow jobs: {why} (retried in {EVERY:?})"));
            }
            Err(_) => {
                metrics.errors.inc();
                log(format!(
                    "slow jobs: the tick took past {} s (retried in {EVERY:?})",
                    TICK_WAIT.as_secs()
                ));
            }
        }
    }
}

/// One tick: each running job read and, when it turned slow without a verdict on this
/// slowdown, judged and stored. The jobs as left, and a line per verdict reached.
async fn tick(
    access: &Access,
    probe_token: Option<&str>,
    now_s: f64,
) -> Result<(Vec<Watched>, Vec<String>), String> {
    let client = access.pool.get().await.map_err(|e| e.to_string())?;
    let words = |e: tokio_postgres::Error| crate::server_words(&e);
    let jobs = running_jobs(&client, now_s - RUNNING_S)
        .await
        .map_err(words)?;
    let stored = stored_onsets(&client, &jobs).await.map_err(words)?;
    drop(client);
    let (mut watched, mut lines) = (Vec::new(), Vec::new());
    for job in jobs {
        let client = access.pool.get().await.map_err(|e| e.to_string())?;
        let read = read_job(
            &client,
            &job,
            now_s - crate::collectives::SYMPTOM_LOOKBACK_S,
        )
        .await
        .map_err(|e| e.to_string())?;
        drop(client);
        let Some(read) = read else { continue };
        let onset = read.symptom.since.filter(|_| read.symptom.slow);
        let last = stored.get(&job);
        let report = match (onset, last) {
            (None, _) => None,
            // This slowdown was judged: keep showing that verdict.
            (Some(onset), Some((judged_onset, report))) if onset - judged_onset <= NEW_ONSET_S => {
                Some(report.clone())
            }
            (Some(onset), _) => {
                let report = judge(access, probe_token, &job, &read.nodes, onset, now_s).await?;
                lines.push(format!(
                    "slow jobs: job {job} slowed at {onset:.0} (unix s): {}",
                    report.summary
                ));
                Some(report)
            }
        };
        watched.push(Watched {
            job,
            slow: read.symptom.slow,
            report,
        });
    }
    Ok((watched, lines))
}

/// Each job's newest stored verdict: (its onset, its report).
async fn stored_onsets(
    client: &tokio_postgres::Client,
    jobs: &[String],
) -> Result<std::collections::HashMap<String, (f64, JobReport)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT DISTINCT ON (job) job, onset_s, report::text
             FROM job_verdicts WHERE job = ANY($1) ORDER BY job, judged_at DESC",
            &[&jobs],
        )
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            // A report this collector cannot read (written by a newer one) is judged again.
            let report = serde_json::from_str(r.get::<_, &str>(2)).ok()?;
            Some((r.get(0), (r.get(1), report)))
        })
        .collect())
}

/// Runs the verdict on `job` (its ranks' hosts `nodes`, slow since `onset_s`) over
/// [`LEAD_S`] before the onset to `now_s`, and stores it.
async fn judge(
    access: &Access,
    probe_token: Option<&str>,
    job: &str,
    nodes: &[String],
    onset_s: f64,
    now_s: f64,
) -> Result<JobReport, String> {
    let until_s = now_s.ceil() as i64;
    let query = VerdictQuery {
        nodes: nodes.to_vec(),
        window: Window {
            since_s: (onset_s.floor() as i64 - LEAD_S).min(until_s - 1),
            until_s,
        },
        job: Some(job.to_string()),
        probe: probe_token.is_some(),
        what_if: None,
    };
    let options = Options {
        probe: probe_token.is_some(),
        what_if: None,
    };
    let mut fleet = Fleet::new(access, &query, probe_token.map(str::to_string));
    let run = pipeline::run(&mut fleet, options)
        .await
        .map_err(|(code, why)| format!("job {job}: the verdict was refused ({code}): {why}"))?;
    let report = run.report;
    let text = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    let client = access.pool.get().await.map_err(|e| e.to_string())?;
    client
        .execute(
            "INSERT INTO job_verdicts (job, onset_s, verdict, probed, report)
             VALUES ($1, $2, $3, $4, $5::text::jsonb)
             ON CONFLICT (job, onset_s) DO UPDATE SET judged_at = now(),
                 verdict = excluded.verdict, probed = excluded.probed, report = excluded.report",
            &[
                &job,
                &onset_s,
                &word(&report.verdict),
                &probe_token.is_some(),
                &text,
            ],
        )
        .await
        .map_err(|e| crate::server_words(&e))?;
    Ok(report)
}
