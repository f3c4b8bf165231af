//! Jobs' collectives at the collector (DESIGN 4.8): agents post per-rank summaries of their
//! jobs' NCCL Inspector records (`fleet_api::collectives`), the collector keeps them, and
//! judges each job's symptom from them on request.
//!
//! | path | what |
//! |---|---|
//! | `POST /api/collectives` | an agent's summaries (`Authorization: Bearer TOKEN` of the posting `host`): 201 with counts, 200 when every summary was stored before |
//! | `GET /api/jobs?since=T` | the jobs with summaries ending at or after `T` (Unix seconds; the last 24 h by default), slow first, then newest `last_seen` first, each with the newest verdict the collector reached on it by itself (crate::slow_jobs) |
//! | `GET /api/jobs/{job}/symptom?since=T` | the job's full `Symptom` over the same window; 404 naming the job when it has none |
//!
//! A post is refused as a run is (401 no or unknown token, 403 a token of another host, 413
//! over the collector's body limit, 422 refused by the database for what it holds, 503 the
//! database is unreachable), and 400 names the job, summary and field outside the contract
//! (`check`): more than [`MAX_SUMMARIES`] summaries or [`MAX_JOBS`] jobs, a job given
//! twice, a summary whose number is not finite or negative, width 0, count 0, sequence
//! numbers out of order, an empty name, a key given twice.
//!
//! Storage: one row a summary in `job_collectives`, unique on (job, communicator, rank,
//! collective, bytes, bucket start). A resend replaces the stored row with the later post's
//! (the same bucket summarised again says the same, or more once a re-read agent saw more),
//! so nothing is counted twice. A job the agent could not name (`job: None`) is stored under
//! the empty job `''`: kept for as long as the rest and never listed (no job to show it
//! under), rather than refused, which would lose the named jobs of the same post. Each job's
//! records and skipped counts per post go to `job_collective_reads`, keyed by job, host and
//! the span of the post's summaries, so that a resend replaces its counts too (a post with
//! no summaries has no span: its counts are keyed by its arrival and a resend of it adds
//! them again). Both tables fall under `--keep-runs` (crate::retention), aged by their
//! buckets' ends.
//!
//! The reads are bounded: a job's symptom is judged over its newest [`MAX_ROWS_PER_JOB`]
//! summaries in the window, and the list holds the [`MAX_JOBS_LISTED`] jobs seen last. No
//! bucket is judged on some of its ranks: the oldest is dropped when the cap cut it, and
//! one that some ranks' hosts have not posted yet waits for them up to [`LATE_RANKS_S`].

use crate::api::{authorized_body, ApiError};
use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use deadpool_postgres::Pool;
use deadpool_postgres::Transaction;
use fleet_api::collectives::{CollectivesStored, CollectivesUpload, JobCollectives, JobEntry};
use fleet_api::tokens::Tokens;
use model::inspector::{RankSummary, Skipped, Symptom};
use model::job::CollectiveEvidence;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;

/// The tables (schema version 11). `start_s + width_s` (the bucket's end) is what the
/// window and retention age rows by, hence its index.
pub const MIGRATION: &str = "CREATE TABLE job_collectives (
        job TEXT NOT NULL,
        host TEXT NOT NULL,
        communicator TEXT NOT NULL,
        rank INTEGER NOT NULL,
        n_ranks INTEGER NOT NULL,
        n_nodes INTEGER NOT NULL,
        hostname TEXT NOT NULL,
        pid BIGINT,
        gpu INTEGER,
        collective TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        start_s DOUBLE PRECISION NOT NULL,
        width_s DOUBLE PRECISION NOT NULL,
        count BIGINT NOT NULL,
        first_seq BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        exec_us DOUBLE PRECISION NOT NULL,
        busbw_gbs DOUBLE PRECISION NOT NULL,
        received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        -- a resent summary replaces the stored one
        PRIMARY KEY (job, communicator, rank, collective, bytes, start_s)
    );
    -- a job's newest summaries
    CREATE INDEX job_collectives_job_start ON job_collectives (job, start_s DESC);
    -- the jobs of a window, and retention
    CREATE INDEX job_collectives_end ON job_collectives ((start_s + width_s));
    CREATE TABLE job_collective_reads (
        job TEXT NOT NULL,
        host TEXT NOT NULL,
        first_start_s DOUBLE PRECISION NOT NULL,
        last_end_s DOUBLE PRECISION NOT NULL,
        records BIGINT NOT NULL,
        unknown_records BIGINT NOT NULL,
        bad_records BIGINT NOT NULL,
        received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        -- a resent post's counts replace the stored ones
        PRIMARY KEY (job, host, first_start_s, last_end_s)
    );
    -- a job's counts in a window
    CREATE INDEX job_collective_reads_job_end ON job_collective_reads (job, last_end_s);
    -- retention
    CREATE INDEX job_collective_reads_end ON job_collective_reads (last_end_s);";

