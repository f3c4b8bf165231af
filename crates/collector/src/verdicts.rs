//! The verdicts the collector reached by itself on jobs that slowed (crate::slow_jobs), one
//! row a judged slowdown in `job_verdicts`: stored, read back for the watch and the jobs
//! list (crate::collectives), and served.
//!
//! | path | what |
//! |---|---|
//! | `GET /api/jobs/{job}/verdict` | the newest verdict the collector reached on the job by itself ([`StoredVerdict`]); 404 naming the job when it has none |

use crate::api::ApiError;
use axum::extract::{Path as UrlPath, State};
use axum::routing::get;
use axum::{Json, Router};
use deadpool_postgres::Pool;
use model::job::JobReport;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tokio_postgres::Client;

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
    client: &Client,
    jobs: &[String],
) -> Result<HashMap<String, (String, f64)>, tokio_postgres::Error> {
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

/// A value's JSON word (`"network"`), as the contract spells it.
pub(crate) fn word<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Each job's newest stored verdict: (its onset, its report).
pub(crate) async fn stored_onsets(
    client: &Client,
    jobs: &[String],
) -> Result<HashMap<String, (f64, JobReport)>, tokio_postgres::Error> {
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

/// Stores `report`, the verdict on `job`'s slowdown from `onset_s` (reached with probes when
/// `probed`), replacing one stored for the same onset.
pub(crate) async fn store(
    client: &Client,
    job: &str,
    onset_s: f64,
    probed: bool,
    report: &JobReport,
) -> Result<(), tokio_postgres::Error> {
    // Plain data: it always serialises.
    let text = serde_json::to_string(report).unwrap_or_default();
    client
        .execute(
            "INSERT INTO job_verdicts (job, onset_s, verdict, probed, report)
             VALUES ($1, $2, $3, $4, $5::text::jsonb)
             ON CONFLICT (job, onset_s) DO UPDATE SET judged_at = now(),
                 verdict = excluded.verdict, probed = excluded.probed,
                 report = excluded.report",
            &[&job, &onset_s, &word(&report.verdict), &probed, &text],
        )
        .await?;
    Ok(())
}
