//! One pushed run: checked against the contract (DESIGN 4.3 inside the 4.5 envelope), then
//! stored in one transaction (the run, its paths, links and diagnoses, or nothing).

use model::Report;
use serde::{Deserialize, Serialize};
use tokio_postgres::Client;

/// The body of `POST /api/runs`: the agent's run, with the 4.3 report inside.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunUpload {
    /// The host's name in the fleet (the token must belong to it).
    pub host: String,
    /// The agent's run id (its SQLite `runs.id`): with `host` and `instance`, what makes a
    /// resend a no-op.
    pub id: i64,
    /// The agent database's instance id (store schema v5), made once per database: the
    /// runs of a wiped database, numbered from 1 again, are new runs. Empty when the agent
    /// sends none (older agents).
    #[serde(default)]
    pub instance: String,
    /// The rack the host stands in, when the agent was told (`--rack`).
    #[serde(default)]
    pub rack: Option<String>,
    /// What started the run: `idle`, `pfc`, `drops`, `manual`, ...
    pub trigger: String,
    /// Wall clock at the start of the run, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// The report (DESIGN 4.3); its `host` is the host's kind (model name).
    pub report: serde_json::Value,
}

/// A body outside the contract, in words that name the field.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// Not JSON, or a field of the wrong type or missing.
    #[error("{0}")]
    Json(String),
    /// A field that parses but cannot be right.
    #[error("{field}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
}

/// Parses and checks a body; the report is returned typed for the tables.
pub fn parse(body: &[u8]) -> Result<(RunUpload, Report), ContractError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let upload: RunUpload = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| ContractError::Json(format!("{}: {}", e.path(), e.inner())))?;
    de.end()
        .map_err(|e| ContractError::Json(format!("after the run: {e}")))?;
    let report: Report = serde_path_to_error::deserialize(&upload.report)
        .map_err(|e| ContractError::Json(format!("report.{}: {}", e.path(), e.inner())))?;
    let field = |field, reason| Err(ContractError::Field { field, reason });
    if upload.host.is_empty() || upload.host.len() > 253 {
        return field("host", "must be 1 to 253 characters");
    }
    if upload.instance.len() > 64 {
        return field("instance", "must be at most 64 characters");
    }
    if upload
        .rack
        .as_ref()
        .is_some_and(|r| r.is_empty() || r.len() > 253)
    {
        return field("rack", "must be 1 to 253 characters, or null");
    }
    if upload.trigger.is_empty() {
        return field("trigger", "must not be empty");
    }
    if upload.started_unix_ms < 0 {
        return field("started_unix_ms", "must not be negative");
    }
    if report.host.is_empty() {
        return field("report.host", "must name the host's kind");
    }
    Ok((upload, report))
}

/// What happened to a pushed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored now, under this collector id.
    New(i64),
    /// Stored before (a resend), under this collector id.
    Duplicate(i64),
}