/// Schema 14: whether a post's records were written by a simulation, so that verdicts judged
/// with them say so.
pub const SIMULATED_MIGRATION: &str =
    "ALTER TABLE job_collective_reads ADD COLUMN simulated BOOLEAN NOT NULL DEFAULT false";

/// Summaries one post may carry: a 128-rank job's three kinds of collective over a minute
/// of 5 s buckets is 4,608; this is twice that, a post of about 3 MB, under the collector's
/// default body limit.
pub const MAX_SUMMARIES: usize = 10_000;
/// Jobs one post may carry: a host runs a few at a time.
pub const MAX_JOBS: usize = 64;
/// Summaries a job's symptom is judged over at most, the newest: the symptom needs a few
/// buckets of earlier level before the newest ones (analyze::collectives), and this is
/// 52 buckets of a 128-rank job's three collective kinds, four minutes at 5 s.
pub const MAX_ROWS_PER_JOB: i64 = 20_000;
/// Jobs `GET /api/jobs` lists at most, those seen last.
pub const MAX_JOBS_LISTED: i64 = 200;
/// The window `GET /api/jobs` reads without `since`.
const DEFAULT_WINDOW_S: f64 = 86_400.0;
/// How far back a job's collectives are read for a verdict (crate::slow_jobs and
/// `GET /api/jobs/verdict?job=`): the symptom's earlier level lies before the onset, which
/// the verdict's own window starts just before.
pub const SYMPTOM_LOOKBACK_S: f64 = 3600.0;

/// The routes, over the database, the hosts' tokens and the body limit; each stored post's
/// jobs are handed to `posted` (crate::slow_jobs judges them at once).
pub fn routes(pool: Pool, tokens: Arc<Tokens>, max_body: usize, posted: Arc<Posted>) -> Router {
    Router::new()
        .route(
            fleet_api::collectives::PATH,
            post(move |state, headers, body| {
                post_collectives(state, headers, body, max_body, posted.clone())
            }),
        )
        .route(fleet_api::collectives::JOBS_PATH, get(list_jobs))
        .route("/api/jobs/{job}/symptom", get(job_symptom))
        .with_state((pool, tokens))
}

/// `POST /api/collectives`: the token's host, the contract, then every job's rows in one
/// transaction.
async fn post_collectives(
    State((pool, tokens)): State<(Pool, Arc<Tokens>)>,
    headers: HeaderMap,
    body: Body,
    max_body: usize,
    posted: Arc<Posted>,
) -> Result<Response, ApiError> {
    let (body, token_host) = authorized_body(&tokens, &headers, body, max_body).await?;
    let upload: CollectivesUpload =
        serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if upload.host != token_host {
        return Err(ApiError::WrongHost {
            token_host,
            host: upload.host,
        });
    }
    check(&upload).map_err(|why| ApiError::BadRequest(why.to_string()))?;
    let mut client = pool.get().await?;
    let now_s = model::time::unix_ms(SystemTime::now()) as f64 / 1e3;
    let (new, replaced) = store(&mut client, &upload, now_s)
        .await
        .map_err(|e| database_error(&e))?;
    posted.mark(upload.jobs.iter().filter_map(|j| j.job.clone()));
    let status = if new == 0 && replaced > 0 {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let stored = CollectivesStored {
        host: upload.host,
        jobs: upload.jobs.len() as u64,
        new,
        replaced,
    };
    Ok((status, Json(stored)).into_response())
}

/// A failed transaction by the server's SQLSTATE, as the run writer tells them: refused for
/// what it holds (22, 23, 54: a NUL in a name) is 422, not sent again; else 503.
fn database_error(e: &tokio_postgres::Error) -> ApiError {
    let words = crate::server_words(e);
    match e.code().and_then(|c| c.code().get(..2)) {
        Some("22" | "23" | "54") => ApiError::Refused(words),
        _ => ApiError::Database(words),
    }
}

/// Why posted collectives are outside the contract: the field, then why (`summaries[3].count:
/// 0 (...)`), the words of a 400.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct OutsideContract(String);

impl OutsideContract {
    /// The same, of the field `field` holds (`jobs[0]`, `body`).
    pub(crate) fn under(self, field: &str) -> OutsideContract {
        OutsideContract(format!("{field}.{}", self.0))
    }
}

/// Why `upload` is outside the contract, naming the job, summary and field.
fn check(upload: &CollectivesUpload) -> Result<(), OutsideContract> {
    if upload.jobs.len() > MAX_JOBS {
        return Err(OutsideContract(format!(
            "jobs: {} is more than {MAX_JOBS}",
            upload.jobs.len()
        )));
    }
    let total: usize = upload.jobs.iter().map(|j| j.summaries.len()).sum();
    if total > MAX_SUMMARIES {
        return Err(OutsideContract(format!(
            "summaries: {total} is more than {MAX_SUMMARIES} in one post"
        )));
    }
    let mut jobs = HashSet::new();
    for (i, job) in upload.jobs.iter().enumerate() {
        if !jobs.insert(&job.job) {
            return Err(OutsideContract(format!(
                "jobs[{i}].job: {:?} is given twice",
                job.job
            )));
        }
        check_job(job).map_err(|why| why.under(&format!("jobs[{i}]")))?;
    }
    Ok(())
}

/// Why one job's collectives are outside the contract, naming the field: those of an upload
/// ([`check`]) or those a verdict's caller posted (crate::job), at most [`MAX_SUMMARIES`].
pub(crate) fn check_job(job: &JobCollectives) -> Result<(), OutsideContract> {
    let outside = |why: String| Err(OutsideContract(why));
    if job.summaries.len() > MAX_SUMMARIES {
        return outside(format!(
            "summaries: {} is more than {MAX_SUMMARIES}",
            job.summaries.len()
        ));
    }
    if job.job.as_deref() == Some("") {
        return outside("job: empty (null when unknown)".into());
    }
    let mut keys = HashSet::new();
    for (k, s) in job.summaries.iter().enumerate() {
        if let Err(why) = check_summary(s) {
            return outside(format!("summaries[{k}].{why}"));
        }
        let key = (
            &s.communicator,
            s.rank,
            &s.collective,
            s.bytes,
            s.start_s.to_bits(),
        );
        if !keys.insert(key) {
            return outside(format!(
                "summaries[{k}]: communicator, rank, collective, bytes and start_s are those \
                 of an earlier summary"
            ));
        }
    }
    Ok(())
}

/// Why one summary is outside the contract: the field, then why.
fn check_summary(s: &RankSummary) -> Result<(), String> {
    for (field, text) in [
        ("communicator", &s.communicator),
        ("hostname", &s.hostname),
        ("collective", &s.collective),
    ] {
        if text.is_empty() {
            return Err(format!("{field}: empty"));
        }
    }
    for (field, x) in [
        ("start_s", s.start_s),
        ("exec_us", s.exec_us),
        ("busbw_gbs", s.busbw_gbs),
    ] {
        if !(x.is_finite() && x >= 0.0) {
            return Err(format!("{field}: {x} is not a finite number >= 0"));
        }
    }
    if !(s.width_s.is_finite() && s.width_s > 0.0) {
        return Err(format!("width_s: {} is not a positive width", s.width_s));
    }
    if s.count == 0 {
        return Err("count: 0 (a summary is of at least one collective)".into());
    }
    if s.first_seq > s.last_seq {
        return Err(format!(
            "first_seq: {} is after last_seq {}",
            s.first_seq, s.last_seq
        ));
    }
    if s.n_ranks == 0 || s.rank >= s.n_ranks {
        return Err(format!("rank: {} of n_ranks {}", s.rank, s.n_ranks));
    }
    // The columns are PostgreSQL's signed integers.
    for (field, n) in [
        ("n_ranks", u64::from(s.n_ranks)),
        ("n_nodes", u64::from(s.n_nodes)),
        ("gpu", s.gpu.map_or(0, u64::from)),
    ] {
        if n > i32::MAX as u64 {
            return Err(format!("{field}: {n} is out of range"));
        }
    }
    for (field, n) in [
        ("bytes", s.bytes),
        ("count", s.count),
        ("last_seq", s.last_seq),
        ("pid", s.pid.unwrap_or(0)),
    ] {
        if n > i64::MAX as u64 {
            return Err(format!("{field}: {n} is out of range"));
        }
    }
    Ok(())
}

/// The jobs whose collectives were posted since the slow-job watch last read them, and its
/// wake-up (crate::slow_jobs): a post is judged at once rather than at the next listing
/// (issue 39 item 7: the verdict within 30 s of the onset), and only the jobs posted are
/// read again.
#[derive(Debug, Default)]
pub struct Posted {
    jobs: std::sync::Mutex<BTreeSet<String>>,
    wake: tokio::sync::Notify,
}

impl Posted {
    /// Marks `jobs` as posted and wakes the watch.
    pub(crate) fn mark(&self, jobs: impl IntoIterator<Item = String>) {
        // A poisoned lock only means a panic elsewhere mid-insert: the set is still a set.
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(jobs);
        self.wake.notify_one();
    }

    /// Until a job is marked (at once when one was since the last wait).
    pub(crate) async fn wait(&self) {
        self.wake.notified().await
    }

    /// The jobs marked since the last call.
    pub(crate) fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.jobs.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Stores a checked upload in one transaction: (new, replaced) summaries. Agents' posts
/// and what crate::prometheus read.
pub(crate) async fn store(
    client: &mut deadpool_postgres::Client,
    upload: &CollectivesUpload,
    now_s: f64,
) -> Result<(u64, u64), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let (mut new, mut replaced) = (0, 0);
    for job in &upload.jobs {
        let (n, r) = store_summaries(&tx, &upload.host, job).await?;
        new += n;
        replaced += r;
        store_reads(&tx, &upload.host, job, now_s).await?;
    }
    tx.commit().await?;
    Ok((new, replaced))
}

/// One job's summaries, in one statement: (new, replaced).
async fn store_summaries(
    tx: &Transaction<'_>,
    host: &str,
    job: &JobCollectives,
) -> Result<(u64, u64), tokio_postgres::Error> {
    if job.summaries.is_empty() {
        return Ok((0, 0));
    }
    let s = &job.summaries;
    // Checked to fit (check_summary).
    let int = |n: u32| n as i32;
    let big = |n: u64| n as i64;
    let texts = |f: fn(&RankSummary) -> &str| s.iter().map(f).collect::<Vec<_>>();
    let floats = |f: fn(&RankSummary) -> f64| s.iter().map(f).collect::<Vec<_>>();
    let rows = tx
        .query(
            "INSERT INTO job_collectives (job, host, communicator, rank, n_ranks, n_nodes,
                 hostname, pid, gpu, collective, bytes, start_s, width_s, count, first_seq,
                 last_seq, exec_us, busbw_gbs)
             SELECT $1, $2, * FROM unnest($3::text[], $4::int4[], $5::int4[], $6::int4[],
                 $7::text[], $8::int8[], $9::int4[], $10::text[], $11::int8[], $12::float8[],
                 $13::float8[], $14::int8[], $15::int8[], $16::int8[], $17::float8[],
                 $18::float8[])
             ON CONFLICT (job, communicator, rank, collective, bytes, start_s) DO UPDATE SET
                 host = excluded.host, n_ranks = excluded.n_ranks,
                 n_nodes = excluded.n_nodes, hostname = excluded.hostname,
                 pid = excluded.pid, gpu = excluded.gpu, width_s = excluded.width_s,
                 count = excluded.count, first_seq = excluded.first_seq,
                 last_seq = excluded.last_seq, exec_us = excluded.exec_us,
                 busbw_gbs = excluded.busbw_gbs, received_at = now()
             RETURNING (xmax = 0)",
            &[
                &job.job.as_deref().unwrap_or(""),
                &host,
                &texts(|s| &s.communicator),
                &s.iter().map(|s| int(s.rank)).collect::<Vec<_>>(),
                &s.iter().map(|s| int(s.n_ranks)).collect::<Vec<_>>(),
                &s.iter().map(|s| int(s.n_nodes)).collect::<Vec<_>>(),
                &texts(|s| &s.hostname),
                &s.iter().map(|s| s.pid.map(big)).collect::<Vec<_>>(),
                &s.iter().map(|s| s.gpu.map(int)).collect::<Vec<_>>(),
                &texts(|s| &s.collective),
                &s.iter().map(|s| big(s.bytes)).collect::<Vec<_>>(),
                &floats(|s| s.start_s),
                &floats(|s| s.width_s),
                &s.iter().map(|s| big(s.count)).collect::<Vec<_>>(),
                &s.iter().map(|s| big(s.first_seq)).collect::<Vec<_>>(),
                &s.iter().map(|s| big(s.last_seq)).collect::<Vec<_>>(),
                &floats(|s| s.exec_us),
                &floats(|s| s.busbw_gbs),
            ],
        )
        .await?;
    // `xmax = 0`: the row was inserted, not updated.
    let new = rows.iter().filter(|r| r.get::<_, bool>(0)).count() as u64;
    Ok((new, rows.len() as u64 - new))
}