/// The serde name of an enum value (`normal`, `gpu_pcie`, ...).
fn label<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Stores a run in one transaction; returns after the commit.
pub async fn store(
    client: &mut Client,
    upload: &RunUpload,
    report: &Report,
) -> Result<Stored, tokio_postgres::Error> {
    let kind = report.host.as_str();
    let kind_known = model::builtin::names().any(|n| n == kind);
    let tx = client.transaction().await?;
    let host_id: i64 = tx
        .query_one(
            "INSERT INTO hosts (name, kind, kind_known) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, kind_known = EXCLUDED.kind_known
             RETURNING id",
            &[&upload.host, &kind, &kind_known],
        )
        .await?
        .get(0);
    let inserted = tx
        .query_opt(
            "INSERT INTO runs (host_id, agent_run_id, trigger, started_unix_ms, kind, kind_known,
                               healthy, mode, report, instance)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (host_id, instance, agent_run_id) DO NOTHING
             RETURNING id",
            &[
                &host_id,
                &upload.id,
                &upload.trigger,
                &upload.started_unix_ms,
                &kind,
                &kind_known,
                &report.healthy,
                &label(&report.mode),
                &upload.report,
                &upload.instance,
            ],
        )
        .await?;
    let Some(row) = inserted else {
        // A resend: the first copy stays, and the host row is left as it was.
        let id = tx
            .query_one(
                "SELECT id FROM runs
                 WHERE host_id = $1 AND instance = $2 AND agent_run_id = $3",
                &[&host_id, &upload.instance, &upload.id],
            )
            .await?
            .get(0);
        tx.rollback().await?;
        return Ok(Stored::Duplicate(id));
    };
    let run_id: i64 = row.get(0);
    let p = &report.paths;
    let rnics: Vec<String> = p.iter().map(|x| x.rnic.to_string()).collect();
    let endpoints: Vec<String> = p.iter().map(|x| x.endpoint.to_string()).collect();
    let latency: Vec<Option<f64>> = p.iter().map(|x| x.latency_us).collect();
    let bandwidth: Vec<Option<f64>> = p.iter().map(|x| x.bandwidth_gbps).collect();
    let status: Vec<String> = p.iter().map(|x| label(&x.status)).collect();
    tx.execute(
        "INSERT INTO run_paths (run_id, host_id, started_unix_ms, agent_run_id, rnic, endpoint,
                                latency_us, bandwidth_gbps, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &run_id,
            &host_id,
            &upload.started_unix_ms,
            &upload.id,
            &rnics,
            &endpoints,
            &latency,
            &bandwidth,
            &status,
        ],
    )
    .await?;
    let l = &report.links;
    let ids: Vec<String> = l.iter().map(|x| x.id.to_string()).collect();
    let kinds: Vec<String> = l.iter().map(|x| label(&x.kind)).collect();
    let status: Vec<String> = l.iter().map(|x| label(&x.status)).collect();
    let counts: Vec<i32> = l
        .iter()
        .map(|x| i32::try_from(x.abnormal_cnt).unwrap_or(i32::MAX))
        .collect();
    tx.execute(
        "INSERT INTO run_links (run_id, link, kind, status, abnormal_cnt)
         VALUES ($1, $2, $3, $4, $5)",
        &[&run_id, &ids, &kinds, &status, &counts],
    )
    .await?;
    for d in &report.diagnoses {
        let links: Vec<String> = d.links.iter().map(ToString::to_string).collect();
        tx.execute(
            "INSERT INTO diagnoses (run_id, host_id, cause, links, rnic, evidence)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &run_id,
                &host_id,
                &label(&d.cause),
                &links,
                &d.rnic.as_ref().map(ToString::to_string),
                &d.evidence,
            ],
        )
        .await?;
    }
    let contributed =
        super::baseline::record(&tx, host_id, &super::baseline::samples(report)).await?;
    update_host_summary(&tx, host_id, run_id, upload, report, contributed).await?;
    tx.commit().await?;
    Ok(Stored::New(run_id))
}

/// Counts the run on its host row and, when it is the host's latest by start time (ties: the
/// later stored), makes it the row's latest run: id, start, health, causes, and rack (the
/// latest run's rack wins). When the run added path values for the fleet baselines, the
/// row's `paths_version` moves, which tells the next refresh to look at the host's kind. The row is locked since the upsert at the start of the
/// transaction, so concurrent runs of one host take turns here.
async fn update_host_summary(
    tx: &tokio_postgres::Transaction<'_>,
    host_id: i64,
    run_id: i64,
    upload: &RunUpload,
    report: &Report,
    new_path_values: bool,
) -> Result<(), tokio_postgres::Error> {
    let mut causes: Vec<String> = report.diagnoses.iter().map(|d| label(&d.cause)).collect();
    causes.sort();
    causes.dedup();
    tx.execute(
        "UPDATE hosts SET runs = runs + 1,
             latest_run_id = CASE WHEN n.latest THEN $2 ELSE latest_run_id END,
             latest_started_unix_ms = CASE WHEN n.latest THEN $3 ELSE latest_started_unix_ms END,
             latest_healthy = CASE WHEN n.latest THEN $4 ELSE latest_healthy END,
             latest_causes = CASE WHEN n.latest THEN $5 ELSE latest_causes END,
             rack = CASE WHEN n.latest THEN $6 ELSE rack END,
             paths_version = paths_version + $7,
             last_received_unix_ms = (extract(epoch FROM clock_timestamp()) * 1000)::int8
         FROM (SELECT latest_run_id IS NULL
                      OR ($3::int8, $2::int8) > (latest_started_unix_ms, latest_run_id) AS latest
               FROM hosts WHERE id = $1) n
         WHERE hosts.id = $1",
        &[
            &host_id,
            &run_id,
            &upload.started_unix_ms,
            &report.healthy,
            &causes,
            &upload.rack,
            &i64::from(new_path_values),
        ],
    )
    .await?;
    Ok(())
}