/// One job's records and skipped counts, keyed by the span of its summaries (by `now_s`
/// when it has none).
async fn store_reads(
    tx: &Transaction<'_>,
    host: &str,
    job: &JobCollectives,
    now_s: f64,
) -> Result<(), tokio_postgres::Error> {
    let first = job.summaries.iter().map(|s| s.start_s).reduce(f64::min);
    let last = job
        .summaries
        .iter()
        .map(|s| s.start_s + s.width_s)
        .reduce(f64::max);
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO job_collective_reads (job, host, first_start_s, last_end_s, records,
             unknown_records, bad_records, simulated)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (job, host, first_start_s, last_end_s) DO UPDATE SET
             records = excluded.records, unknown_records = excluded.unknown_records,
             bad_records = excluded.bad_records, simulated = excluded.simulated,
             received_at = now()",
        &[
            &job.job.as_deref().unwrap_or(""),
            &host,
            &first.unwrap_or(now_s),
            &last.unwrap_or(now_s),
            &count(job.records),
            &count(job.skipped.unknown_records),
            &count(job.skipped.bad_records),
            &job.simulated,
        ],
    )
    .await?;
    Ok(())
}

/// The query string of the jobs' reads (here and crate::job_series).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct WindowParams {
    since: Option<String>,
}

impl WindowParams {
    /// The window's start, Unix seconds: `since`, else a day before now.
    pub(crate) fn since(&self) -> Result<f64, ApiError> {
        match &self.since {
            None => Ok(model::time::unix_ms(SystemTime::now()) as f64 / 1e3 - DEFAULT_WINDOW_S),
            Some(t) => t
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite())
                .ok_or_else(|| ApiError::BadRequest(format!("since: `{t}` is not Unix seconds"))),
        }
    }
}

/// `GET /api/jobs?since=T`.
async fn list_jobs(
    State((pool, _)): State<(Pool, Arc<Tokens>)>,
    Query(params): Query<WindowParams>,
) -> Result<Json<Vec<JobEntry>>, ApiError> {
    let since = params.since()?;
    let client = pool.get().await?;
    let jobs = running_jobs(&client, since).await?;
    let verdicts = crate::verdicts::newest_verdicts(&client, &jobs).await?;
    let mut entries = Vec::with_capacity(jobs.len());
    for job in jobs {
        if let Some(read) = read_job(&client, &job, since).await? {
            let verdict = verdicts.get(&job).cloned();
            entries.push(entry(job, &read, verdict));
        }
    }
    entries.sort_by(|a, b| {
        b.slow
            .cmp(&a.slow)
            .then(b.last_seen.total_cmp(&a.last_seen))
            .then_with(|| a.job.cmp(&b.job))
    });
    Ok(Json(entries))
}

/// The named jobs with summaries ending at or after `since` (Unix seconds), the
/// [`MAX_JOBS_LISTED`] seen last, newest first.
pub(crate) async fn running_jobs(
    client: &tokio_postgres::Client,
    since: f64,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT job FROM job_collectives
             WHERE job <> '' AND start_s + width_s >= $1
             GROUP BY job ORDER BY max(start_s + width_s) DESC, job LIMIT $2",
            &[&since, &MAX_JOBS_LISTED],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// `GET /api/jobs/{job}/symptom?since=T`.
async fn job_symptom(
    State((pool, _)): State<(Pool, Arc<Tokens>)>,
    UrlPath(job): UrlPath<String>,
    Query(params): Query<WindowParams>,
) -> Result<Json<Symptom>, ApiError> {
    let since = params.since()?;
    let client = pool.get().await?;
    match read_job(&client, &job, since).await? {
        Some(read) => Ok(Json(read.symptom)),
        None => Err(ApiError::NotFound(format!(
            "job {job}: no collectives since {since}"
        ))),
    }
}

/// A job as read from the store, judged.
pub(crate) struct JobRead {
    /// What was read.
    pub evidence: CollectiveEvidence,
    /// Its symptom.
    pub symptom: Symptom,
    /// The ranks' hosts, in name order.
    pub nodes: Vec<String>,
    /// The newest bucket's end, Unix seconds.
    pub last_seen: f64,
}

/// The job's newest summaries whose buckets end at or after `since`: at most
/// [`MAX_ROWS_PER_JOB`] read, newest first, the oldest bucket dropped when the read hit the
/// cap ([`drop_cut_bucket`]); and whether it did. The one read of a job's summaries, for its
/// symptom and its series (crate::job_series).
pub(crate) async fn newest_summaries(
    client: &tokio_postgres::Client,
    job: &str,
    since: f64,
) -> Result<(Vec<RankSummary>, bool), tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT communicator, rank, n_ranks, n_nodes, hostname, pid, gpu, collective,
                 bytes, start_s, width_s, count, first_seq, last_seq, exec_us, busbw_gbs
             FROM job_collectives WHERE job = $1 AND start_s + width_s >= $2
             ORDER BY start_s DESC LIMIT $3",
            &[&job, &since, &MAX_ROWS_PER_JOB],
        )
        .await?;
    let mut summaries: Vec<RankSummary> = rows
        .iter()
        .map(|r| RankSummary {
            communicator: r.get(0),
            rank: r.get::<_, i32>(1) as u32,
            n_ranks: r.get::<_, i32>(2) as u32,
            n_nodes: r.get::<_, i32>(3) as u32,
            hostname: r.get(4),
            pid: r.get::<_, Option<i64>>(5).map(|p| p as u64),
            gpu: r.get::<_, Option<i32>>(6).map(|g| g as u32),
            collective: r.get(7),
            bytes: r.get::<_, i64>(8) as u64,
            start_s: r.get(9),
            width_s: r.get(10),
            count: r.get::<_, i64>(11) as u64,
            first_seq: r.get::<_, i64>(12) as u64,
            last_seq: r.get::<_, i64>(13) as u64,
            exec_us: r.get(14),
            busbw_gbs: r.get(15),
        })
        .collect();
    let capped = summaries.len() as i64 == MAX_ROWS_PER_JOB;
    if capped {
        drop_cut_bucket(&mut summaries);
    }
    let now_s = model::time::unix_ms(SystemTime::now()) as f64 / 1e3;
    drop_unfinished_buckets(&mut summaries, now_s);
    Ok((summaries, capped))
}

/// How long after its end a bucket may still lack some ranks' summaries: each host's agent
/// posts a closed bucket at its next poll (agent::nccl: a width and up to 5 s after its
/// end), so every rank's has arrived within seconds; past this, a rank still missing is one
/// whose agent does not post, and the bucket is read without it.
pub const LATE_RANKS_S: f64 = 30.0;

/// Drops the buckets that some ranks of their communicator have not posted yet and that
/// ended less than [`LATE_RANKS_S`] before `now_s`. Judged on the ranks of the hosts that
/// posted first, they would show stragglers, or a drop or a rise, that are not there (a
/// straggler's waiting peers alone read as a slow communicator without one).
fn drop_unfinished_buckets(summaries: &mut Vec<RankSummary>, now_s: f64) {
    let key = |s: &RankSummary| {
        (
            s.communicator.clone(),
            s.collective.clone(),
            s.bytes,
            s.start_s.to_bits(),
        )
    };
    let mut ranks: HashMap<_, usize> = HashMap::new();
    for s in summaries.iter() {
        *ranks.entry(key(s)).or_default() += 1;
    }
    summaries.retain(|s| {
        s.start_s + s.width_s <= now_s - LATE_RANKS_S || ranks[&key(s)] >= s.n_ranks as usize
    });
}

/// Drops the oldest bucket of a read the cap may have cut: judged or drawn on some of its
/// ranks it would show stragglers, or a drop or a rise, that are not there.
fn drop_cut_bucket(summaries: &mut Vec<RankSummary>) {
    let oldest = summaries.iter().map(|s| s.start_s).reduce(f64::min);
    summaries.retain(|s| Some(s.start_s) != oldest);
}

/// The job's newest summaries in the window (at most [`MAX_ROWS_PER_JOB`]), its counts, and
/// its symptom; `None` without a summary (the unnamed job `''` included).
pub(crate) async fn read_job(
    client: &tokio_postgres::Client,
    job: &str,
    since: f64,
) -> Result<Option<JobRead>, tokio_postgres::Error> {
    if job.is_empty() {
        return Ok(None);
    }
    let (summaries, _) = newest_summaries(client, job, since).await?;
    let Some(last_seen) = summaries
        .iter()
        .map(|s| s.start_s + s.width_s)
        .reduce(f64::max)
    else {
        return Ok(None);
    };
    let counts = client
        .query_one(
            "SELECT coalesce(sum(records), 0)::int8, coalesce(sum(unknown_records), 0)::int8,
                 coalesce(sum(bad_records), 0)::int8, coalesce(bool_or(simulated), false)
             FROM job_collective_reads WHERE job = $1 AND last_end_s >= $2",
            &[&job, &since],
        )
        .await?;
    let nodes: Vec<String> = summaries
        .iter()
        .map(|s| s.hostname.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let expected_busbw_gbs = crate::job::hosts::expected_busbw(client, &nodes).await?;
    let evidence = CollectiveEvidence {
        records: counts.get::<_, i64>(0) as u64,
        summaries,
        skipped: Skipped {
            unknown_records: counts.get::<_, i64>(1) as u64,
            bad_records: counts.get::<_, i64>(2) as u64,
        },
        expected_busbw_gbs,
        simulated: counts.get(3),
    };
    Ok(Some(JobRead {
        symptom: analyze::collectives::symptom(&evidence),
        evidence,
        nodes,
        last_seen,
    }))
}

/// The list's entry of a job read, with the newest verdict the collector reached on it
/// (crate::slow_jobs): the verdict and when, Unix seconds.
fn entry(job: String, read: &JobRead, verdict: Option<(String, f64)>) -> JobEntry {
    let s = &read.symptom;
    JobEntry {
        job,
        nodes: read.nodes.clone(),
        slow: s.slow,
        since: s.since,
        busbw_gbs: if s.slow {
            s.busbw_gbs.during
        } else {
            s.busbw_gbs.before
        },
        expected_gbs: s.busbw_gbs.expected,
        verdict_at: verdict.as_ref().map(|v| v.1),
        verdict: verdict.map(|v| v.0),
        last_seen: read.last_seen,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One rank's bucket of a 4-rank one-host all-reduce (also job_series's tests').
    pub(crate) fn summary(start_s: f64) -> RankSummary {
        RankSummary {
            communicator: "0xa".into(),
            rank: 0,
            n_ranks: 4,
            n_nodes: 1,
            hostname: "node001".into(),
            pid: None,
            gpu: None,
            collective: "AllReduce".into(),
            bytes: 1 << 20,
            start_s,
            width_s: 5.0,
            count: 1,
            first_seq: 0,
            last_seq: 0,
            exec_us: 1.0,
            busbw_gbs: 1.0,
        }
    }

    #[test]
    fn a_bucket_some_ranks_have_not_posted_waits_for_them_a_while() {
        let of = |rank: u32, start_s: f64| RankSummary {
            rank,
            n_ranks: 2,
            ..summary(start_s)
        };
        let now = 100.0;
        // Bucket 60 has one rank of two but ended 35 s ago: read without the other. Bucket
        // 80 is whole. Bucket 90 lacks rank 1 and ended 5 s ago: not read yet.
        let mut read = vec![of(0, 90.0), of(1, 80.0), of(0, 80.0), of(0, 60.0)];
        drop_unfinished_buckets(&mut read, now);
        let kept: Vec<(u32, f64)> = read.iter().map(|s| (s.rank, s.start_s)).collect();
        assert_eq!(kept, [(1, 80.0), (0, 80.0), (0, 60.0)]);
    }

    #[test]
    fn a_capped_read_drops_its_oldest_bucket() {
        let mut read = vec![summary(5.0), summary(5.0), summary(0.0)];
        drop_cut_bucket(&mut read);
        assert_eq!(
            read.iter().map(|s| s.start_s).collect::<Vec<_>>(),
            [5.0, 5.0]
        );
    }
}
